"""Write the OpenAPI document the SDKs are generated from: `python -m rollout_server.openapi PATH`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def openapi_document() -> dict[str, Any]:
    from .app import create_app
    from .config import Settings

    return create_app(Settings(demo=False)).openapi()


def render() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=False) + "\n"


def main() -> None:
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/openapi.json")
    target.write_text(render())
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

"""Where settings come from: explicit arguments, then ROLLOUT_* environment, then the CLI's login file."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def config_file_path() -> Path:
    """The file `rollout login` writes (mode 0600): $ROLLOUT_CONFIG_FILE or ~/.config/rollout/config.json."""
    explicit = os.environ.get("ROLLOUT_CONFIG_FILE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rollout" / "config.json"


def read_config_file() -> dict[str, Any]:
    try:
        data = json.loads(config_file_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_config_file(data: dict[str, Any]) -> Path:
    """Write the login file with owner-only permissions from the first byte (no world-readable window)."""
    path = config_file_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def cache_root() -> Path:
    explicit = os.environ.get("ROLLOUT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rollout"


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default


@dataclass
class Settings:
    """Everything a client needs; see docs/sdk-python.md for each option."""

    base_url: str
    api_key: str | None
    timeout: float = 30.0
    max_retries: int = 4
    max_connections: int = 16
    # Background delivery.
    spool_dir: Path | None = None
    max_queue_size: int = 100_000
    batch_max_events: int = 1000
    batch_max_bytes: int = 3_500_000
    flush_interval: float = 0.2
    retry_window: float = 5.0
    max_backoff: float = 10.0
    atexit_timeout: float = 10.0
    files_cache_dir: Path | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def server_key(self) -> str:
        """Spool sub-folder: data is only ever re-sent to the server and key that accepted the rollout."""
        raw = f"{self.base_url}|{self.api_key or ''}".encode()
        return hashlib.sha256(raw).hexdigest()[:16]

    @property
    def resolved_spool_dir(self) -> Path:
        root = self.spool_dir or Path(os.environ.get("ROLLOUT_SPOOL_DIR") or cache_root() / "spool")
        return Path(root).expanduser() / self.server_key

    @property
    def resolved_files_cache_dir(self) -> Path:
        if self.files_cache_dir:
            return Path(self.files_cache_dir).expanduser()
        return Path(os.environ.get("ROLLOUT_FILES_CACHE_DIR") or cache_root() / "files").expanduser()


def resolve_settings(base_url: str | None = None, api_key: str | None = None, **options: Any) -> Settings:
    file_config: dict[str, Any] | None = None

    def from_file(name: str) -> Any:
        nonlocal file_config
        if file_config is None:
            file_config = read_config_file()
        return file_config.get(name)

    url = base_url or os.environ.get("ROLLOUT_BASE_URL") or from_file("base_url") or DEFAULT_BASE_URL
    key = api_key or os.environ.get("ROLLOUT_API_KEY") or from_file("api_key")
    spool = options.pop("spool_dir", None)
    files_cache = options.pop("files_cache_dir", None)
    settings = Settings(
        base_url=str(url).rstrip("/"),
        api_key=key,
        spool_dir=Path(spool) if spool else None,
        files_cache_dir=Path(files_cache) if files_cache else None,
        timeout=_env_float("ROLLOUT_TIMEOUT", 30.0),
    )
    for name, value in options.items():
        if not hasattr(settings, name):
            raise TypeError(f"unknown option {name!r} for rollout.Client / rollout.configure")
        if value is not None:
            setattr(settings, name, value)
    return settings

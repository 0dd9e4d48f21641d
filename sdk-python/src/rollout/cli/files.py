"""`rollout files ...`: files of the workspace (from its connected bucket)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .common import JsonOption, State, command, console, print_json

app = typer.Typer(help="Files: uploaded or taken from the workspace's connected bucket.", no_args_is_help=True)


@app.command("add-from-bucket")
@command
def add_from_bucket(
    key: Annotated[str, typer.Argument(help="Object key in the workspace's connected bucket.")],
    name: Annotated[str | None, typer.Option("--name", help="File name (default: the key's last part).")] = None,
    import_: Annotated[
        bool, typer.Option("--import", help="Copy the bytes into the store (default: reference the object in place).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Add a file from the connected bucket (Settings → Storage); prints its id for use in tasks."""
    body: dict[str, Any] = {"key": key, "mode": "import" if import_ else "reference"}
    if name is not None:
        body["name"] = name
    file = State.client()._t.request("POST", "/files/from-bucket", json=body)
    if as_json:
        print_json(file)
        return
    how = "Imported" if import_ else "Referenced"
    console.print(
        f"{how} [bold]{file['name']}[/] as {file['id']} ({file['size']:,} bytes, sha256 {file['sha256'][:12]}…)."
    )

"""The `rollout` command: login, whoami, keys, datasets, runs, rollouts, tail, scoring, export and import."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.table import Table

from .._client import Client
from .._config import DEFAULT_BASE_URL, config_file_path, read_config_file, write_config_file
from .._version import __version__
from . import datasets, files, runs, scoring, transfer
from .common import AUTH, JsonOption, State, command, console, fail, print_json, when

app = typer.Typer(
    name="rollout",
    help="Talk to a Rollout server: datasets, runs, rollouts, scoring, exports and API keys.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
keys_app = typer.Typer(help="API keys of the workspace.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(datasets.app, name="datasets")
app.add_typer(files.app, name="files")
app.add_typer(runs.runs_app, name="runs")
app.add_typer(runs.rollouts_app, name="rollouts")
app.command("tail")(runs.tail)
app.command("export")(transfer.export)
app.command("import")(transfer.import_)
app.add_typer(scoring.scorers_app, name="scorers")
app.command("score")(scoring.score)
app.command("advantages")(scoring.advantages)
app.command("discard")(scoring.discard)
app.command("metrics")(scoring.metrics)


def _version(value: bool) -> None:
    if value:
        console.print(f"rollout {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", envvar="ROLLOUT_BASE_URL", help="Server URL (default: from `rollout login`)."),
    ] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", envvar="ROLLOUT_API_KEY", help="API key (default: from `rollout login`).")
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    State.base_url = base_url
    State.api_key = api_key
    State._client = None


@app.command()
@command
def login(
    base_url: Annotated[str | None, typer.Option("--url", help="Server URL.")] = None,
    api_key: Annotated[str | None, typer.Option("--key", help="API key (prompted for when omitted).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Check an API key against the server and save both in the login file (mode 0600)."""
    saved = read_config_file()
    url = (base_url or State.base_url or saved.get("base_url") or DEFAULT_BASE_URL).rstrip("/")
    key = api_key or State.api_key
    if not key:
        key = typer.prompt(f"API key for {url}", hide_input=True).strip()
    workspace = Client(url, key, deliver_spool=False, max_retries=1).whoami()
    path = write_config_file({**saved, "base_url": url, "api_key": key, "workspace": workspace.name})
    if as_json:
        print_json({"base_url": url, "workspace": workspace, "config_file": str(path)})
    else:
        console.print(f"Logged in to workspace [bold]{workspace.name}[/] at {url}. Saved to {path}.")


@app.command()
@command
def logout(as_json: JsonOption = False) -> None:
    """Forget the saved API key (the server URL stays)."""
    saved = read_config_file()
    had_key = bool(saved.pop("api_key", None))
    if had_key:
        write_config_file(saved)
    if as_json:
        print_json({"logged_out": had_key})
    else:
        console.print("Logged out." if had_key else "Not logged in.")


@app.command()
@command
def whoami(as_json: JsonOption = False) -> None:
    """Which server, workspace and key this shell uses, and where the settings came from."""
    client = State.client()
    if State.api_key or os.environ.get("ROLLOUT_API_KEY"):
        source = "--api-key / ROLLOUT_API_KEY"
    elif read_config_file().get("api_key"):
        source = str(config_file_path())
    else:
        raise fail("not logged in", AUTH, "Run `rollout login`, or set ROLLOUT_BASE_URL and ROLLOUT_API_KEY.")
    workspace = client.whoami()
    key = client.settings.api_key or ""
    if as_json:
        print_json(
            {"base_url": client.base_url, "workspace": workspace, "key_prefix": key[:12], "credentials_from": source}
        )
        return
    console.print(f"workspace  [bold]{workspace.name}[/] ({workspace.id})")
    console.print(f"server     {client.base_url}")
    console.print(f"key        {key[:12]}…  (from {source})")


@keys_app.command("list")
@command
def keys_list(as_json: JsonOption = False) -> None:
    """List API keys (their prefixes; secrets are never shown again)."""
    keys = State.client().list_keys()
    if as_json:
        print_json(keys)
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("id", "name", "prefix", "created", "last used", "revoked"):
        table.add_column(column)
    for key in keys:
        table.add_row(key.id, key.name, key.prefix, when(key.created_at), when(key.last_used_at), when(key.revoked_at))
    console.print(table)


@keys_app.command("create")
@command
def keys_create(
    name: Annotated[str, typer.Argument(help="A label to tell keys apart.")] = "api key",
    as_json: JsonOption = False,
) -> None:
    """Create an API key and print its secret (shown only this once)."""
    key = State.client().create_key(name)
    if as_json:
        print_json(key)
        return
    console.print(f"Created key [bold]{key.name}[/] ({key.id}). Its secret, shown only now:")
    console.print(key.secret, style="bold", soft_wrap=True)


@keys_app.command("revoke")
@command
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…), from `rollout keys list`.")],
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key; requests with it fail from now on."""
    key = State.client().revoke_key(key_id)
    if as_json:
        print_json(key)
    else:
        console.print(f"Revoked key {key.name} ({key.id}).")

"""`rollout datasets ...`: list, create, show, push (JSONL + files folder -> new version), pull."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table

from .._client import Client, Dataset
from .._core import TASK_FIELDS
from .._errors import NotFoundError
from .._files import FileSource, safe_name, to_source
from .._types import File, Task
from .common import USAGE, JsonOption, State, command, console, err_console, fail, print_json, short, when

app = typer.Typer(help="Datasets: versioned collections of tasks.", no_args_is_help=True)

ARCHIVE_FORMATS = ("jsonl", "harbor", "nemo-gym")
COMPARED = ("instruction", "input", "expected_output", "output_schema", "metadata", "split")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Tasks from a JSONL file: one object per line; blank lines and // comments are skipped."""
    tasks = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            task = json.loads(stripped)
        except ValueError as error:
            raise ValueError(f"{path}:{number}: not valid JSON ({error})") from None
        if not isinstance(task, dict):
            raise ValueError(f"{path}:{number}: each line must be a JSON object (a task)")
        unknown = set(task) - set(TASK_FIELDS)
        if unknown:
            raise ValueError(
                f"{path}:{number}: unknown field(s) {', '.join(sorted(unknown))}; a task has {', '.join(TASK_FIELDS)}"
            )
        tasks.append(task)
    return tasks


def _sources(tasks: list[dict[str, Any]], files_dir: Path) -> dict[str, FileSource]:
    """Every local file the tasks name, by the path string used in the JSONL."""
    found: dict[str, FileSource] = {}
    for task in tasks:
        files = task.get("files") or []
        if not isinstance(files, list):
            raise ValueError(f"task {task.get('key')!r}: files must be a list of paths")
        for ref in files:
            if not isinstance(ref, str):
                raise ValueError(f"task {task.get('key')!r}: file entries must be paths (strings)")
            if ref.startswith("file_") and not (files_dir / ref).exists():
                continue  # an uploaded file's id
            if ref not in found:
                path = (files_dir / ref) if not Path(ref).is_absolute() else Path(ref)
                if not path.is_file():
                    raise ValueError(
                        f"task {task.get('key')!r} names {ref}, but {path} does not exist "
                        "(paths are relative to --files, default: the JSONL's folder)"
                    )
                found[ref] = to_source(path)
    return found


def _upload_all(client: Client, sources: dict[str, FileSource], known: dict[str, str], quiet: bool) -> dict[str, str]:
    """Upload what the server lacks (by SHA-256); returns path string -> file id."""
    ids: dict[str, str] = {}
    todo = []
    for ref, source in sources.items():
        identity = f"{source.digest()}|{source.name}"
        if identity in known:
            ids[ref] = known[identity]
        else:
            todo.append((ref, source))
    if not todo:
        return ids
    total = sum((s.path.stat().st_size if s.path else len(s.data or b"")) for _, s in todo)
    with Progress(
        TextColumn("uploading {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err_console,
        disable=quiet,
        transient=True,
    ) as progress:
        bar = progress.add_task(f"{len(todo)} file(s)", total=total)
        for ref, source in todo:
            file = client._upload(source)
            known[f"{file.sha256}|{file.name}"] = file.id
            ids[ref] = file.id
            progress.advance(bar, file.size)
    return ids


def _wire_task(task: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    out = {k: v for k, v in task.items() if k != "files"}
    out["files"] = [ids.get(ref, ref) for ref in task.get("files") or []]
    return out


def _differs(local: dict[str, Any], remote: Task, digests: list[str]) -> bool:
    for name in COMPARED:
        mine = local.get(name)
        theirs = getattr(remote, name)
        if name == "instruction":
            mine = mine or ""
        if mine != theirs:
            return True
    return digests != [f"{f.sha256}|{f.name}" for f in remote.files]


def _dataset_row(ds: Dataset) -> list[str]:
    return [ds.name, str(ds.latest_version), str(ds.task_count), when(ds.info.updated_at), ds.description or ""]


@app.command("list")
@command
def list_(as_json: JsonOption = False) -> None:
    """List the workspace's datasets."""
    datasets = list(State.client().list_datasets())
    if as_json:
        print_json(datasets)
        return
    if not datasets:
        console.print("No datasets yet. Create one with `rollout datasets create NAME --from tasks.jsonl`.")
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("name", "version", "tasks", "updated", "description"):
        table.add_column(column)
    for ds in datasets:
        table.add_row(*_dataset_row(ds))
    console.print(table)


@app.command()
@command
def create(
    name: Annotated[str, typer.Argument(help="Dataset name (unique in the workspace).")],
    source: Annotated[
        Path | None, typer.Option("--from", help="JSONL of tasks to start with.", exists=True, dir_okay=False)
    ] = None,
    files_dir: Annotated[
        Path | None,
        typer.Option("--files", help="Folder the tasks' file paths are relative to (default: the JSONL's folder)."),
    ] = None,
    description: Annotated[str | None, typer.Option(help="What the dataset is for.")] = None,
    message: Annotated[str | None, typer.Option("--message", "-m", help="Note for version 1.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a dataset, empty or from a JSONL of tasks."""
    client = State.client()
    wire: list[dict[str, Any]] = []
    if source is not None:
        tasks = read_jsonl(source)
        ids = _upload_all(client, _sources(tasks, files_dir or source.parent), {}, as_json)
        wire = [_wire_task(t, ids) for t in tasks]
    dataset = client.create_dataset(name, wire, description=description, message=message)
    if as_json:
        print_json(dataset)
    else:
        console.print(
            f"Created dataset [bold]{dataset.name}[/] v{dataset.latest_version} with {dataset.task_count} task(s)."
        )


@app.command()
@command
def show(
    name: Annotated[str, typer.Argument(help="Dataset name or id.")],
    version: Annotated[int | None, typer.Option(help="Version to show (default: the latest).")] = None,
    limit: Annotated[int, typer.Option(help="Tasks to list (0: none).")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Show a dataset: its versions and tasks."""
    dataset = State.client().get_dataset(name)
    versions = dataset.versions()
    tasks = dataset.tasks(version) if limit else []
    if as_json:
        print_json({"dataset": dataset, "versions": versions, "tasks": tasks})
        return
    console.print(f"[bold]{dataset.name}[/] ({dataset.id}) — v{dataset.latest_version}, {dataset.task_count} task(s)")
    if dataset.description:
        console.print(dataset.description)
    table = Table(box=None, header_style="bold", title="versions", title_justify="left", pad_edge=False)
    for column in ("version", "tasks", "+", "~", "-", "created", "message"):
        table.add_column(column)
    for v in versions:
        table.add_row(
            str(v.number),
            str(v.task_count),
            str(v.added),
            str(v.updated),
            str(v.removed),
            when(v.created_at),
            v.message or "",
        )
    console.print(table)
    if tasks:
        shown = Table(
            box=None,
            header_style="bold",
            pad_edge=False,
            title=f"tasks (v{version or dataset.latest_version})",
            title_justify="left",
        )
        for column in ("key", "split", "files", "instruction"):
            shown.add_column(column)
        for task in tasks[:limit]:
            shown.add_row(task.key, task.split or "", str(len(task.files)), short(task.instruction, 70))
        console.print(shown)
        if len(tasks) > limit:
            console.print(f"[dim]… and {len(tasks) - limit} more (--limit)[/]")


@app.command()
@command
def push(
    args: Annotated[
        list[str],
        typer.Argument(
            help="With --dataset: PATH (a folder, .zip or .jsonl) to import. Without: NAME tasks.jsonl.",
            show_default=False,
        ),
    ],
    dataset_name: Annotated[
        str | None,
        typer.Option("--dataset", "-d", help="Import PATH into this dataset (created if missing), server-side."),
    ] = None,
    format: Annotated[str, typer.Option("--format", help=f"With --dataset: {', '.join(ARCHIVE_FORMATS)}.")] = "jsonl",
    merge: Annotated[
        bool, typer.Option("--merge", help="With --dataset: keep the tasks the import does not hold.")
    ] = False,
    files_dir: Annotated[
        Path | None,
        typer.Option("--files", help="Folder the tasks' file paths are relative to (default: the JSONL's folder)."),
    ] = None,
    message: Annotated[str | None, typer.Option("--message", "-m", help="Note for the new version.")] = None,
    keep_missing: Annotated[
        bool, typer.Option("--keep-missing", help="Keep tasks the file does not list (default: remove them).")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Push tasks as one new version: `push PATH --dataset NAME` imports a folder (zipped first), .zip or
    .jsonl server-side; `push NAME tasks.jsonl` makes the dataset match the JSONL task by task."""
    if dataset_name is not None:
        if len(args) != 1:
            raise fail("with --dataset, give exactly one PATH (a folder, .zip or .jsonl)", USAGE)
        if files_dir is not None or dry_run:
            raise fail("--files and --dry-run apply to `push NAME tasks.jsonl`, not to --dataset imports", USAGE)
        _push_archive(Path(args[0]), dataset_name, format, merge or keep_missing, message, as_json)
        return
    if len(args) != 2:
        raise fail("give NAME and a tasks.jsonl, or PATH --dataset NAME", USAGE)
    if format != "jsonl" or merge:
        raise fail("--format and --merge apply to `push PATH --dataset NAME`", USAGE)
    name, source = args[0], Path(args[1])
    if not source.is_file():
        raise fail(f"{source} is not a file", USAGE)
    # Make the dataset match the JSONL: one new version with the tasks added, changed and removed.
    # Tasks are matched by key; files are uploaded only when the server lacks their bytes.
    client = State.client()
    tasks = read_jsonl(source)
    keys = [t.get("key") for t in tasks]
    if len([k for k in keys if k]) != len({k for k in keys if k}):
        raise fail("the file lists the same key twice; keys must be unique")
    sources = _sources(tasks, files_dir or source.parent)
    try:
        dataset: Dataset | None = client.get_dataset(name)
    except NotFoundError:
        dataset = None
    remote = {t.key: t for t in dataset.tasks()} if dataset is not None else {}
    known = {f"{f.sha256}|{f.name}": f.id for t in remote.values() for f in t.files}
    digests = {ref: f"{s.digest()}|{s.name}" for ref, s in sources.items()}

    add, update = [], []
    for task in tasks:
        current = remote.get(task.get("key") or "")
        if current is None:
            add.append(task)
        else:
            wanted = [digests.get(ref, "") for ref in task.get("files") or []]
            if _differs(task, current, wanted):
                update.append(task)
    listed = {k for k in keys if k}
    remove = [] if keep_missing else sorted(k for k in remote if k not in listed)
    summary = {
        "dataset": name,
        "created": dataset is None,
        "added": len(add),
        "updated": len(update),
        "removed": len(remove),
        "unchanged": len(tasks) - len(add) - len(update),
    }
    if dry_run or (dataset is not None and not (add or update or remove)):
        summary["version"] = dataset.latest_version if dataset is not None else None
        if as_json:
            print_json({**summary, "dry_run": dry_run})
        else:
            verb = "Would" if dry_run else "Nothing to push:"
            console.print(
                f"{verb} add {len(add)}, update {len(update)}, remove {len(remove)} task(s) "
                f"({summary['unchanged']} unchanged)."
            )
        return
    needed = {ref: s for ref, s in sources.items() if any(ref in (t.get("files") or []) for t in add + update)}
    ids = _upload_all(client, needed, known, as_json)
    if dataset is None:
        dataset = client.create_dataset(name, [_wire_task(t, ids) for t in tasks], message=message)
        summary["version"] = dataset.latest_version
    else:
        full_update = [{**{f: t.get(f) for f in COMPARED}, **_wire_task(t, ids)} for t in update]
        version = dataset.new_version(
            add=[_wire_task(t, ids) for t in add], update=full_update, remove=remove, message=message
        )
        summary["version"] = version.number
    if as_json:
        print_json(summary)
    else:
        what = "Created" if summary["created"] else "Pushed"
        console.print(
            f"{what} [bold]{name}[/] v{summary['version']}: {summary['added']} added, "
            f"{summary['updated']} updated, {summary['removed']} removed, "
            f"{summary['unchanged']} unchanged."
        )


@app.command()
@command
def pull(
    name: Annotated[str, typer.Argument(help="Dataset name or id.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Folder to write (default: ./NAME); with --format or a .zip: a file."),
    ] = None,
    version: Annotated[int | None, typer.Option(help="Version to pull (default: the latest).")] = None,
    format: Annotated[
        str | None,
        typer.Option(
            "--format", help=f"Download the export ({', '.join(ARCHIVE_FORMATS)}) as one file instead of a folder."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Write a dataset version as OUTPUT/tasks.jsonl plus OUTPUT/files/ (the format `push NAME FILE` reads),
    or, with --format (or -o FILE.zip), stream the server's export (a zip, or JSONL for nemo-gym) to a file."""
    if format is not None or (output is not None and output.suffix.lower() == ".zip"):
        _pull_archive(name, format or "jsonl", version, output, as_json)
        return
    client = State.client()
    dataset = client.get_dataset(name)
    tasks = dataset.tasks(version)
    folder = output or Path(safe_name(dataset.name))
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}  # sha256 -> relative path
    used: set[str] = set()
    files: list[File] = []
    for task in tasks:
        for file in task.files:
            if file.sha256 in names:
                continue
            rel = f"files/{safe_name(file.name)}"
            if rel in used:
                rel = f"files/{file.sha256[:12]}/{safe_name(file.name)}"
            names[file.sha256] = rel
            used.add(rel)
            files.append(file)
    total = sum(f.size for f in files)
    with Progress(
        TextColumn("downloading {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err_console,
        disable=as_json or not files,
        transient=True,
    ) as progress:
        bar = progress.add_task(f"{len(files)} file(s)", total=total)
        for file in files:
            client.download_file(file, folder / names[file.sha256])
            progress.advance(bar, file.size)
    lines = []
    for task in tasks:
        record: dict[str, Any] = {"key": task.key, "instruction": task.instruction}
        for field in ("input", "expected_output", "output_schema", "metadata", "split"):
            value = getattr(task, field)
            if value is not None:
                record[field] = value
        if task.files:
            record["files"] = [names[f.sha256] for f in task.files]
        lines.append(json.dumps(record, ensure_ascii=False))
    (folder / "tasks.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    pulled = version or dataset.latest_version
    if as_json:
        print_json(
            {"dataset": dataset.name, "version": pulled, "tasks": len(tasks), "files": len(files), "path": str(folder)}
        )
    else:
        console.print(
            f"Pulled [bold]{dataset.name}[/] v{pulled}: {len(tasks)} task(s), {len(files)} file(s) into {folder}/"
        )


# -- server-side import and export (whole archives), diffs and promotion ---------------------------------


def _check_format(format: str) -> None:
    if format not in ARCHIVE_FORMATS:
        raise fail(f"unknown format {format!r}; use one of {', '.join(ARCHIVE_FORMATS)}", USAGE)


def _zip_folder(folder: Path, target: Path) -> int:
    """Zip the folder's contents (paths relative to it, so tasks.jsonl / dataset.toml sit at the root)."""
    count = 0
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = Path(root) / name
                archive.write(path, path.relative_to(folder).as_posix())
                count += 1
    if not count:
        raise ValueError(f"{folder} is empty: nothing to push")
    return count


def _progress(verb: str, disable: bool) -> Progress:
    return Progress(
        TextColumn(verb),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err_console,
        disable=disable,
        transient=True,
    )


def _push_archive(path: Path, dataset: str, format: str, merge: bool, message: str | None, as_json: bool) -> None:
    _check_format(format)
    if not path.exists():
        raise fail(f"{path} does not exist", USAGE)
    client = State.client()
    with tempfile.TemporaryDirectory(prefix="rollout-push-") as scratch:
        if path.is_dir():
            if format == "nemo-gym":
                raise fail("nemo-gym imports are one JSONL file, not a folder", USAGE)
            upload = Path(scratch) / "upload.zip"
            _zip_folder(path, upload)
        else:
            upload = path
        zipped = zipfile.is_zipfile(upload)
        size = upload.stat().st_size
        with _progress("uploading", as_json) as progress:
            bar = progress.add_task("", total=size)

            def chunks() -> Iterator[bytes]:
                with open(upload, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        progress.advance(bar, len(chunk))
                        yield chunk

            result = client._t.request(
                "POST",
                f"/datasets/{dataset}/import",
                params={
                    "format": format,
                    "create": "true",
                    "replace": "false" if merge else "true",
                    "message": message,
                },
                content=chunks(),
                headers={"Content-Type": "application/zip" if zipped else "application/x-ndjson"},
                max_retries=0,
            )
    if as_json:
        print_json(result)
        return
    if not result.get("changed"):
        console.print(f"Nothing changed: [bold]{result['dataset']}[/] stays at v{result['version']}.")
        return
    what = "Created" if result.get("created_dataset") else "Pushed"
    console.print(
        f"{what} [bold]{result['dataset']}[/] v{result['version']}: {result['added']} added, "
        f"{result['updated']} updated, {result['removed']} removed, {result['unchanged']} unchanged "
        f"({result['tasks']} task(s), {result['files']} file(s))."
    )


def _pull_archive(name: str, format: str, version: int | None, output: Path | None, as_json: bool) -> None:
    _check_format(format)
    client = State.client()
    target = output or Path(f"{safe_name(name)}.{'jsonl' if format == 'nemo-gym' else 'zip'}")
    partial = target.with_name(target.name + ".part")
    size = 0
    try:
        with (
            client._t.stream(
                "GET", f"/datasets/{name}/export", params={"format": format, "version": version}
            ) as response,
            _progress("downloading", as_json) as progress,
            open(partial, "wb") as sink,
        ):
            length = response.headers.get("content-length")
            bar = progress.add_task("", total=int(length) if length else None)
            for chunk in response.iter_bytes():
                sink.write(chunk)
                size += len(chunk)
                progress.advance(bar, len(chunk))
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    shown = version if version is not None else "latest"
    if as_json:
        print_json({"dataset": name, "version": version, "format": format, "bytes": size, "path": str(target)})
    else:
        console.print(f"Pulled [bold]{name}[/] ({shown}) as {format}: {size:,} bytes into {target}")


@app.command()
@command
def diff(
    name: Annotated[str, typer.Argument(help="Dataset name or id.")],
    from_version: Annotated[
        int | None, typer.Option("--from", help="Older version (default: the one before --to; 0: empty).")
    ] = None,
    to_version: Annotated[int | None, typer.Option("--to", help="Newer version (default: the latest).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Tasks added, removed and changed (with the fields that differ) between two versions, by key."""
    client = State.client()
    params: dict[str, Any] = {"from": from_version, "to": to_version, "limit": 500}
    items: list[dict[str, Any]] = []
    page: dict[str, Any] = {}
    while True:
        page = client._t.request("GET", f"/datasets/{name}/diff", params=params)
        items.extend(page.get("items") or [])
        if not page.get("next_cursor"):
            break
        params = {**params, "cursor": page["next_cursor"]}
    result = {"from_version": page.get("from_version"), "to_version": page.get("to_version"), "items": items}
    if as_json:
        print_json(result)
        return
    counts = {c: sum(1 for i in items if i["change"] == c) for c in ("added", "changed", "removed")}
    console.print(
        f"[bold]{name}[/] v{result['from_version']} → v{result['to_version']}: {counts['added']} added, "
        f"{counts['changed']} changed, {counts['removed']} removed."
    )
    if not items:
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("", "key", "change", "fields", "instruction"):
        table.add_column(column)
    marks = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}
    for item in items:
        mark, style = marks.get(item["change"], ("?", ""))
        task = item.get("after") or item.get("before") or {}
        table.add_row(
            f"[{style}]{mark}[/]",
            item["key"],
            f"[{style}]{item['change']}[/]",
            ", ".join(item.get("fields") or []),
            short(task.get("instruction"), 60),
        )
    console.print(table)


@app.command()
@command
def promote(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset name or id (a new name creates it).")],
    rollout: Annotated[str | None, typer.Option("--rollout", help="Promote this rollout (id ro_…).")] = None,
    run: Annotated[str | None, typer.Option("--run", help="Promote the failing rollouts of this run.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="With --rollout: the task key to write.")] = None,
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help="With --run: rollout statuses to promote (repeat; default failed, errored)."),
    ] = None,
    reward_below: Annotated[
        float | None, typer.Option("--reward-below", help="With --run: also promote rewards below this.")
    ] = None,
    output_as_expected: Annotated[
        bool, typer.Option("--output-as-expected", help="Use the rollout's output as expected_output.")
    ] = False,
    message: Annotated[str | None, typer.Option("--message", "-m", help="Note for the new version.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Turn a rollout (--rollout) or every failing rollout of a run (--run) into tasks of a dataset."""
    if (rollout is None) == (run is None):
        raise fail("give either --rollout ID or --run N", USAGE)
    body: dict[str, Any] = {"dataset": dataset, "use_output_as_expected": output_as_expected}
    if message is not None:
        body["message"] = message
    if rollout is not None:
        if status or reward_below is not None:
            raise fail("--status and --reward-below apply to --run", USAGE)
        if key is not None:
            body["key"] = key
        path = f"/rollouts/{rollout}/promote"
    else:
        if key is not None:
            raise fail("--key applies to --rollout", USAGE)
        if status:
            body["statuses"] = status
        if reward_below is not None:
            body["reward_below"] = reward_below
        path = f"/runs/{run}/promote"
    result = State.client()._t.request("POST", path, json=body)
    if as_json:
        print_json(result)
        return
    what = "Created" if result.get("created_dataset") else "Updated"
    keys = result.get("keys") or []
    console.print(
        f"{what} [bold]{result['dataset']}[/] v{result['version']}: {result['added']} added, "
        f"{result['updated']} updated ({len(keys)} task(s): {short(', '.join(keys), 100)})."
    )

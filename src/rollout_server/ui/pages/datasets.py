"""Datasets: list and create, a dataset's versions (with change summaries and the runs that used each),
its task table with search, a task's page, adding and editing tasks with JSON fields and file uploads,
session-authenticated file downloads, the diff between two versions, and import/export in the three dataset
formats (the same services as `GET /datasets/{ds}/diff`, `GET …/export` and `POST …/import`)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ...api.deps import Ctx
from ...datasets import service as datasets
from ...datasets.archive import ArchiveLimits
from ...datasets.diff import version_diff
from ...datasets.formats import JSONL_MEDIA_TYPE, ZIP_MEDIA_TYPE, DatasetFormat, export_dataset, import_dataset
from ...datasets.repository import DatasetRepository
from ...datasets.schemas import DatasetCreate, DiffItem, TaskIn, TaskOut, TaskUpdate, VersionCreate
from ...errors import AppError, InvalidInput, NotFound, PayloadTooLarge
from ...files import service as files
from ...files.api import content_disposition
from ...ids import has_prefix
from ...runs.repository import RunRepository
from ...storage.base import CHUNK, blob_key, ingest_file
from ..deps import Access, CsrfChecked, WorkspaceAccess
from ..templating import flash, render, to_json

router = APIRouter()

TASK_PAGE = 50
DIFF_PAGE = 50
FORMATS: dict[str, str] = {"jsonl": "JSONL + files (zip)", "harbor": "Harbor task folders (zip)",
                           "nemo-gym": "NeMo Gym (JSONL)"}


class FormProblems(Exception):
    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__("; ".join(problems.values()))
        self.problems = problems


def parse_json_field(text: str, label: str, *, must_be_object: bool) -> Any:
    """Parse a JSON form field or raise InvalidInput naming the line, column and what was expected."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        lines = text.splitlines() or [""]
        line = lines[error.lineno - 1] if error.lineno - 1 < len(lines) else ""
        raise InvalidInput(f"{label} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}: "
                           f"“{line.strip()[:80]}”.") from error
    if must_be_object and not isinstance(value, dict):
        kind = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
            type(value), "null")
        raise InvalidInput(f"{label} must be a JSON object like {{\"question\": \"…\"}}, not {kind}.")
    return value


def _task_values(form: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The task fields of a form, and per-field problems (all of them at once, not just the first)."""
    problems: dict[str, str] = {}
    values: dict[str, Any] = {"instruction": str(form.get("instruction") or ""),
                              "split": str(form.get("split") or "").strip() or None}
    for name, label, obj in (("input", "Input", True), ("metadata", "Metadata", True),
                             ("output_schema", "Output schema", True)):
        try:
            values[name] = parse_json_field(str(form.get(name) or ""), label, must_be_object=obj)
        except InvalidInput as error:
            problems[name] = error.detail
    expected = str(form.get("expected_output") or "")
    if form.get("expected_format") == "json":
        try:
            values["expected_output"] = parse_json_field(expected, "Golden answer", must_be_object=False)
        except InvalidInput as error:
            problems["expected_output"] = error.detail
    else:
        values["expected_output"] = expected if expected.strip() else None
    return values, problems


async def _store_uploads(ctx: Ctx, access: Access, form: Any) -> list[tuple[Any, str, str]]:
    """Spool uploaded files into the blob store (outside any transaction); their rows come later."""
    stored = []
    for upload in form.getlist("files"):
        if not isinstance(upload, UploadFile) or not upload.filename:
            continue
        name = files.clean_file_name(upload.filename)
        media_type = files.guess_media_type(name, upload.content_type)
        blob = await run_in_threadpool(ingest_file, ctx.store, access.workspace_id, upload.file,
                                       max_bytes=ctx.settings.max_upload_bytes)
        stored.append((blob, name, media_type))
    return stored


def _pydantic_problems(error: ValidationError, prefix: str = "") -> dict[str, str]:
    out = {}
    for item in error.errors():
        field = ".".join(str(p) for p in item.get("loc", ()) if p not in (prefix,)) or "form"
        out[field] = f"{field}: {item.get('msg')}"
    return out


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


@router.get("/w/{workspace_id}/datasets")
def dataset_list(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    params = request.query_params
    with ctx.db.reading() as session:
        page = datasets.list_datasets(session, access.workspace_id, cursor=params.get("cursor") or None, limit=50,
                                      search=params.get("q") or None)
    return render(request, "datasets/list.html", {"access": access, "nav": "datasets", "datasets": page.items,
                                                  "next_cursor": page.next_cursor, "q": params.get("q") or "",
                                                  "problems": {}, "form": {}, "formats": FORMATS,
                                                  "import_problem": None, "import_fields": {}})


@router.post("/w/{workspace_id}/datasets", dependencies=[CsrfChecked])
async def create_dataset(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("member")
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    name = fields.get("name", "").strip()
    problems: dict[str, str] = {}
    tasks: list[TaskIn] = []
    try:
        uploads = await _store_uploads(ctx, access, form)
    except (AppError, ValueError) as error:
        uploads = []
        problems["files"] = getattr(error, "detail", str(error))
    has_task = bool(fields.get("key", "").strip() or fields.get("instruction", "").strip() or uploads)
    values, task_problems = _task_values(fields) if has_task else ({}, {})
    problems.update(task_problems)

    def work() -> str:
        with ctx.db.transaction() as session:
            file_ids = [files.record_upload(session, access.workspace_id, blob, n, m).id for blob, n, m in uploads]
            if has_task:
                tasks.append(TaskIn(key=fields.get("key", "").strip() or None, files=file_ids, **values))
            body = DatasetCreate(name=name, description=fields.get("description", "").strip() or None,
                                 tasks=tasks, message=fields.get("message", "").strip() or None)
            return datasets.create_dataset(session, access.workspace_id, body).id

    if not problems:
        try:
            dataset_id = await run_in_threadpool(work)
        except ValidationError as error:
            problems.update(_pydantic_problems(error))
        except AppError as error:
            problems["name" if "name" in error.detail.lower() else "form"] = error.detail
    if problems:
        with ctx.db.reading() as session:
            page = datasets.list_datasets(session, access.workspace_id, cursor=None, limit=50)
        return render(request, "datasets/list.html", {
            "access": access, "nav": "datasets", "datasets": page.items, "next_cursor": page.next_cursor, "q": "",
            "problems": problems, "form": fields, "formats": FORMATS, "import_problem": None, "import_fields": {}},
            status_code=422)
    flash(request, f"Dataset '{name}' created.")
    return RedirectResponse(f"/w/{access.workspace_id}/datasets/{dataset_id}", status_code=303)


def _dataset_page(request: Request, access: Access, ctx: Ctx, dataset_ref: str, params: Any, *,
                  import_problem: dict[str, Any] | None = None, import_fields: dict[str, str] | None = None,
                  status_code: int = 200) -> Response:
    q = (params.get("q") or "").strip() or None
    with ctx.db.reading() as session:
        dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
        version_param = params.get("version")
        version = datasets.resolve_version(session, dataset, _int(version_param))
        tasks = datasets.list_tasks(session, dataset, version, cursor=params.get("cursor") or None, limit=TASK_PAGE,
                                    search=q) if version else None
        versions = datasets.list_versions(session, dataset, cursor=None, limit=200).items
        used = RunRepository(session).list_page(access.workspace_id, filters={"dataset_id": dataset.id}, before=None,
                                                limit=500)
    runs_by_version: dict[int | None, list[Any]] = defaultdict(list)
    for run in used:
        runs_by_version[run.dataset_version].append(run)
    return render(request, "datasets/page.html", {
        "access": access, "nav": "datasets", "dataset": dataset, "version": version, "versions": versions,
        "tasks": tasks.items if tasks else [], "next_cursor": tasks.next_cursor if tasks else None, "q": q or "",
        "runs_by_version": runs_by_version, "state": {k: v for k, v in params.items() if k != "cursor"},
        "formats": FORMATS, "import_problem": import_problem, "import_fields": import_fields or {},
    }, status_code=status_code)


@router.get("/w/{workspace_id}/datasets/{dataset_ref}")
def dataset_page(request: Request, dataset_ref: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    return _dataset_page(request, access, ctx, dataset_ref, request.query_params)


def _task_form(request: Request, access: Access, dataset: Any, task: Any, form: dict[str, Any],
               problems: dict[str, str], status_code: int = 200) -> Response:
    return render(request, "datasets/task_form.html", {
        "access": access, "nav": "datasets", "dataset": dataset, "task": task, "form": form, "problems": problems,
    }, status_code=status_code)


def _form_from_task(task: Any) -> dict[str, Any]:
    def dump(value: Any) -> str:
        return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)

    expected = task.expected_output
    return {"key": task.key, "instruction": task.instruction, "input": dump(task.input),
            "metadata": dump(task.metadata), "output_schema": dump(task.output_schema), "split": task.split or "",
            "expected_output": expected if isinstance(expected, str) else dump(expected),
            "expected_format": "text" if expected is None or isinstance(expected, str) else "json"}


@router.get("/w/{workspace_id}/datasets/{dataset_ref}/new-task")
def new_task_form(request: Request, dataset_ref: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("member")
    with ctx.db.reading() as session:
        dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
    return _task_form(request, access, dataset, None, {"expected_format": "text"}, {})


@router.get("/w/{workspace_id}/datasets/{dataset_ref}/tasks/{key}/edit")
def edit_task_form(request: Request, dataset_ref: str, key: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    access.require("member")
    with ctx.db.reading() as session:
        dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
        task = datasets.get_task_by_key(session, dataset, key, dataset.latest_version)
    return _task_form(request, access, dataset, task, _form_from_task(task), {})


@router.post("/w/{workspace_id}/datasets/{dataset_ref}/tasks", dependencies=[CsrfChecked])
async def save_task(request: Request, dataset_ref: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """Add a task (no `original_key`) or edit one; either way the dataset gets one new version."""
    access.require("member")
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    original = fields.get("original_key") or None
    keep = [v for v in form.getlist("keep_files") if isinstance(v, str)]
    values, problems = _task_values(fields)
    try:
        uploads = await _store_uploads(ctx, access, form)
    except (AppError, ValueError) as error:
        uploads = []
        problems["files"] = getattr(error, "detail", str(error))
    key = fields.get("key", "").strip()

    def work() -> tuple[str, str]:
        with ctx.db.transaction() as session:
            dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref, for_update=True)
            file_ids = [files.record_upload(session, access.workspace_id, blob, n, m).id for blob, n, m in uploads]
            if original:
                change = TaskUpdate(key=original, files=keep + file_ids, **values)
                body = VersionCreate(message=fields.get("message") or f"edit {original}", update=[change])
                datasets.apply_version(session, access.workspace_id, dataset, body)
                return dataset.id, original
            task = TaskIn(key=key or None, files=file_ids, **values)
            body = VersionCreate(message=fields.get("message") or f"add {key or 'a task'}", add=[task])
            datasets.apply_version(session, access.workspace_id, dataset, body)
            return dataset.id, task.key or ""

    if not problems:
        try:
            dataset_id, saved_key = await run_in_threadpool(work)
        except ValidationError as error:
            problems.update(_pydantic_problems(error))
        except AppError as error:
            field = (error.errors or [{}])[0].get("field", "form") if error.errors else "form"
            problems["key" if str(field).endswith("key") else "form"] = error.detail
    if problems:
        with ctx.db.reading() as session:
            dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
            task = datasets.get_task_by_key(session, dataset, original, dataset.latest_version) if original else None
        return _task_form(request, access, dataset, task, fields, problems, status_code=422)
    flash(request, "Task saved as a new version.")
    if saved_key:
        from urllib.parse import quote

        return RedirectResponse(f"/w/{access.workspace_id}/datasets/{dataset_id}/tasks/{quote(saved_key, safe='')}",
                                status_code=303)
    return RedirectResponse(f"/w/{access.workspace_id}/datasets/{dataset_id}", status_code=303)


@router.get("/w/{workspace_id}/datasets/{dataset_ref}/tasks/{key}")
def task_page(request: Request, dataset_ref: str, key: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    params = request.query_params
    with ctx.db.reading() as session:
        dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
        version_param = params.get("version")
        version = datasets.resolve_version(session, dataset, _int(version_param))
        task = datasets.get_task_by_key(session, dataset, key, version)
        used = DatasetRepository(session).get_version(dataset.id, version)
    return render(request, "datasets/task.html", {"access": access, "nav": "datasets", "dataset": dataset,
                                                  "task": task, "version": version, "version_row": used})


@router.get("/w/{workspace_id}/files/{file_id}")
def download(file_id: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """A task file, for a signed-in member; always an attachment, so uploaded HTML never renders here."""
    with ctx.db.reading() as session:
        file = files.get_file(session, access.workspace_id, file_id)
    return StreamingResponse(
        ctx.store.iter_bytes(blob_key(access.workspace_id, file.sha256), CHUNK), media_type=file.media_type,
        headers={"content-length": str(file.size), "content-disposition": content_disposition(file.name),
                 "x-content-type-options": "nosniff", "content-security-policy": "sandbox; default-src 'none'"},
    )


# --- Version diffs ---------------------------------------------------------------------------------------

DIFF_FIELDS = ("instruction", "input", "expected_output", "output_schema", "metadata", "split", "files")


def _shown(value: Any) -> dict[str, str]:
    """A value for a diff cell: null, plain text, or pretty-printed JSON (escaped by the template)."""
    if value is None:
        return {"kind": "null", "text": "null"}
    if isinstance(value, str):
        return {"kind": "text", "text": value}
    return {"kind": "json", "text": to_json(value)}


def _field(task: TaskOut, name: str) -> Any:
    if name == "files":
        return [f"{f.name} (sha256 {f.sha256[:12]}…, {f.size} bytes)" for f in task.files] or None
    return getattr(task, name)


def _diff_view(item: DiffItem) -> dict[str, Any]:
    if item.change == "changed" and item.before and item.after:
        before, after = item.before, item.after
        rows = [{"field": n, "before": _shown(_field(before, n)), "after": _shown(_field(after, n))}
                for n in item.fields]
    else:
        task = item.after or item.before
        assert task is not None
        rows = [{"field": n, "value": _shown(_field(task, n))} for n in DIFF_FIELDS
                if _field(task, n) not in (None, "", {}, [])]
    return {"key": item.key, "change": item.change, "fields": item.fields, "rows": rows}


def _version_arg(params: Any, name: str) -> int | None:
    value = (params.get(name) or "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise InvalidInput(f"'{name}' must be a version number, not “{value[:40]}”.", field=name)
    return int(value)


@router.get("/w/{workspace_id}/datasets/{dataset_ref}/diff")
def diff_page(request: Request, dataset_ref: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """Tasks added, removed and changed between `from` and `to` (defaults as in the API), paged by key."""
    params = request.query_params
    problem: dict[str, Any] | None = None
    items: list[dict[str, Any]] = []
    low = high = None
    next_cursor = None
    with ctx.db.reading() as session:
        dataset = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
        try:
            requested_low, requested_high = _version_arg(params, "from"), _version_arg(params, "to")
            page = version_diff(session, dataset, requested_low, requested_high,
                                cursor=params.get("cursor") or None, limit=DIFF_PAGE)
            low, high, next_cursor = page.from_version, page.to_version, page.next_cursor
            items = [_diff_view(item) for item in page.items]
        except AppError as error:
            problem = _problem(error)
    return render(request, "datasets/diff.html", {
        "access": access, "nav": "datasets", "dataset": dataset, "items": items, "low": low, "high": high,
        "next_cursor": next_cursor, "problem": problem, "cursor": params.get("cursor") or None,
        "picked": {"from": params.get("from") or "", "to": params.get("to") or ""},
    }, status_code=problem["status"] if problem else 200)


# --- Export and import -----------------------------------------------------------------------------------

def _problem(error: AppError) -> dict[str, Any]:
    """The problem detail the API would answer, for showing in the page."""
    return {"status": error.status, "title": error.title, "detail": error.detail, "errors": error.errors or []}


def _format(value: str | None) -> DatasetFormat:
    fmt = value or "jsonl"
    if fmt not in FORMATS:
        raise InvalidInput(f"Unknown format “{fmt[:40]}”; use one of {', '.join(FORMATS)}.", field="format")
    return fmt  # type: ignore[return-value]


@router.get("/w/{workspace_id}/datasets/{dataset_ref}/export")
def export(request: Request, dataset_ref: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """A version in one of the formats, streamed by the same code as `GET /api/v1/datasets/{ds}/export`."""
    params = request.query_params
    fmt = _format(params.get("format"))
    with ctx.db.reading() as session:
        found = datasets.resolve_dataset(session, access.workspace_id, dataset_ref)
        number = datasets.resolve_version(session, found, _version_arg(params, "version"))
        dataset_id, name, description = found.id, found.name, found.description
    body = export_dataset(ctx, access.workspace_id, dataset_id, name, description, number, fmt)
    zipped = fmt != "nemo-gym"
    return StreamingResponse(body, media_type=ZIP_MEDIA_TYPE if zipped else JSONL_MEDIA_TYPE, headers={
        "content-disposition": content_disposition(f"{name}-v{number}.{'zip' if zipped else 'jsonl'}"),
        "x-content-type-options": "nosniff", "cache-control": "no-store"})


async def _import(request: Request, access: Access, ctx: Ctx, dataset_ref: str | None
                  ) -> tuple[Any, dict[str, Any] | None, dict[str, str]]:
    """Run the API's import on the uploaded file: (summary, None, fields) or (None, problem, fields)."""
    access.require("member")
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf_token"}
    upload = form.get("file")
    try:
        fmt = _format(fields.get("format"))
        target = dataset_ref or fields.get("dataset", "").strip()
        if not target:
            raise InvalidInput("Name the dataset to import into (it is created when it does not exist).",
                               field="dataset")
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise InvalidInput("Choose a file: a zip as export writes it, or a JSONL file.", field="file")
        limit = ctx.settings.max_upload_bytes
        if (upload.size or 0) > limit:
            raise PayloadTooLarge(f"The import is larger than {limit} bytes; split it into several imports.")
        create = dataset_ref is None and not has_prefix(target, "ds")
        if not create:
            def exists() -> None:
                with ctx.db.reading() as session:
                    datasets.resolve_dataset(session, access.workspace_id, target)
            await run_in_threadpool(exists)
        limits = ArchiveLimits(max_total_bytes=min(ArchiveLimits.max_total_bytes, 4 * limit))
        await upload.seek(0)
        summary = await run_in_threadpool(
            import_dataset, ctx, access.workspace_id, upload.file, fmt, target, create=create,
            replace=fields.get("mode", "replace") != "merge", message=fields.get("message", "").strip() or None,
            limits=limits)
    except AppError as error:
        if isinstance(error, NotFound) and dataset_ref is not None:
            raise  # the dataset of the page itself: a 404 page, like every other form
        return None, _problem(error), fields
    return summary, None, fields


def _imported(request: Request, access: Access, summary: Any, file_name: str) -> Response:
    if summary.changed:
        flash(request, f"Imported {file_name} into {summary.dataset}: version {summary.version} "
                       f"(+{summary.added} added, ~{summary.updated} updated, -{summary.removed} removed, "
                       f"{summary.unchanged} unchanged; {summary.tasks} tasks, {summary.files} files).")
    else:
        flash(request, f"Imported {file_name} into {summary.dataset}: nothing changed, so no new version "
                       f"(still version {summary.version}).")
    return RedirectResponse(f"/w/{access.workspace_id}/datasets/{summary.dataset_id}", status_code=303)


def _file_name(form_file: Any) -> str:
    return files.clean_file_name(form_file.filename) if isinstance(form_file, UploadFile) and form_file.filename \
        else "the file"


@router.post("/w/{workspace_id}/datasets/import", dependencies=[CsrfChecked])
async def import_new(request: Request, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """Import into a dataset named in the form, creating it when it does not exist (`create=true`)."""
    summary, problem, fields = await _import(request, access, ctx, None)
    if summary is not None:
        return _imported(request, access, summary, _file_name((await request.form()).get("file")))
    assert problem is not None
    with ctx.db.reading() as session:
        page = datasets.list_datasets(session, access.workspace_id, cursor=None, limit=50)
    return render(request, "datasets/list.html", {
        "access": access, "nav": "datasets", "datasets": page.items, "next_cursor": page.next_cursor, "q": "",
        "problems": {}, "form": {}, "formats": FORMATS, "import_problem": problem, "import_fields": fields,
    }, status_code=problem["status"])


@router.post("/w/{workspace_id}/datasets/{dataset_ref}/import", dependencies=[CsrfChecked])
async def import_into(request: Request, dataset_ref: str, access: WorkspaceAccess, ctx: Ctx) -> Response:
    """Import into this dataset: one new version (none when nothing changed), merge or replace."""
    summary, problem, fields = await _import(request, access, ctx, dataset_ref)
    if summary is not None:
        return _imported(request, access, summary, _file_name((await request.form()).get("file")))
    return _dataset_page(request, access, ctx, dataset_ref, {}, import_problem=problem, import_fields=fields,
                         status_code=problem["status"] if problem else 422)

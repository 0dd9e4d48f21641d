"""`rollout-server`: serve, migrate, and set up workspaces, keys and users from the command line."""

from __future__ import annotations

import typer
from rich.console import Console

from .config import Settings, get_settings

app = typer.Typer(help="Run and administer a Rollout server.", no_args_is_help=True, add_completion=False)
db_app = typer.Typer(help="Database migrations.", no_args_is_help=True)
workspaces_app = typer.Typer(help="Workspaces.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True)
users_app = typer.Typer(help="Users and their roles.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(workspaces_app, name="workspaces")
app.add_typer(keys_app, name="keys")
app.add_typer(users_app, name="users")
console = Console(stderr=True)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(1)


@app.command()
def serve(
    host: str | None = typer.Option(None, help="Interface to bind (default ROLLOUT_HOST or 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port (default ROLLOUT_PORT or 8000)."),
    workers: int | None = typer.Option(None, help="Worker processes (default 1)."),
) -> None:
    """Start the server (migrating the database first)."""
    import os

    import uvicorn

    if host:
        os.environ["ROLLOUT_HOST"] = host
    if port:
        os.environ["ROLLOUT_PORT"] = str(port)
    get_settings.cache_clear()
    settings = get_settings()
    settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
    count = workers or settings.workers
    if count > 1:
        from .db.migrate import upgrade

        upgrade(settings.resolved_database_url)
        os.environ["ROLLOUT_AUTO_MIGRATE"] = "0"
    uvicorn.run(
        "rollout_server.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=count,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=10,
    )


@app.command()
def worker(
    concurrency: int | None = typer.Option(None, help="Jobs run at once (default ROLLOUT_WORKER_CONCURRENCY or 4)."),
    poll: float | None = typer.Option(None, help="Seconds between looks for due jobs when idle."),
    once: bool = typer.Option(False, "--once", help="Drain the queue once and exit."),
    worker_id: str | None = typer.Option(None, "--id", help="Name recorded on the jobs it runs."),
) -> None:
    """Drain the job queue (scorers, S3 exports); run several on PostgreSQL to scale out."""
    import signal
    import threading

    from .common import heap
    from .scoring.worker import Worker

    ctx = _context()
    runner = Worker(ctx, worker_id=worker_id, concurrency=concurrency, poll_seconds=poll)
    heap.settle()
    console.print(f"worker [bold]{runner.worker_id}[/bold] on {_safe_url(ctx.settings)}, "
                  f"{runner.concurrency} at a time")
    try:
        if once:
            count = runner.drain(timeout=float("inf"))
            console.print(f"ran {count} jobs")
            return
        stopped = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopped.set())
        runner.start()
        while not stopped.wait(1.0):
            pass
        console.print("stopping: finishing the jobs in hand")
        runner.stop()
    finally:
        ctx.close()


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Apply migrations up to REVISION (default: head)."""
    from .db.migrate import upgrade

    settings = get_settings()
    upgrade(settings.resolved_database_url, revision)
    console.print(f"database at [bold]{_safe_url(settings)}[/bold] is at {revision}")


def _safe_url(settings: Settings) -> str:
    from sqlalchemy.engine import make_url

    return make_url(settings.resolved_database_url).render_as_string(hide_password=True)


def _context():  # type: ignore[no-untyped-def]
    from .context import AppContext
    from .db.migrate import upgrade

    settings = get_settings()
    upgrade(settings.resolved_database_url)
    return AppContext.from_settings(settings)


@workspaces_app.command("create")
def workspaces_create(name: str) -> None:
    """Create a workspace."""
    from .errors import AppError
    from .workspaces import service

    ctx = _context()
    try:
        with ctx.db.transaction() as session:
            workspace = service.create_workspace(session, name)
        print(workspace.id)
    except AppError as error:
        _fail(error.detail)


@workspaces_app.command("list")
def workspaces_list() -> None:
    """List workspaces."""
    from .workspaces.repository import WorkspaceRepository

    ctx = _context()
    with ctx.db.reading() as session:
        for workspace in WorkspaceRepository(session).list_all():
            print(f"{workspace.id}\t{workspace.name}")


@keys_app.command("create")
def keys_create(
    workspace: str = typer.Option(..., "--workspace", "-w", help="Workspace name or ID."),
    name: str = typer.Option("cli key", help="A label for the key."),
) -> None:
    """Create an API key and print it (shown only once)."""
    from .errors import AppError
    from .workspaces import service

    ctx = _context()
    try:
        with ctx.db.transaction() as session:
            found = service.resolve_workspace(session, workspace)
            created = service.create_api_key(session, found.id, name)
        print(created.secret)
    except AppError as error:
        _fail(error.detail)


@users_app.command("create")
def users_create(
    email: str = typer.Option(..., "--email"),
    password: str = typer.Option(..., "--password"),
    workspace: str | None = typer.Option(None, "--workspace", help="Add the user to this workspace."),
    role: str = typer.Option("member", "--role", help="owner, admin, member or viewer."),
) -> None:
    """Create a user, optionally adding them to a workspace with a role."""
    from .errors import AppError
    from .workspaces import service

    ctx = _context()
    try:
        with ctx.db.transaction() as session:
            user = service.create_user(session, email, password)
            if workspace:
                found = service.resolve_workspace(session, workspace)
                service.add_member(session, found.id, user.id, role)
        print(user.id)
    except AppError as error:
        _fail(error.detail)


@users_app.command("set-password")
def users_set_password(
    email: str = typer.Option(..., "--email"),
    password: str = typer.Option(..., "--password", prompt=True, hide_input=True, confirmation_prompt=True,
                                 help="Asked for (hidden, twice) when not given."),
) -> None:
    """Set a user's password (for one who forgot it); their signed-in browsers are signed out."""
    from .errors import AppError
    from .workspaces import service

    ctx = _context()
    try:
        with ctx.db.transaction() as session:
            service.set_password(session, service.find_user(session, email), password)
        print(f"password of {email.strip().lower()} changed; their sign-in sessions have ended")
    except AppError as error:
        _fail(error.detail)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""A throwaway PostgreSQL server for the test session, with cheap per-test databases.

Backends, first that applies: an existing server named by ROLLOUT_TEST_DATABASE_URL; a
`postgres:15` container when a Docker engine answers and testcontainers is installed; a
private cluster (initdb + pg_ctl) in a temp dir, run as the `postgres` user when we are root.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from tests.support.live_server import free_port

URL_ENV = "ROLLOUT_TEST_DATABASE_URL"
SUPERUSER = "postgres"
DRIVER = "postgresql+psycopg"

# fsync and friends off: a test cluster that dies with the machine is thrown away anyway.
FAST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
    "log_min_error_statement": "panic",  # tests provoke errors on purpose; keep the log short
    "timezone": "'UTC'",
}


@functools.cache
def docker_engine_available() -> bool:
    """True when `docker info` answers: the CLI being installed is not enough."""
    if shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def testcontainers_available() -> bool:
    try:
        import testcontainers.postgres  # noqa: F401
    except ImportError:
        return False
    return True


def find_pg_bin() -> Path | None:
    """Directory holding initdb and pg_ctl: PATH first, then Debian's versioned layout (newest)."""
    initdb = shutil.which("initdb")
    if initdb:
        return Path(os.path.realpath(initdb)).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(candidates[-1]).parent if candidates else None


def _unprivileged_user() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return None


def choose_backend() -> str:
    """'external', 'docker' or 'local' (an unavailable backend is reported by postgres_available_reason)."""
    if os.environ.get(URL_ENV):
        return "external"
    if docker_engine_available() and testcontainers_available():
        return "docker"
    return "local"


def postgres_available_reason() -> str | None:
    """Why no PostgreSQL server can be started here, or None when one can."""
    backend = choose_backend()
    if backend != "local":
        return None
    if find_pg_bin() is None:
        return (
            f"no PostgreSQL server: set {URL_ENV}, run a Docker engine with testcontainers installed, "
            "or install the server binaries (apt-get install postgresql-15) so initdb is found"
        )
    if os.geteuid() == 0 and _unprivileged_user() is None:
        return "running as root and there is no 'postgres' user to run initdb as (initdb refuses root)"
    if os.geteuid() == 0 and not (shutil.which("runuser") or shutil.which("setpriv")):
        return "running as root and neither runuser nor setpriv is available to drop privileges for initdb"
    return None


def _world_traversable(path: Path) -> bool:
    """True when every directory up to `path` lets other users pass (o+x)."""
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def _cluster_parent_dir() -> str:
    # As root the cluster runs as `postgres`, which cannot reach a TMPDIR such as /root/tmp.
    default = Path(tempfile.gettempdir())
    if os.geteuid() != 0 or _world_traversable(default):
        return str(default)
    return "/tmp"


def libpq_url(url: str | URL) -> str:
    """The same URL in the plain `postgresql://` form psycopg.connect and psql accept."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresServer:
    """One PostgreSQL server for the session; `create_database` gives each test its own database.

    >>> server = PostgresServer().start()
    >>> server.create_database("tmpl"); ...migrate tmpl...
    >>> url = server.create_database("test_1", template="tmpl")   # milliseconds
    >>> server.drop_database("test_1"); server.stop()
    """

    def __init__(self, backend: str | None = None, *, startup_timeout: float = 60.0) -> None:
        self.backend = backend or choose_backend()
        self.startup_timeout = startup_timeout
        self._url: URL | None = None
        self._tmpdir: Path | None = None
        self._pg_bin: Path | None = None
        self._container: Any = None
        self._atexit_registered = False
        self.startup_seconds: float | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the server's maintenance database (`postgresql+psycopg://…/postgres`)."""
        if self._url is None:
            raise RuntimeError("PostgresServer is not started; call start() first")
        return self._url.render_as_string(hide_password=False)

    def url_for(self, database: str) -> str:
        """SQLAlchemy URL of another database on this server."""
        return make_url(self.url).set(database=database).render_as_string(hide_password=False)

    def start(self) -> PostgresServer:
        if self._url is not None:
            return self
        began = time.monotonic()
        if self.backend == "external":
            self._url = make_url(os.environ[URL_ENV]).set(drivername=DRIVER)
        elif self.backend == "docker":
            self._start_container()
        elif self.backend == "local":
            reason = postgres_available_reason()
            if reason:
                raise RuntimeError(reason)
            self._start_local()
        else:
            raise ValueError(f"unknown backend {self.backend!r}; use 'external', 'docker' or 'local'")
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        self._wait_ready()
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Tear the server down (idempotent; also runs at interpreter exit)."""
        if self._container is not None:
            with contextlib.suppress(Exception):
                self._container.stop()
            self._container = None
        if self._tmpdir is not None:
            data = self._tmpdir / "data"
            if (data / "postmaster.pid").exists():
                with contextlib.suppress(Exception):
                    self._run_pg(
                        ["pg_ctl", "-D", str(data), "-m", "immediate", "-w", "-t", "30", "stop"], check=False
                    )
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        self._url = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- databases ---------------------------------------------------------------------------

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create `name` (as a copy of `template` when given) and return its SQLAlchemy URL.

        A template cannot be copied while anyone is connected to it, so other sessions on the
        template are terminated first: dispose engines that point at the template before tests.
        """
        from psycopg import errors, sql

        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
        for attempt in range(50):
            with self.connect() as conn:
                if template is not None:
                    self._terminate_sessions(conn, template)
                try:
                    conn.execute(statement)
                    break
                except errors.ObjectInUse:
                    # A terminated backend can take a few ms to leave pg_stat_activity.
                    if attempt == 49:
                        raise
            time.sleep(0.05)
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop `name` if it exists, disconnecting anyone still using it."""
        from psycopg import sql

        with self.connect() as conn:
            if self.server_version_num(conn) >= 130000:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            else:
                self._terminate_sessions(conn, name)
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))

    def database_exists(self, name: str) -> bool:
        with self.connect() as conn:
            row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
            return row is not None

    @contextlib.contextmanager
    def connect(self, database: str | None = None) -> Iterator[Any]:
        """An autocommit psycopg connection to the maintenance database (or `database`)."""
        import psycopg

        url = self.url_for(database) if database else self.url
        conn = psycopg.connect(libpq_url(url), autocommit=True, connect_timeout=10)
        try:
            yield conn
        finally:
            conn.close()

    @staticmethod
    def server_version_num(conn: Any) -> int:
        return int(conn.info.server_version)

    @staticmethod
    def _terminate_sessions(conn: Any, database: str) -> None:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        )

    # -- backends ----------------------------------------------------------------------------

    def _start_container(self) -> None:
        from testcontainers.postgres import PostgresContainer

        try:
            container = PostgresContainer("postgres:15", driver="psycopg")
        except TypeError:  # older testcontainers without the driver argument
            container = PostgresContainer("postgres:15")
        container.start()
        self._container = container
        self._url = make_url(container.get_connection_url()).set(drivername=DRIVER)

    def _start_local(self) -> None:
        self._pg_bin = find_pg_bin()
        self._tmpdir = Path(tempfile.mkdtemp(prefix="rollout-pg-", dir=_cluster_parent_dir()))
        data = self._tmpdir / "data"
        if os.geteuid() == 0:
            user = _unprivileged_user()
            assert user is not None
            os.chown(self._tmpdir, user.pw_uid, user.pw_gid)
        self._run_pg(
            ["initdb", "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C",
             "--no-sync", "--no-instructions"],
        )  # fmt: skip
        settings = {**FAST_SETTINGS, "unix_socket_directories": f"'{self._tmpdir}'"}
        with (data / "postgresql.conf").open("a") as conf:
            conf.write("\n# rollout test harness\n")
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())

        last_error = ""
        for _ in range(5):  # the free port can be taken between choosing and binding it
            port = free_port()
            result = self._run_pg(
                ["pg_ctl", "-D", str(data), "-l", str(self._tmpdir / "server.log"), "-w", "-t",
                 str(int(self.startup_timeout)), "-o", f"-p {port}", "start"],
                check=False,
            )  # fmt: skip
            if result.returncode == 0:
                self._url = URL.create(
                    DRIVER, username=SUPERUSER, host="127.0.0.1", port=port, database="postgres"
                )
                return
            last_error = result.stdout + result.stderr + self._server_log()
        self.stop()
        raise RuntimeError(f"pg_ctl could not start the test cluster:\n{last_error}")

    def _server_log(self) -> str:
        if self._tmpdir is None:
            return ""
        try:
            return (self._tmpdir / "server.log").read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def _run_pg(self, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL binary, as the `postgres` user when we are root."""
        assert self._pg_bin is not None and self._tmpdir is not None
        command = [str(self._pg_bin / argv[0]), *argv[1:]]
        if os.geteuid() == 0:
            if shutil.which("runuser"):
                command = ["runuser", "-u", "postgres", "--", *command]
            else:
                command = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *command]
        # cwd must be readable by the unprivileged user, or initdb complains about it.
        result = subprocess.run(command, cwd=self._tmpdir, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed with status {result.returncode}:\n{result.stdout}{result.stderr}"
            )
        return result

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                with psycopg.connect(libpq_url(self.url), autocommit=True, connect_timeout=5) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"PostgreSQL at {self.url} did not accept connections: {error}"
                    ) from error
                time.sleep(0.2)

"""One settings class for the whole service; every field reads `ROLLOUT_<NAME>` from the environment."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ROLLOUT_", extra="ignore")

    data_dir: Path = Field(Path(".rollout"), description="Folder for the SQLite file, local blobs and secrets.")
    database_url: str | None = Field(None, description="SQLAlchemy URL; default: SQLite file in the data folder.")
    storage_url: str | None = Field(None, description="file:///path or s3://bucket/prefix; default: data folder.")
    s3_endpoint_url: str | None = Field(None, description="Endpoint of an S3-compatible server (MinIO, moto...).")
    s3_region: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str | None = Field(None, description="Base URL users reach the server at; default http://host:port.")
    secret_key: str | None = Field(None, description="Signs sessions and encrypts stored credentials.")

    init_workspace: str = "default"
    init_api_key: str | None = None
    init_admin_email: str = "admin@rollout.local"
    init_admin_password: str | None = None
    demo: bool = True
    auto_migrate: bool = Field(True, description="Run database migrations when the server starts.")

    max_request_bytes: int = 16 * 1024 * 1024
    max_ingest_bytes: int = 4 * 1024 * 1024
    max_ingest_events: int = 1000
    max_upload_bytes: int = 5 * 1024 * 1024 * 1024
    inline_payload_bytes: int = Field(64 * 1024, description="Event payloads above this go to the blob store.")
    cors_origins: str = Field("", description="Comma-separated origins allowed to call the API from browsers.")
    login_max_failures: int = Field(5, ge=0, description="Wrong passwords for one account before its sign-in "
                                    "pauses (0: no limit); one address gets four times as many.")
    login_window_seconds: float = Field(300, gt=0, description="The window those failures are counted in.")
    db_pool_size: int = 10
    workers: int = 1

    # Background jobs (scorers, exports to S3): see scoring/worker.py.
    worker_in_process: bool = Field(True, description="Drain the job queue inside the server process; turn off "
                                    "when `rollout-server worker` processes do it (PostgreSQL deployments).")
    worker_concurrency: int = Field(4, ge=1, description="Jobs one worker runs at once (scorers mostly wait on I/O).")
    worker_poll_seconds: float = Field(0.5, gt=0, description="How often an idle worker looks for due jobs.")
    job_lease_seconds: float = Field(600, gt=0, description="A running job not finished by then is claimed again.")
    scoring_max_attempts: int = Field(3, ge=1, description="Tries per scorer before its error is final.")
    scoring_retry_seconds: float = Field(2.0, ge=0, description="First retry delay; doubles on each retry.")
    scorer_timeout_seconds: float = Field(60.0, gt=0, description="HTTP timeout of LLM-judge and webhook scorers.")

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser().resolve()

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.resolved_data_dir / 'rollout.db'}"

    @property
    def resolved_storage_url(self) -> str:
        if self.storage_url:
            return self.storage_url
        return (self.resolved_data_dir / "files").as_uri()

    def resolved_secret_key(self) -> str:
        """The configured secret, or one generated once and kept (mode 0600) in the data folder."""
        if self.secret_key:
            return self.secret_key
        import os
        import secrets

        path = self.resolved_data_dir / "secret-key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return path.read_text().strip()
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(48))
        return path.read_text().strip()

    @property
    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"


@lru_cache
def get_settings() -> Settings:
    return Settings()

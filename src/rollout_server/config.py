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
    db_pool_size: int = 10
    workers: int = 1

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

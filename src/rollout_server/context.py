"""What a running server holds: settings, the database, the blob store. Built once per app."""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import Settings
from .db.session import Database, open_database
from .storage import BlobStore, open_blob_store


@dataclass
class AppContext:
    settings: Settings
    db: Database
    store: BlobStore
    closers: list[object] = field(default_factory=list)

    @classmethod
    def from_settings(cls, settings: Settings) -> AppContext:
        db = open_database(settings.resolved_database_url, pool_size=settings.db_pool_size)
        store = open_blob_store(
            settings.resolved_storage_url, s3_endpoint_url=settings.s3_endpoint_url, s3_region=settings.s3_region
        )
        return cls(settings=settings, db=db, store=store)

    def close(self) -> None:
        self.db.dispose()

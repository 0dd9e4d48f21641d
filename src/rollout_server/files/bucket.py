"""Files from the workspace's connected S3-compatible bucket: reference an object in place, or import it.

A referenced file is a row whose `external_key` names the object; its SHA-256 is computed by reading the
object once (nothing is copied), and its bytes are always read from that bucket. An imported file is
copied into the content-addressed store like an upload, so the same bytes are stored once per workspace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy.orm import Session

from ..context import AppContext
from ..errors import InvalidInput, NotFound
from ..ids import new_id
from ..models import File, WorkspaceStorage
from ..storage.base import CHUNK, blob_key, ingest_stream
from ..storage.s3 import S3BlobStore
from .repository import FileRepository
from .service import clean_file_name, guess_media_type, record_upload


def workspace_bucket(session: Session, secret: str, workspace_id: str) -> S3BlobStore:
    """The workspace's connected bucket, addressed from its root (object keys are used as given)."""
    # The settings page owns the encryption; imported here so the files feature does not load the UI package.
    from ..ui.storage_settings import decrypt

    saved = session.get(WorkspaceStorage, workspace_id)
    if saved is None:
        raise InvalidInput("This workspace has no connected bucket; connect one in Settings → Storage first.",
                           field="key")
    access = decrypt(secret, saved.access_key_id_encrypted) if saved.access_key_id_encrypted else None
    secret_key = decrypt(secret, saved.secret_access_key_encrypted) if saved.secret_access_key_encrypted else None
    return S3BlobStore(saved.bucket, "", endpoint_url=saved.endpoint_url, region=saved.region,
                       access_key_id=access, secret_access_key=secret_key)


def _object_chunks(bucket: S3BlobStore, key: str) -> Iterator[bytes]:
    try:
        yield from bucket.iter_bytes(key, CHUNK)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code in ("404", "NoSuchKey", "NotFound"):
            raise NotFound(f"No object '{key}' in bucket '{bucket.bucket}'.",
                           errors=[{"field": "key", "message": "no such object"}]) from error
        raise InvalidInput(f"Cannot read '{key}' from bucket '{bucket.bucket}': {error}.", field="key") from error
    except BotoCoreError as error:
        raise InvalidInput(f"Cannot reach bucket '{bucket.bucket}': {error}.", field="key") from error


def add_from_bucket(ctx: AppContext, session: Session, workspace_id: str, key: str, name: str | None,
                    mode: str) -> File:
    bucket = workspace_bucket(session, ctx.settings.resolved_secret_key(), workspace_id)
    file_name = clean_file_name(name or key)
    media_type = guess_media_type(file_name, None)
    if mode == "import":
        blob = ingest_stream(ctx.store, workspace_id, _object_chunks(bucket, key),
                             max_bytes=ctx.settings.max_upload_bytes)
        return record_upload(session, workspace_id, blob, file_name, media_type)
    digest, size = hashlib.sha256(), 0
    for chunk in _object_chunks(bucket, key):
        digest.update(chunk)
        size += len(chunk)
    sha = digest.hexdigest()
    repo = FileRepository(session)
    existing = repo.find_reference(workspace_id, key, sha, file_name)
    if existing is not None:
        return existing
    return repo.add(File(id=new_id("file"), workspace_id=workspace_id, name=file_name, media_type=media_type,
                         size=size, sha256=sha, external_key=key))


class FileReader:
    """Bytes of a workspace's files, from the blob store or (for references) the connected bucket."""

    def __init__(self, ctx: AppContext, workspace_id: str) -> None:
        self.ctx = ctx
        self.workspace_id = workspace_id
        self._bucket: S3BlobStore | None = None

    def chunks(self, file: File) -> Iterator[bytes]:
        if file.external_key is None:
            return self.ctx.store.iter_bytes(blob_key(self.workspace_id, file.sha256), CHUNK)
        if self._bucket is None:
            with self.ctx.db.reading() as session:
                self._bucket = workspace_bucket(session, self.ctx.settings.resolved_secret_key(), self.workspace_id)
        return _object_chunks(self._bucket, file.external_key)

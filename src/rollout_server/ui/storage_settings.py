"""Per-workspace S3 settings: save (credentials encrypted with a key derived from the server secret),
read back without the secrets, and test the connection by writing and deleting a probe object."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy.orm import Session

from ..db.types import utcnow
from ..errors import InvalidInput
from ..models import WorkspaceStorage
from ..storage.s3 import S3BlobStore


def _fernet(secret: str) -> Fernet:
    # A key of its own for this use, so it never equals the session-signing key.
    digest = hashlib.sha256(b"rollout-storage-credentials-v1:" + secret.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(secret: str, value: str) -> str:
    return _fernet(secret).encrypt(value.encode()).decode()


def decrypt(secret: str, token: str) -> str:
    try:
        return _fernet(secret).decrypt(token.encode()).decode()
    except InvalidToken as error:
        raise InvalidInput("The stored credentials cannot be decrypted: the server secret changed. "
                           "Enter the access key again.", field="secret_access_key") from error


@dataclass
class StorageForm:
    endpoint_url: str | None
    region: str | None
    bucket: str
    prefix: str
    access_key_id: str | None
    secret_access_key: str | None


def parse_form(values: dict[str, str]) -> StorageForm:
    bucket = values.get("bucket", "").strip()
    if not bucket:
        raise InvalidInput("A bucket name is needed (e.g. rollout-data).", field="bucket")
    endpoint = values.get("endpoint_url", "").strip() or None
    if endpoint and not endpoint.startswith(("http://", "https://")):
        raise InvalidInput(f"The endpoint must be an http(s) URL like https://s3.example.com, not '{endpoint}'.",
                           field="endpoint_url")
    return StorageForm(endpoint_url=endpoint, region=values.get("region", "").strip() or None, bucket=bucket,
                       prefix=values.get("prefix", "").strip().strip("/"),
                       access_key_id=values.get("access_key_id", "").strip() or None,
                       secret_access_key=values.get("secret_access_key", "").strip() or None)


def get_settings(session: Session, workspace_id: str) -> WorkspaceStorage | None:
    return session.get(WorkspaceStorage, workspace_id)


def save_settings(session: Session, secret: str, workspace_id: str, form: StorageForm,
                  user_id: str) -> WorkspaceStorage:
    """Blank credential fields keep the stored ones, so saving the form never needs the secret again."""
    row = session.get(WorkspaceStorage, workspace_id)
    if row is None:
        row = WorkspaceStorage(workspace_id=workspace_id, bucket=form.bucket, prefix=form.prefix)
        session.add(row)
    row.endpoint_url, row.region, row.bucket, row.prefix = form.endpoint_url, form.region, form.bucket, form.prefix
    if form.access_key_id:
        row.access_key_id_encrypted = encrypt(secret, form.access_key_id)
    if form.secret_access_key:
        row.secret_access_key_encrypted = encrypt(secret, form.secret_access_key)
    row.updated_at = utcnow()
    row.updated_by = user_id
    session.flush()
    return row


def open_store(secret: str, form: StorageForm, saved: WorkspaceStorage | None) -> S3BlobStore:
    access = form.access_key_id or (decrypt(secret, saved.access_key_id_encrypted)
                                    if saved and saved.access_key_id_encrypted else None)
    secret_key = form.secret_access_key or (decrypt(secret, saved.secret_access_key_encrypted)
                                            if saved and saved.secret_access_key_encrypted else None)
    store = S3BlobStore(form.bucket, form.prefix, endpoint_url=form.endpoint_url, region=form.region,
                        access_key_id=access, secret_access_key=secret_key)
    # A settings page waits on this: fail in seconds, not after the store's five patient retries.
    kwargs: dict[str, Any] = {"endpoint_url": form.endpoint_url, "region_name": form.region or "us-east-1",
              "config": Config(signature_version="s3v4", connect_timeout=5, read_timeout=10,
                               retries={"max_attempts": 1, "mode": "standard"})}
    if access:
        kwargs.update(aws_access_key_id=access, aws_secret_access_key=secret_key)
    store.client = boto3.client("s3", **kwargs)
    return store


def test_connection(store: S3BlobStore) -> str | None:
    """None when a probe object can be written and deleted, else what went wrong, for people."""
    try:
        store.check()
    except Exception as error:  # boto raises many kinds; all mean "cannot use this bucket"
        text = str(error) or error.__class__.__name__
        return f"Cannot write to s3://{store.bucket}/{store.prefix}: {text[:300]}"
    return None

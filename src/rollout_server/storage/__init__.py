"""Blob store: content-addressed bytes in a local folder or any S3-compatible bucket."""

from .base import BlobStore, StoredBlob, blob_key, ingest_stream
from .factory import open_blob_store

__all__ = ["BlobStore", "StoredBlob", "blob_key", "ingest_stream", "open_blob_store"]

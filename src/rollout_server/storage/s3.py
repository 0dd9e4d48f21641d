"""Blob store in an S3-compatible bucket (AWS, MinIO, moto...) through boto3; multipart for large objects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any
from urllib.parse import quote

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from .base import CHUNK

_TRANSFER = TransferConfig(multipart_threshold=16 * 1024 * 1024, multipart_chunksize=16 * 1024 * 1024)


class S3BlobStore:
    name = "s3"

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        kwargs: dict[str, Any] = {
            "endpoint_url": endpoint_url,
            "region_name": region or "us-east-1",
            "config": Config(signature_version="s3v4", retries={"max_attempts": 5, "mode": "standard"}),
        }
        if access_key_id:
            kwargs["aws_access_key_id"] = access_key_id
            kwargs["aws_secret_access_key"] = secret_access_key
        self.client = boto3.client("s3", **kwargs)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    def put(self, key: str, source: IO[bytes], size: int) -> None:
        self.client.upload_fileobj(source, self.bucket, self._key(key), Config=_TRANSFER)

    def iter_bytes(self, key: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
        try:
            yield from body.iter_chunks(chunk_size)
        finally:
            body.close()

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def presigned_url(self, key: str, *, filename: str, media_type: str, expires_in: int = 3600) -> str | None:
        return str(
            self.client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self.bucket,
                    "Key": self._key(key),
                    "ResponseContentDisposition": f"attachment; filename*=UTF-8''{quote(filename)}",
                    "ResponseContentType": media_type,
                },
                ExpiresIn=expires_in,
            )
        )

    def check(self) -> None:
        probe = self._key(".probe")
        self.client.put_object(Bucket=self.bucket, Key=probe, Body=b"ok")
        self.client.delete_object(Bucket=self.bucket, Key=probe)

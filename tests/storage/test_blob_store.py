"""The blob store on a local folder and on S3 (moto on loopback): content addressing, streaming, presigned
URLs, URL parsing; then the files API on both stores and both databases."""

from __future__ import annotations

import hashlib
import io
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from rollout_server.config import Settings
from rollout_server.context import AppContext
from rollout_server.storage import BlobStore, blob_key, ingest_stream, open_blob_store
from rollout_server.storage.base import ingest_async_stream, ingest_file
from rollout_server.storage.local import LocalBlobStore
from rollout_server.storage.s3 import S3BlobStore
from tests.conftest import create_tenant, make_settings
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, S3Server

MB = 1024 * 1024
WS = "ws_alpha"
WS_OTHER = "ws_beta"

STORE_KINDS = ["local", pytest.param("s3", marks=pytest.mark.s3)]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_bucket(s3_server: S3Server) -> str:
    return s3_server.create_bucket(f"blobs-{uuid.uuid4().hex[:12]}")


def empty_bucket(s3_server: S3Server, bucket: str) -> None:
    """Free moto's memory: it keeps every object for the whole session otherwise."""
    client = s3_server.client()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=item["Key"])


@dataclass
class StoreUnderTest:
    store: BlobStore
    list_keys: Callable[[], list[str]]  # every stored object, relative to the store's root or prefix


def local_keys(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def s3_keys(s3_server: S3Server, bucket: str, prefix: str) -> list[str]:
    client = s3_server.client()
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            assert item["Key"].startswith(prefix + "/"), f"object {item['Key']!r} outside the prefix {prefix!r}"
            keys.append(item["Key"][len(prefix) + 1 :])
    return sorted(keys)


@pytest.fixture(params=STORE_KINDS)
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    if request.param == "local":
        root = tmp_path / "blobs"
        yield StoreUnderTest(LocalBlobStore(root), lambda: local_keys(root))
        return
    s3_server: S3Server = request.getfixturevalue("s3_server")
    bucket = new_bucket(s3_server)
    store = S3BlobStore(
        bucket, "/rollout/blobs/", endpoint_url=s3_server.endpoint_url,
        access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
    )  # fmt: skip
    yield StoreUnderTest(store, lambda: s3_keys(s3_server, bucket, "rollout/blobs"))
    empty_bucket(s3_server, bucket)


def read_all(store: BlobStore, key: str) -> bytes:
    return b"".join(store.iter_bytes(key))


def generated_chunks(total: int, chunk: int = MB) -> Iterator[bytes]:
    """Distinct, non-repeating-looking chunks without holding `total` bytes anywhere."""
    for index in range(total // chunk):
        seed = hashlib.sha256(index.to_bytes(8, "big")).digest()
        yield seed * (chunk // len(seed))


# -- the store itself ----------------------------------------------------------------------------


def test_ingest_returns_sha256_and_size(blobs: StoreUnderTest) -> None:
    data = b"hello rollout\n" * 1000

    blob = ingest_stream(blobs.store, WS, [data[:100], data[100:]])

    assert (blob.sha256, blob.size) == (sha(data), len(data))
    key = blob_key(WS, blob.sha256)
    assert key == f"{WS}/sha256/{blob.sha256[:2]}/{blob.sha256}"
    assert blobs.list_keys() == [key]
    assert read_all(blobs.store, key) == data


def test_empty_stream_is_a_valid_blob(blobs: StoreUnderTest) -> None:
    blob = ingest_stream(blobs.store, WS, [])

    assert (blob.sha256, blob.size) == (sha(b""), 0)
    assert blobs.store.exists(blob_key(WS, blob.sha256))
    assert read_all(blobs.store, blob_key(WS, blob.sha256)) == b""


def test_same_bytes_twice_are_stored_once(blobs: StoreUnderTest) -> None:
    data = b"same bytes"

    first = ingest_stream(blobs.store, WS, [data])
    second = ingest_file(blobs.store, WS, io.BytesIO(data))

    assert first == second
    assert blobs.list_keys() == [blob_key(WS, sha(data))]


def test_same_bytes_in_two_workspaces_are_stored_in_each(blobs: StoreUnderTest) -> None:
    data = b"shared between workspaces"

    ingest_stream(blobs.store, WS, [data])
    ingest_stream(blobs.store, WS_OTHER, [data])

    assert blobs.list_keys() == sorted([blob_key(WS, sha(data)), blob_key(WS_OTHER, sha(data))])
    assert read_all(blobs.store, blob_key(WS_OTHER, sha(data))) == data


def test_iter_bytes_honours_the_chunk_size(blobs: StoreUnderTest) -> None:
    data = bytes(range(256)) * 40  # 10,240 bytes
    key = blob_key(WS, ingest_stream(blobs.store, WS, [data]).sha256)

    chunks = list(blobs.store.iter_bytes(key, chunk_size=4096))

    assert b"".join(chunks) == data
    assert all(len(chunk) <= 4096 for chunk in chunks)
    assert len(chunks) >= 3


def test_multi_chunk_stream_of_40_mb(blobs: StoreUnderTest) -> None:
    """On S3 this is above the 16 MB multipart threshold, so the upload goes in parts."""
    expected = hashlib.sha256()
    size = 0

    def counted() -> Iterator[bytes]:
        nonlocal size
        for chunk in generated_chunks(40 * MB):
            expected.update(chunk)
            size += len(chunk)
            yield chunk

    blob = ingest_stream(blobs.store, WS, counted())

    assert (blob.sha256, blob.size) == (expected.hexdigest(), 40 * MB)
    key = blob_key(WS, blob.sha256)
    readback = hashlib.sha256()
    for chunk in blobs.store.iter_bytes(key):
        readback.update(chunk)
    assert readback.hexdigest() == blob.sha256
    if isinstance(blobs.store, S3BlobStore):
        head = blobs.store.client.head_object(Bucket=blobs.store.bucket, Key=blobs.store._key(key))
        assert head["ContentLength"] == 40 * MB
        assert head["ETag"].strip('"').endswith("-3"), f"expected a 3-part multipart ETag, got {head['ETag']}"


async def test_async_stream_ingest(blobs: StoreUnderTest) -> None:
    parts = [b"a" * 1000, b"", b"b" * 2000]

    async def chunks() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    blob = await ingest_async_stream(blobs.store, WS, chunks())

    assert (blob.sha256, blob.size) == (sha(b"".join(parts)), 3000)
    assert read_all(blobs.store, blob_key(WS, blob.sha256)) == b"".join(parts)


def test_stream_over_the_limit_stores_nothing(blobs: StoreUnderTest) -> None:
    with pytest.raises(ValueError, match="exceeds the limit of 1000 bytes"):
        ingest_stream(blobs.store, WS, [b"x" * 600, b"x" * 600], max_bytes=1000)

    assert blobs.list_keys() == []


def test_exists_and_delete(blobs: StoreUnderTest) -> None:
    key = blob_key(WS, ingest_stream(blobs.store, WS, [b"to delete"]).sha256)
    assert blobs.store.exists(key)
    assert not blobs.store.exists(blob_key(WS, sha(b"never stored")))

    blobs.store.delete(key)

    assert not blobs.store.exists(key)
    assert blobs.list_keys() == []
    blobs.store.delete(key)  # deleting a missing blob is not an error


def test_check_succeeds_and_leaves_nothing_behind(blobs: StoreUnderTest) -> None:
    blobs.store.check()

    assert blobs.list_keys() == []


def test_presigned_url(blobs: StoreUnderTest) -> None:
    data = b"downloaded directly from the store"
    key = blob_key(WS, ingest_stream(blobs.store, WS, [data]).sha256)

    url = blobs.store.presigned_url(key, filename="résumé report.txt", media_type="text/plain", expires_in=60)

    if isinstance(blobs.store, LocalBlobStore):
        assert url is None
        return
    assert url is not None and "X-Amz-Signature=" in url
    with httpx.Client(trust_env=False) as client:
        response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.content == data
    assert response.headers["content-type"].startswith("text/plain")
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20report.txt" in response.headers["content-disposition"]


@pytest.mark.s3
def test_s3_check_fails_on_a_missing_bucket(s3_server: S3Server) -> None:
    store = S3BlobStore(
        f"missing-{uuid.uuid4().hex[:8]}", endpoint_url=s3_server.endpoint_url,
        access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
    )  # fmt: skip
    with pytest.raises(Exception, match=r"NoSuchBucket|does not exist"):
        store.check()


def test_local_check_fails_when_the_root_is_not_writable(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    store = LocalBlobStore(root)
    root.rmdir()
    root.write_bytes(b"a file where the folder should be")

    with pytest.raises(OSError):
        store.check()


@pytest.mark.parametrize(
    "key",
    ["../outside", "ws/../../outside", "/etc/passwd", "", ".", "ws/sha256/../../.."],
)
def test_local_keys_cannot_escape_the_root(tmp_path: Path, key: str) -> None:
    store = LocalBlobStore(tmp_path / "blobs")

    with pytest.raises(ValueError, match="escapes the store"):
        store.put(key, io.BytesIO(b"x"), 1)
    with pytest.raises(ValueError, match="escapes the store"):
        store.exists(key)
    with pytest.raises(ValueError, match="escapes the store"):
        list(store.iter_bytes(key))
    with pytest.raises(ValueError, match="escapes the store"):
        store.delete(key)
    assert not (tmp_path / "outside").exists()


def test_local_key_through_a_symlink_cannot_escape(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    store = LocalBlobStore(tmp_path / "blobs")
    (tmp_path / "blobs" / "link").symlink_to(outside)

    with pytest.raises(ValueError, match="escapes the store"):
        store.put("link/file", io.BytesIO(b"x"), 1)
    assert list(outside.iterdir()) == []


# -- storage URLs --------------------------------------------------------------------------------


def test_file_urls_and_plain_paths_open_a_local_store(tmp_path: Path) -> None:
    spaced = tmp_path / "with space" / "files"

    from_url = open_blob_store(spaced.as_uri())
    from_path = open_blob_store(str(tmp_path / "plain"))

    assert isinstance(from_url, LocalBlobStore) and from_url.root == spaced
    assert spaced.is_dir()
    assert isinstance(from_path, LocalBlobStore) and from_path.root == tmp_path / "plain"
    from_localhost = open_blob_store(f"file://localhost{tmp_path / 'local'}")
    assert isinstance(from_localhost, LocalBlobStore) and from_localhost.root == tmp_path / "local"
    blob = ingest_stream(from_url, WS, [b"via file url"])
    assert (spaced / blob_key(WS, blob.sha256)).read_bytes() == b"via file url"


def test_file_url_with_a_host_part_is_refused(tmp_path: Path) -> None:
    # `file://data/files` reads as host "data", path "/files": refused rather than landing at /files.
    with pytest.raises(ValueError, match="file://"):
        open_blob_store(f"file://data{tmp_path / 'files'}")


@pytest.mark.s3
def test_s3_url_opens_an_s3_store(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    bucket = new_bucket(s3_server)

    store = open_blob_store(f"s3://{bucket}/some/prefix/", s3_endpoint_url=s3_server.endpoint_url)

    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix) == (bucket, "some/prefix")
    store.check()
    blob = ingest_stream(store, WS, [b"via s3 url"])
    assert s3_keys(s3_server, bucket, "some/prefix") == [blob_key(WS, blob.sha256)]
    assert read_all(store, blob_key(WS, blob.sha256)) == b"via s3 url"


def test_s3_url_without_prefix_uses_the_bucket_root() -> None:
    store = open_blob_store("s3://only-bucket", s3_endpoint_url="http://127.0.0.1:9")

    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix, store._key("k")) == ("only-bucket", "", "k")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("s3:///prefix-only", "names no bucket"),
        ("s3://", "names no bucket"),
        ("ftp://host/files", "unsupported storage URL 'ftp://host/files'"),
        ("http://example.com/bucket", "use file:///path or s3://bucket/prefix"),
        ("gs://bucket/prefix", "unsupported storage URL"),
    ],
)
def test_bad_storage_urls_raise_a_clear_error(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("?", r"\?")):
        open_blob_store(url)


# -- the files API on both stores ----------------------------------------------------------------


@dataclass
class FilesApi:
    client: httpx.AsyncClient
    ctx: AppContext
    workspace_id: str
    list_keys: Callable[[], list[str]]
    s3_endpoint: str | None


def build_context(
    kind: str,
    db_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    **overrides: Any,
) -> tuple[AppContext, Callable[[], list[str]], str | None]:
    """An AppContext on the local store or on a fresh S3 bucket, and a way to list what the store holds."""
    data_dir = tmp_path / "data"
    if kind == "local":
        settings = make_settings(db_url, data_dir, **overrides)
        root = data_dir / "files"
        return AppContext.from_settings(settings), lambda: local_keys(root), None
    s3_server: S3Server = request.getfixturevalue("s3_server")
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    bucket = new_bucket(s3_server)
    request.addfinalizer(lambda: empty_bucket(s3_server, bucket))
    settings = Settings(
        storage_url=f"s3://{bucket}/prefix", s3_endpoint_url=s3_server.endpoint_url, database_url=db_url,
        data_dir=data_dir, demo=False, auto_migrate=False, public_url="http://testserver", **overrides,
    )  # fmt: skip
    return (
        AppContext.from_settings(settings),
        lambda: s3_keys(s3_server, bucket, "prefix"),
        s3_server.endpoint_url,
    )


async def client_for(ctx: AppContext, secret: str) -> httpx.AsyncClient:
    from rollout_server.app import create_app

    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(context=ctx)), base_url="http://testserver",
        headers={"authorization": f"Bearer {secret}"},
    )  # fmt: skip


@pytest.fixture(params=STORE_KINDS)
async def files_api(
    request: pytest.FixtureRequest, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FilesApi]:
    ctx, list_keys, endpoint = build_context(request.param, db_url, tmp_path, request, monkeypatch)
    workspace_id, secret = create_tenant(ctx)
    try:
        async with await client_for(ctx, secret) as client:
            yield FilesApi(client, ctx, workspace_id, list_keys, endpoint)
    finally:
        ctx.close()


async def test_multipart_upload_metadata_and_download(files_api: FilesApi) -> None:
    data = b"line one\nline two\n"

    created = await files_api.client.post("/api/v1/files", files={"file": ("notes.txt", data, "text/plain")})

    assert created.status_code == 201, created.text
    body = created.json()
    assert body["name"] == "notes.txt"
    assert body["media_type"] == "text/plain"
    assert (body["size"], body["sha256"]) == (len(data), sha(data))
    assert body["id"].startswith("file")
    assert body["download_path"] == f"/api/v1/files/{body['id']}/content"

    meta = await files_api.client.get(f"/api/v1/files/{body['id']}")
    assert meta.status_code == 200
    assert meta.json() == body

    download = await files_api.client.get(body["download_path"])
    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"].startswith("text/plain")
    assert download.headers["content-length"] == str(len(data))
    assert download.headers["x-content-sha256"] == sha(data)
    assert 'filename="notes.txt"' in download.headers["content-disposition"]
    assert files_api.list_keys() == [blob_key(files_api.workspace_id, sha(data))]


async def test_raw_body_upload_and_download(files_api: FilesApi) -> None:
    data = b'{"question": "2+2", "answer": 4}'

    created = await files_api.client.post(
        "/api/v1/files",
        params={"name": "task.json"},
        content=data,
        headers={"content-type": "application/json"},
    )

    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["name"], body["media_type"], body["size"], body["sha256"]) == (
        "task.json", "application/json", len(data), sha(data),
    )  # fmt: skip
    download = await files_api.client.get(f"/api/v1/files/{body['id']}/content")
    assert download.content == data


async def test_raw_streamed_body_of_several_chunks(files_api: FilesApi) -> None:
    expected = hashlib.sha256()

    async def body() -> AsyncIterator[bytes]:
        for chunk in generated_chunks(3 * MB, 256 * 1024):
            expected.update(chunk)
            yield chunk

    created = await files_api.client.post(
        "/api/v1/files", params={"name": "weights.bin"}, content=body(),
        headers={"content-type": "application/octet-stream"},
    )  # fmt: skip

    assert created.status_code == 201, created.text
    assert (created.json()["size"], created.json()["sha256"]) == (3 * MB, expected.hexdigest())
    assert created.json()["media_type"] == "application/octet-stream"
    readback = hashlib.sha256()
    async with files_api.client.stream("GET", f"/api/v1/files/{created.json()['id']}/content") as response:
        async for chunk in response.aiter_bytes():
            readback.update(chunk)
    assert readback.hexdigest() == expected.hexdigest()


async def test_media_type_is_guessed_from_the_name_when_not_declared(files_api: FilesApi) -> None:
    created = await files_api.client.post(
        "/api/v1/files", params={"name": "page.html"}, content=b"<p>hi</p>",
        headers={"content-type": "application/octet-stream"},
    )  # fmt: skip

    assert created.json()["media_type"] == "text/html"


async def test_direct_url_and_redirect(files_api: FilesApi) -> None:
    data = b"fetch me directly"
    created = await files_api.client.post(
        "/api/v1/files", params={"name": "direct.txt"}, content=data, headers={"content-type": "text/plain"}
    )
    file_id = created.json()["id"]

    url = await files_api.client.get(f"/api/v1/files/{file_id}/url")
    redirect = await files_api.client.get(f"/api/v1/files/{file_id}/content", params={"redirect": "true"})

    assert url.status_code == 200, url.text
    if files_api.s3_endpoint is None:
        assert url.json() == {"url": f"http://testserver/api/v1/files/{file_id}/content", "expires_in": None}
        assert redirect.status_code == 200
        assert redirect.content == data
        return
    presigned = url.json()["url"]
    assert presigned.startswith(files_api.s3_endpoint + "/")
    assert url.json()["expires_in"] == 3600
    assert redirect.status_code == 307
    assert redirect.headers["location"].startswith(files_api.s3_endpoint + "/")
    with httpx.Client(trust_env=False) as direct:
        for target in (presigned, redirect.headers["location"]):
            response = direct.get(target)
            assert response.status_code == 200, response.text
            assert response.content == data
            assert "filename*=UTF-8''direct.txt" in response.headers["content-disposition"]


async def test_same_bytes_uploaded_twice_are_one_blob(files_api: FilesApi) -> None:
    data = b"identical bytes, uploaded again"

    first = await files_api.client.post("/api/v1/files", files={"file": ("a.txt", data, "text/plain")})
    again = await files_api.client.post("/api/v1/files", files={"file": ("a.txt", data, "text/plain")})
    renamed = await files_api.client.post(
        "/api/v1/files", params={"name": "b.txt"}, content=data, headers={"content-type": "text/plain"}
    )

    assert [r.status_code for r in (first, again, renamed)] == [201, 201, 201]
    assert again.json()["id"] == first.json()["id"], "same bytes and name give the same file"
    assert renamed.json()["id"] != first.json()["id"]
    assert renamed.json()["sha256"] == first.json()["sha256"]
    assert files_api.list_keys() == [blob_key(files_api.workspace_id, sha(data))]
    for response in (first, renamed):
        download = await files_api.client.get(f"/api/v1/files/{response.json()['id']}/content")
        assert download.content == data


async def test_same_bytes_in_another_workspace_are_stored_there_and_stay_private(files_api: FilesApi) -> None:
    data = b"both workspaces upload this"
    other_workspace, other_secret = create_tenant(files_api.ctx)
    mine = await files_api.client.post("/api/v1/files", params={"name": "x.txt"}, content=data)

    async with await client_for(files_api.ctx, other_secret) as other:
        theirs = await other.post("/api/v1/files", params={"name": "x.txt"}, content=data)
        assert theirs.status_code == 201
        assert theirs.json()["id"] != mine.json()["id"]
        for path in ("", "/content", "/url"):
            response = await other.get(f"/api/v1/files/{mine.json()['id']}{path}")
            missing = await other.get(f"/api/v1/files/file_doesnotexist{path}")
            assert response.status_code == missing.status_code == 404
            assert response.json()["title"] == missing.json()["title"]

    assert files_api.list_keys() == sorted(
        [blob_key(files_api.workspace_id, sha(data)), blob_key(other_workspace, sha(data))]
    )


NAMES_TO_CLEAN = [
    ("../../etc/passwd", "passwd"),
    ("..\\..\\windows\\system32\\evil.dll", "evil.dll"),
    ("/absolute/path/report.pdf", "report.pdf"),
    ("bell\x07and\x00nul\nnewline.txt", "bellandnulnewline.txt"),
    ("  spaced name.txt  ", "spaced name.txt"),
    ("ünïcödé.txt", "ünïcödé.txt"),
]


def multipart_body(filename: str, data: bytes, boundary: str = "rollout-test-boundary") -> tuple[bytes, str]:
    """Built by hand: httpx would percent-encode control characters in a multipart filename."""
    head = f'--{boundary}\r\ncontent-disposition: form-data; name="file"; filename="{filename}"\r\n'
    body = head.encode() + b"content-type: text/plain\r\n\r\n" + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


async def test_file_names_are_cleaned_to_a_base_name(files_api: FilesApi) -> None:
    for given, cleaned in NAMES_TO_CLEAN:
        raw = await files_api.client.post("/api/v1/files", params={"name": given}, content=b"x")
        form, content_type = multipart_body(given.replace("\n", ""), b"y")
        multipart = await files_api.client.post("/api/v1/files", content=form, headers={"content-type": content_type})

        assert raw.status_code == 201, (given, raw.text)
        assert raw.json()["name"] == cleaned
        assert multipart.status_code == 201, (given, multipart.text)
        assert multipart.json()["name"] == cleaned
        download = await files_api.client.get(f"/api/v1/files/{raw.json()['id']}/content")
        assert download.status_code == 200
        assert "/" not in download.headers["content-disposition"].split("filename*=")[0]


async def test_upload_without_a_usable_name_is_refused(files_api: FilesApi) -> None:
    for name in [None, "", "..", "dir/", "\x00\x01"]:
        params = {} if name is None else {"name": name}

        response = await files_api.client.post("/api/v1/files", params=params, content=b"bytes")

        assert response.status_code == 422, (name, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert "name" in response.json()["detail"]
    assert files_api.list_keys() == [], "a refused upload must not leave a blob behind"


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_upload_over_the_limit_is_refused_and_stores_nothing(
    kind: str,
    sqlite_url: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx, list_keys, _ = build_context(kind, sqlite_url, tmp_path, request, monkeypatch, max_upload_bytes=1000)
    _, secret = create_tenant(ctx)

    async def streamed() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"z" * 500

    try:
        async with await client_for(ctx, secret) as client:
            declared = await client.post("/api/v1/files", params={"name": "big.bin"}, content=b"z" * 2000)
            chunked = await client.post("/api/v1/files", params={"name": "big.bin"}, content=streamed())
            within = await client.post("/api/v1/files", params={"name": "ok.bin"}, content=b"z" * 1000)
    finally:
        ctx.close()

    for response in (declared, chunked):
        assert response.status_code == 413, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert "1000 bytes" in response.json()["detail"]
    assert within.status_code == 201
    assert len(list_keys()) == 1

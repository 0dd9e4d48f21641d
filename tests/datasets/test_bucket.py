"""Files from the workspace's connected bucket: referenced in place or imported, and exported with datasets."""

from __future__ import annotations

import io
import uuid
import zipfile

import boto3

from rollout_server.context import AppContext
from rollout_server.ui.storage_settings import StorageForm, save_settings
from tests.api.factories import assert_problem, create_dataset
from tests.conftest import Tenant
from tests.datasets.helpers import API
from tests.support.s3 import S3Server


async def test_reference_and_import_objects_of_the_connected_bucket(api: Tenant, ctx: AppContext,
                                                                    s3_server: S3Server) -> None:
    missing = await api.client.post(f"{API}/files/from-bucket", json={"key": "x"})
    assert_problem(missing, 422, "key")

    bucket = s3_server.create_bucket(f"ds-{uuid.uuid4().hex[:8]}")
    env = s3_server.env()
    data = b"forty pages of PDF" * 1000
    s3 = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name="us-east-1",
                      aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "test"),
                      aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "test"))
    s3.put_object(Bucket=bucket, Key="papers/big.pdf", Body=data)
    with ctx.db.transaction() as session:
        save_settings(session, ctx.settings.resolved_secret_key(), api.workspace_id, StorageForm(
            endpoint_url=s3_server.endpoint_url, region="us-east-1", bucket=bucket, prefix="rollout",
            access_key_id=env.get("AWS_ACCESS_KEY_ID", "test"),
            secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "test")), user_id=None)  # type: ignore[arg-type]

    ref = await api.client.post(f"{API}/files/from-bucket", json={"key": "papers/big.pdf"})
    assert ref.status_code == 201, ref.text
    assert ref.json()["external_key"] == "papers/big.pdf" and ref.json()["name"] == "big.pdf"
    assert (await api.client.get(f"{API}/files/{ref.json()['id']}/content")).content == data
    assert (await api.client.post(f"{API}/files/from-bucket", json={"key": "papers/big.pdf"})).json()["id"] == \
        ref.json()["id"]

    imported = await api.client.post(f"{API}/files/from-bucket", json={"key": "papers/big.pdf", "mode": "import"})
    assert imported.status_code == 201 and imported.json()["external_key"] is None
    assert imported.json()["sha256"] == ref.json()["sha256"]
    assert (await api.client.get(f"{API}/files/{imported.json()['id']}/content")).content == data

    absent = await api.client.post(f"{API}/files/from-bucket", json={"key": "papers/none.pdf"})
    assert_problem(absent, 404, "key")

    dataset = await create_dataset(api.client, tasks=[{"key": "t", "files": [ref.json()["id"]]}])
    exported = await api.client.get(f"{API}/datasets/{dataset['id']}/export")
    archive = zipfile.ZipFile(io.BytesIO(exported.content))
    assert archive.read(f"files/{ref.json()['sha256']}/big.pdf") == data

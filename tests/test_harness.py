"""Proves the test harness itself: the throwaway PostgreSQL server and the loopback S3 server."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.support.postgres import PostgresServer, libpq_url
from tests.support.s3 import S3Server


@pytest.mark.postgres
def test_postgres_database_from_template_is_usable(postgres_server: PostgresServer) -> None:
    template = f"tmpl_{uuid.uuid4().hex[:8]}"
    postgres_server.create_database(template)
    with psycopg.connect(libpq_url(postgres_server.url_for(template)), autocommit=True) as conn:
        conn.execute("CREATE TABLE marker (value text)")
        conn.execute("INSERT INTO marker VALUES ('from the template')")

    copies = [f"{template}_copy{i}" for i in range(2)]
    try:
        for name in copies:
            url = postgres_server.create_database(name, template=template)
            assert url.startswith("postgresql+psycopg://")
            with psycopg.connect(libpq_url(url)) as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
                assert conn.execute("SELECT value FROM marker").fetchone() == ("from the template",)
    finally:
        for name in [*copies, template]:
            postgres_server.drop_database(name)
    assert not postgres_server.database_exists(template)


@pytest.mark.postgres
def test_postgres_template_copy_survives_open_template_connection(postgres_server: PostgresServer) -> None:
    template = f"tmpl_{uuid.uuid4().hex[:8]}"
    postgres_server.create_database(template)
    try:
        # A forgotten connection to the template must not make CREATE DATABASE ... TEMPLATE fail.
        with postgres_server.connect(template):
            postgres_server.create_database(f"{template}_copy", template=template)
        assert postgres_server.database_exists(f"{template}_copy")
    finally:
        postgres_server.drop_database(f"{template}_copy")
        postgres_server.drop_database(template)


@pytest.mark.s3
def test_s3_put_and_get_object(s3_server: S3Server) -> None:
    bucket = s3_server.create_bucket(f"harness-{uuid.uuid4().hex[:8]}")
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="files/ab/cd", Body=b"rollout bytes")
    body = client.get_object(Bucket=bucket, Key="files/ab/cd")["Body"].read()
    assert body == b"rollout bytes"
    assert s3_server.env() == {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }

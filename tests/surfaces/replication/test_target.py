"""Replica URLs: what `--replicate` accepts, what it refuses (and says to do instead), and the
Litestream configuration written for it. No Litestream binary is needed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.replication.target import (
    ReplicaTarget,
    litestream_config,
    litestream_env,
    parse_target,
)


@pytest.mark.parametrize(
    ("url", "folder"),
    [
        pytest.param("file:///srv/backups/agent", "/srv/backups/agent", id="absolute"),
        pytest.param("file://localhost/srv/b", "/srv/b", id="localhost"),
        pytest.param("file:///srv/with%20space/", "/srv/with space", id="escaped-and-slash"),
        pytest.param("  file:///srv/b  ", "/srv/b", id="spaces-around"),
    ],
)
def test_file_urls_name_an_absolute_folder(url: str, folder: str) -> None:
    target = parse_target(url)
    assert target.scheme == "file"
    assert target.folder == Path(folder)
    assert target.url == Path(folder).as_uri()


@pytest.mark.parametrize(
    ("url", "bucket", "prefix", "endpoint", "region", "path_style"),
    [
        pytest.param("s3://my-bucket/team/agent", "my-bucket", "team/agent", None, None, False,
                     id="aws"),
        pytest.param("s3://my-bucket", "my-bucket", "", None, None, False, id="bucket-root"),
        pytest.param("s3://bkt.example/p/?region=eu-west-1", "bkt.example", "p", None,
                     "eu-west-1", False, id="region"),
        pytest.param("s3://minio-bkt/p?endpoint=http://127.0.0.1:9000", "minio-bkt", "p",
                     "http://127.0.0.1:9000", "us-east-1", True, id="endpoint-path-style"),
        pytest.param("s3://b12/p?endpoint=https://s3.example.com&force-path-style=false",
                     "b12", "p", "https://s3.example.com", "us-east-1", False,
                     id="virtual-host-style"),
    ],
)  # fmt: skip
def test_s3_urls(
    url: str, bucket: str, prefix: str, endpoint: str | None, region: str | None, path_style: bool
) -> None:
    target = parse_target(url)
    assert (target.scheme, target.bucket, target.prefix) == ("s3", bucket, prefix)
    assert (target.endpoint, target.region, target.force_path_style) == (
        endpoint,
        region,
        path_style,
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("ftp://host/x", "use file:///", id="other-scheme"),
        pytest.param("/srv/backups", "use file:///", id="bare-path"),
        pytest.param("file://backups/agent", "absolute", id="relative-file"),
        pytest.param("file:///", "a folder", id="root-folder"),
        pytest.param("file:///srv/b?x=1", "no query", id="file-query"),
        pytest.param("s3://AB/p", "bucket name", id="bad-bucket"),
        pytest.param("s3:///p", "bucket name", id="no-bucket"),
        pytest.param("s3://key:secret@bkt1/p", "AWS_ACCESS_KEY_ID", id="credentials"),
        pytest.param("s3://bkt1/a/../b", "'..'", id="dot-dot"),
        pytest.param("s3://bkt1/p?endpoint=ftp://h", "endpoint", id="endpoint-scheme"),
        pytest.param("s3://bkt1/p?endpoint=http://", "endpoint", id="endpoint-no-host"),
        pytest.param("s3://bkt1/p?endpoint=http://u:p@h:1", "AWS_ACCESS_KEY_ID",
                     id="endpoint-credentials"),
        pytest.param("s3://bkt1/p?colour=red", "colour", id="unknown-option"),
        pytest.param("s3://bkt1/p?region=a&region=b", "once", id="repeated-option"),
        pytest.param("s3://bkt1/p?force-path-style=maybe", "true or false", id="bad-bool"),
        pytest.param("s3://bkt1/p?region=EU WEST", "region", id="bad-region"),
        pytest.param("s3://bkt1/p#frag", "fragment", id="fragment"),
    ],
)  # fmt: skip
def test_bad_urls_are_refused_with_what_to_do(url: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_target(url)
    assert caught.value.exit_code == 2
    assert says in str(caught.value)
    assert "--replicate" in str(caught.value)


def test_a_secret_in_a_url_is_never_repeated_in_the_message() -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_target("s3://AKIAEXAMPLE:very-secret@bkt1/p")
    assert "very-secret" not in str(caught.value)


@given(st.text(max_size=40))
def test_any_text_parses_or_is_an_invalid_argument(text: str) -> None:
    try:
        target = parse_target(text)
    except InvalidArgument:
        return
    assert target.scheme in ("file", "s3")


# -- the generated configuration ------------------------------------------------------------


def _config(target: ReplicaTarget, tmp_path: Path) -> dict[str, object]:
    text = litestream_config(
        target,
        [(tmp_path / "a.db", "db", tmp_path / "meta-db"),
         (tmp_path / "w", "witness", tmp_path / "meta-w")],
    )  # fmt: skip
    parsed: dict[str, object] = json.loads(text)  # JSON is YAML: Litestream reads it as is
    return parsed


def test_file_config_puts_each_database_in_its_own_folder(tmp_path: Path) -> None:
    config = _config(parse_target("file:///srv/b"), tmp_path)
    assert config["dbs"] == [
        {"path": str(tmp_path / "a.db"), "meta-path": str(tmp_path / "meta-db"),
         "replicas": [{"type": "file", "path": "/srv/b/db"}]},
        {"path": str(tmp_path / "w"), "meta-path": str(tmp_path / "meta-w"),
         "monitor-interval": "100ms",
         "replicas": [{"type": "file", "path": "/srv/b/witness", "sync-interval": "100ms"}]},
    ]  # fmt: skip


def test_s3_config_names_bucket_path_endpoint_and_no_secret(tmp_path: Path) -> None:
    target = parse_target("s3://bkt1/team?endpoint=http://127.0.0.1:9000")
    config = _config(target, tmp_path)
    dbs = config["dbs"]
    assert isinstance(dbs, list)
    assert dbs[0]["replicas"] == [
        {"type": "s3", "bucket": "bkt1", "path": "team/db", "endpoint": "http://127.0.0.1:9000",
         "region": "us-east-1", "force-path-style": True},
    ]  # fmt: skip
    assert dbs[1]["replicas"][0]["path"] == "team/witness"
    assert "secret" not in json.dumps(config).lower()


def test_s3_config_at_the_bucket_root(tmp_path: Path) -> None:
    dbs = _config(parse_target("s3://bkt1"), tmp_path)["dbs"]
    assert isinstance(dbs, list)
    assert dbs[0]["replicas"] == [{"type": "s3", "bucket": "bkt1", "path": "db"}]


def test_config_logs_to_stderr_and_bounds_the_shutdown_sync(tmp_path: Path) -> None:
    config = _config(parse_target("file:///srv/b"), tmp_path)
    assert config["logging"] == {"level": "info", "stderr": True}
    assert config["shutdown-sync-timeout"] == "10s"


# -- the environment Litestream runs in ------------------------------------------------------


def test_plain_http_endpoint_drops_the_ca_bundle_litestream_cannot_use() -> None:
    env = {"AWS_CA_BUNDLE": "/etc/ca.pem", "AWS_ACCESS_KEY_ID": "k", "PATH": "/bin"}
    out = litestream_env(parse_target("s3://bkt1/p?endpoint=http://127.0.0.1:9000"), env)
    assert out == {"AWS_ACCESS_KEY_ID": "k", "PATH": "/bin"}


@pytest.mark.parametrize(
    "url", ["s3://bkt1/p?endpoint=https://s3.example.com", "s3://bkt1/p", "file:///srv/b"]
)
def test_tls_endpoints_keep_the_environment(url: str) -> None:
    env = {"AWS_CA_BUNDLE": "/etc/ca.pem", "PATH": "/bin"}
    assert litestream_env(parse_target(url), env) == env

"""Where replicas go: the `--replicate` URL, checked, and the Litestream configuration for it.

| URL                                            | replicas land in                           |
|------------------------------------------------|--------------------------------------------|
| `file:///srv/backups/agent`                    | folders `db/`, `records/`, `witness/` there |
| `s3://bucket/team/agent`                       | keys under `team/agent/db/`, `.../records/` |
| `s3://bucket/p?endpoint=http://127.0.0.1:9000` | the same, on an S3-compatible store        |

Under the URL: `db/` is the user's database file, `records/` sqlgate's records of it (audit
log, undo data, memory chain, members: `sqlgate.home`), `witness/` the witness log
(witness_log.py). sqlgate 0.1.0 kept one file, with its tables inside the user's, at `db/`
alone; a restore recognises that layout by the missing `records/` (restore.py).

S3 options, as query parameters: `endpoint` (http or https, host and port of an
S3-compatible store; path-style addressing is then on, and the region defaults to us-east-1),
`region`, `force-path-style` (true or false). Credentials come from the standard AWS
environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) or
the AWS profile files, never from the URL: a URL is shown in logs, in `sqlgate stats` and in
the process list.

The configuration is written as JSON, which YAML parsers read as is, so no value needs YAML
quoting; Litestream is run with `-no-expand-env`, so a `$` in a path stays a `$`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import SplitResult, parse_qs, quote, urlsplit
from urllib.request import url2pathname

from sqlgate.errors import InvalidArgument

__all__ = [
    "DB",
    "RECORDS",
    "REPLICATED",
    "WITNESS",
    "ReplicaTarget",
    "litestream_config",
    "litestream_env",
    "parse_target",
    "replicated_files",
]

SHUTDOWN_SYNC_SECONDS = 10  # how long Litestream may keep flushing once asked to stop
DB = "db"  # the user's database file, under the target
RECORDS = "records"  # sqlgate's records of it
WITNESS = "witness"  # the witness log
REPLICATED = (DB, RECORDS, WITNESS)
# The witness log is looked at and shipped ten times as often as the database (Litestream's
# default, 1 s): the two replicas are shipped independently, and the sooner the log's entry
# for an event lands, the rarer a replica holding events its log does not (witness_log.py).
WITNESS_INTERVAL = "100ms"
DEFAULT_REGION = "us-east-1"  # what S3-compatible stores accept when they ignore regions
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_REGION = re.compile(r"[a-z0-9-]{2,32}")
_S3_OPTIONS = ("endpoint", "region", "force-path-style")
_CREDENTIALS = (
    "credentials do not belong in the URL (it is shown in logs and in `sqlgate stats`): set "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment instead"
)
_SCHEMES = (
    "use file:///absolute/folder or s3://bucket/prefix (an S3-compatible store: "
    "s3://bucket/prefix?endpoint=http://host:port)"
)


@dataclass(frozen=True)
class ReplicaTarget:
    """A checked replica URL. `url` is its canonical text, safe to show."""

    scheme: str  # "file" or "s3"
    url: str
    folder: Path | None = None  # file
    bucket: str = ""  # s3
    prefix: str = ""  # s3: the key prefix, without leading or trailing slash
    endpoint: str | None = None
    region: str | None = None
    force_path_style: bool = False

    def replica(self, name: str) -> dict[str, object]:
        """Litestream's replica entry for the database stored under `name` (db, witness)."""
        if self.folder is not None:
            return {"type": "file", "path": str(self.folder / name)}
        entry: dict[str, object] = {
            "type": "s3",
            "bucket": self.bucket,
            "path": f"{self.prefix}/{name}" if self.prefix else name,
        }
        if self.endpoint is not None:
            entry["endpoint"] = self.endpoint
        if self.region is not None:
            entry["region"] = self.region
        if self.force_path_style:
            entry["force-path-style"] = True
        return entry


def _refuse(url: str, why: str) -> InvalidArgument:
    return InvalidArgument(f"--replicate {_shown(url)}: {why}")


def _shown(url: str) -> str:
    """The URL for a message, with any user:password@ part left out."""
    parts = urlsplit(url) if "://" in url else None
    if parts is not None and "@" in parts.netloc:
        url = url.replace(parts.netloc, "…@" + parts.netloc.rsplit("@", 1)[1], 1)
    return repr(url)


def parse_target(url: str) -> ReplicaTarget:
    """Check a replica URL; raises InvalidArgument saying what to write instead."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as exc:
        raise _refuse(text, f"not a URL ({exc}); {_SCHEMES}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("file", "s3") or "://" not in text:
        raise _refuse(text, f"scheme {scheme or '(none)'} is not supported; {_SCHEMES}")
    if parts.fragment:
        raise _refuse(text, "a URL fragment (#...) means nothing here; remove it")
    if "@" in parts.netloc:
        raise _refuse(text, _CREDENTIALS)
    return _file_target(text, parts) if scheme == "file" else _s3_target(text, parts)


def _file_target(text: str, parts: SplitResult) -> ReplicaTarget:
    if parts.query:
        raise _refuse(text, "a file URL takes no query (?...); remove it")
    if parts.netloc not in ("", "localhost"):
        raise _refuse(
            text,
            f"the folder must be absolute: file:///{parts.netloc}{parts.path} "
            "(three slashes) names /" + parts.netloc + parts.path,
        )
    folder = Path(url2pathname(parts.path))
    if not folder.is_absolute() or folder == Path(folder.anchor):
        raise _refuse(text, "name a folder below the root, as file:///absolute/folder")
    return ReplicaTarget("file", folder.as_uri(), folder=folder)


def _s3_target(text: str, parts: SplitResult) -> ReplicaTarget:
    bucket = parts.netloc
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise _refuse(
            text,
            f"{bucket!r} is not a valid bucket name (3 to 63 lower-case letters, digits, dots "
            "and hyphens): write s3://bucket/prefix",
        )
    segments = [part for part in parts.path.split("/") if part]
    if any(part in (".", "..") for part in segments):
        raise _refuse(text, "the key prefix may not contain '.' or '..' segments")
    prefix = "/".join(segments)
    options = _s3_options(text, parts.query)
    endpoint = options.get("endpoint")
    if endpoint is not None:
        endpoint = _endpoint(text, endpoint)
    region = options.get("region")
    if region is not None and not _REGION.fullmatch(region):
        raise _refuse(text, f"region {region!r} is not a region name (such as eu-west-1)")
    path_style = endpoint is not None
    if "force-path-style" in options:
        path_style = _flag(text, options["force-path-style"])
    if endpoint is not None and region is None:
        region = DEFAULT_REGION
    canonical = f"s3://{bucket}/{quote(prefix)}".rstrip("/")
    query = "&".join(f"{key}={options[key]}" for key in _S3_OPTIONS if key in options)
    return ReplicaTarget(
        "s3",
        canonical + (f"?{query}" if query else ""),
        bucket=bucket,
        prefix=prefix,
        endpoint=endpoint,
        region=region,
        force_path_style=path_style,
    )


def _s3_options(text: str, query: str) -> dict[str, str]:
    try:
        raw = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise _refuse(text, f"cannot read the query {query!r}; write ?key=value&...") from None
    unknown = sorted(set(raw) - set(_S3_OPTIONS))
    if unknown:
        raise _refuse(
            text,
            f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(_S3_OPTIONS)}",
        )
    repeated = sorted(key for key, values in raw.items() if len(values) > 1)
    if repeated:
        raise _refuse(text, f"give {', '.join(repeated)} once")
    return {key: values[0].strip() for key, values in raw.items()}


def _endpoint(text: str, endpoint: str) -> str:
    parts = urlsplit(endpoint)
    if "@" in parts.netloc:
        raise _refuse(text, _CREDENTIALS)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or port == -1
        or parts.path not in ("", "/")
        or parts.query
    ):
        raise _refuse(
            text,
            f"endpoint {endpoint!r} must be http(s)://host[:port] of an S3-compatible store",
        )
    return f"{parts.scheme}://{parts.netloc}"


def _flag(text: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise _refuse(text, f"force-path-style={value!r}: write true or false")


def replicated_files(
    db: Path, records: Path, witness_log: Path, folder: Path
) -> list[tuple[Path, str, Path]]:
    """The three files replicated for one database, each with its name under the target and
    Litestream's metadata folder for it (in `folder`)."""
    return [(path, name, folder / f"{name}-meta")
            for path, name in ((db, DB), (records, RECORDS), (witness_log, WITNESS))]  # fmt: skip


def litestream_config(
    target: ReplicaTarget,
    databases: Sequence[tuple[Path, str, Path]],
    *,
    shutdown_sync_seconds: int = SHUTDOWN_SYNC_SECONDS,
) -> str:
    """The configuration replicating each (database, name under the target, Litestream's
    metadata folder for it), as JSON text. Logs go to stderr; no secret is written."""
    dbs: list[dict[str, object]] = []
    for path, name, meta in databases:
        entry: dict[str, object] = {"path": str(path), "meta-path": str(meta)}
        replica = target.replica(name)
        if name == WITNESS:
            entry["monitor-interval"] = replica["sync-interval"] = WITNESS_INTERVAL
        entry["replicas"] = [replica]
        dbs.append(entry)
    config = {
        "logging": {"level": "info", "stderr": True},
        "shutdown-sync-timeout": f"{shutdown_sync_seconds}s",
        "dbs": dbs,
    }
    return json.dumps(config, indent=1) + "\n"


def litestream_env(target: ReplicaTarget, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment Litestream runs in: ours, except `AWS_CA_BUNDLE` for a plain-http
    endpoint. That variable only sets TLS roots, and Litestream 0.5 refuses to start with it
    ("unable to add custom RootCAs HTTPClient"); over https it is kept, and the error that
    names it is explained when it happens."""
    env = dict(environ)
    if target.endpoint is not None and target.endpoint.startswith("http://"):
        env.pop("AWS_CA_BUNDLE", None)
    return env

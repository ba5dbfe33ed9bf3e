"""The JSON-lines exports oomtrace reads as kernel logs, one entry per shape, recognised by
content; `--jsonl-fields message=PATH,time=PATH,host=PATH` names the fields of any other.

Loki, as `logcli query --output jsonl` writes it (grafana/loki pkg/logcli/output/jsonl.go: a
map of `timestamp`, Go's RFC 3339 with nanoseconds, `line`, and `labels` unless --no-labels):

    {"labels": {"host": "spark-01", "job": "kernel"}, "line": "NVRM: ... [NV_ERR_NO_MEMORY] ...",
     "timestamp": "2026-11-14T13:08:59.123456789Z"}

(`journalctl -o json` entries, with MESSAGE, are read by prefixes.journal_records.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from typing import Any

from oomtrace.errors import UsageError
from oomtrace.frozen import Frozen


class Fields(Frozen):
    """What one entry says, whatever its shape."""

    message: str
    time: datetime | None
    host: str | None
    ident: str | None = None


class Shape(Frozen):
    name: str
    message: tuple[str, ...]
    """Dotted paths to the message, the first present wins."""
    time: tuple[str, ...] = ()
    host: tuple[str, ...] = ()
    ident: tuple[str, ...] = ()
    """Where the sending program's name is (a kernel line's is "kernel")."""
    requires: tuple[str, ...] = ()
    """Paths every entry of this shape has: how it is recognised."""

    def read(self, entry: dict[str, Any]) -> Iterator[Fields]:
        message = _first(entry, self.message)
        if not isinstance(message, str):
            return
        host = _first(entry, self.host)
        ident = _first(entry, self.ident)
        yield Fields(
            message,
            to_time(_first(entry, self.time)),
            host if isinstance(host, str) else None,
            ident if isinstance(ident, str) else None,
        )


# Loki labels that name the machine, in the order tried (`--host-label` names another).
HOST_LABELS = ("host", "hostname", "instance", "node", "nodename", "node_name")

SHAPES = (
    Shape(
        "loki",
        message=("line",),
        time=("timestamp",),
        host=tuple(f"labels.{label}" for label in HOST_LABELS),
        ident=("labels.syslog_identifier", "labels.SYSLOG_IDENTIFIER"),
        requires=("line", "timestamp"),
    ),
    # An Elasticsearch / OpenSearch search hit (Filebeat, Elastic Agent, Logstash documents).
    Shape(
        "elasticsearch",
        message=("_source.message", "_source.event.original", "_source.log"),
        time=("_source.@timestamp", "_source.timestamp"),
        host=("_source.host.name", "_source.host.hostname", "_source.agent.hostname", "_source.host"),
        ident=("_source.process.name", "_source.syslog.identifier", "_source.journald.process.name"),
        requires=("_source",),
    ),
    # The same documents without the hit around them (ECS: `@timestamp`, `host.name`).
    Shape(
        "ecs",
        message=("message", "event.original"),
        time=("@timestamp",),
        host=("host.name", "host.hostname", "agent.hostname"),
        ident=("process.name", "syslog.identifier"),
        requires=("@timestamp", "message"),
    ),
    # Fluent Bit's json output: `date` (seconds, a float), the record's `log` or `message`.
    Shape(
        "fluent-bit",
        message=("log", "message", "MESSAGE"),
        time=("date", "time", "@timestamp"),
        host=("hostname", "host", "_HOSTNAME"),
        ident=("ident", "SYSLOG_IDENTIFIER"),
        requires=("date",),
    ),
    # Vector's json codec (its log schema: message, timestamp, host).
    Shape(
        "vector",
        message=("message",),
        time=("timestamp",),
        host=("host", "hostname"),
        ident=("appname", "SYSLOG_IDENTIFIER"),
        requires=("message", "timestamp"),
    ),
)


def load_object(line: str | bytes) -> dict[str, Any] | None:
    """A JSON object from one line, or None: not JSON, not an object, or nested past recursion."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def find(entry: dict[str, Any]) -> Shape | None:
    """The first shape every required path of which the entry has."""
    for shape in SHAPES:
        if all(_get(entry, path) is not None for path in shape.requires):
            return shape
    return None


def read(entry: dict[str, Any], shape: Shape | None = None) -> Iterator[Fields] | None:
    """The entry's messages by the given shape or the one it has; None when it has none."""
    if shape is None and "resourceLogs" in entry:
        return _otel(entry)
    chosen = shape or find(entry)
    return chosen.read(entry) if chosen is not None else None


def _otel(entry: dict[str, Any]) -> Iterator[Fields]:
    """An OpenTelemetry Collector file exporter line (OTLP JSON): many records per line."""
    for resource_logs in _list(entry.get("resourceLogs")):
        resource = _attributes(_dict(resource_logs.get("resource")).get("attributes"))
        host = resource.get("host.name") or resource.get("k8s.node.name")
        for scope in _list(resource_logs.get("scopeLogs")):
            for record in _list(_dict(scope).get("logRecords")):
                record = _dict(record)
                body = _dict(record.get("body")).get("stringValue")
                if not isinstance(body, str):
                    continue
                attributes = _attributes(record.get("attributes"))
                when = record.get("timeUnixNano") or record.get("observedTimeUnixNano")
                ident = attributes.get("syslog.identifier") or attributes.get("SYSLOG_IDENTIFIER")
                yield Fields(body, to_time(when), host, ident)


def _attributes(value: Any) -> dict[str, str]:
    found = {}
    for item in _list(value):
        item = _dict(item)
        text = _dict(item.get("value")).get("stringValue")
        if isinstance(item.get("key"), str) and isinstance(text, str):
            found[item["key"]] = text
    return found


def custom(spec: str) -> Shape:
    """`--jsonl-fields message=PATH,time=PATH,host=PATH[,ident=PATH]` (or a preset's name)."""
    names = {s.name: s for s in SHAPES}
    if spec in names:
        return names[spec]
    paths: dict[str, tuple[str, ...]] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, _, path = part.partition("=")
        if name not in ("message", "time", "host", "ident") or not path:
            raise UsageError(
                f"--jsonl-fields: cannot read {part!r}",
                hint=f"message=PATH,time=PATH,host=PATH with dotted paths, or one of {', '.join(names)}",
            )
        paths[name] = (path,)
    if "message" not in paths:
        raise UsageError(
            "--jsonl-fields needs message=PATH", hint="for example message=log,time=ts,host=node"
        )
    return Shape(
        "custom", paths["message"], paths.get("time", ()), paths.get("host", ()), paths.get("ident", ())
    )


def with_host_label(label: str) -> Shape:
    """Loki's shape with the host taken from one label (`--host-label`)."""
    loki = SHAPES[0]
    return Shape(loki.name, loki.message, loki.time, (f"labels.{label}",), loki.ident, loki.requires)


def to_time(value: Any, zone: tzinfo = UTC) -> datetime | None:
    """RFC 3339 (nanoseconds cut to micro; `zone` for one with no offset), or Unix time in s,
    ms, us or ns (a number or digits)."""
    if isinstance(value, str) and value.strip().lstrip("-").replace(".", "", 1).isdigit():
        value = float(value) if "." in value else int(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value)
        for scale in (1e9, 1e6, 1e3):
            if abs(seconds) > scale * 1e8:  # past 1973 in that unit
                seconds /= scale
                break
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip().replace("Z", "+00:00")
    if "." in text:
        head, _, rest = text.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[: min(digits, 6)]}{rest[digits:]}" if digits else head + rest[digits:]
    try:
        time = datetime.fromisoformat(text)
    except ValueError:
        return None
    return time if time.tzinfo else time.replace(tzinfo=zone)


def _first(entry: dict[str, Any], paths: tuple[str, ...]) -> Any:
    for path in paths:
        value = _get(entry, path)
        if value is not None:
            return value
    return None


def _get(entry: Any, path: str) -> Any:
    """A dotted path; a key holding a dot (`@timestamp`, ECS `host.name` flattened) is tried whole."""
    if isinstance(entry, dict) and path in entry:
        return entry[path]
    head, dot, rest = path.partition(".")
    if not dot or not isinstance(entry, dict) or head not in entry:
        return None
    return _get(entry[head], rest)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}

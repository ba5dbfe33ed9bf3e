"""The message registry: every kind anchored, documented by a real line, found behind any prefix."""

from __future__ import annotations

import pytest
from dateutil import tz

from oomtrace.messages import MESSAGES, MessageKind
from oomtrace.parse import parse_record
from oomtrace.prefilter import ANCHORS
from oomtrace.prefixes import LineSplitter
from oomtrace.records import NO_STAMP, Record

KINDS = [pytest.param(k, id=k.name) for k in MESSAGES]


def _record(kind: MessageKind, text: str) -> Record:
    ident = kind.origin if kind.origin not in ("kernel", "any") else "kernel"
    return Record("t", 1, text, text, NO_STAMP, ident)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_an_anchor_its_example_holds(kind: MessageKind) -> None:
    assert kind.anchors and all(kind.anchors)
    assert any(anchor in kind.example for anchor in kind.anchors)


@pytest.mark.parametrize("kind", KINDS)
def test_every_example_reads_as_its_kind(kind: MessageKind) -> None:
    event = kind.match(_record(kind, kind.example.strip()), kind.example.strip())
    assert event is not None
    assert parse_record(_record(kind, kind.example)) is not None


@pytest.mark.parametrize("kind", [k for k in KINDS if not k.values[0].in_report])
def test_the_big_file_prefilter_searches_for_every_kind(kind: MessageKind) -> None:
    # Report-body kinds are read inside the report another anchor opened.
    assert all(any(literal in anchor for literal in ANCHORS) for anchor in kind.anchors)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.values[0].begins or k.values[0].after_name])
@pytest.mark.parametrize(
    "prefix",
    ["vm-7 console | ", "[pod/llama-0/server] ", "ubuntu login: ", "root@gpu-3:~# ", "> ", "**", "svc_1  | "],
)
def test_a_message_is_read_behind_any_prefix(kind: MessageKind, prefix: str) -> None:
    splitter = LineSplitter("t", zone=tz.UTC, year=2026)
    (record,) = splitter.split(prefix + kind.example.strip(), 1)
    expected = parse_record(_record(kind, kind.example.strip()))
    got = (
        parse_record(record)
        if record.ident in ("kernel", None)
        else parse_record(_record(kind, record.message))
    )
    assert type(got) is type(expected), record.message


def test_the_docs_list_every_kind_from_the_registry() -> None:
    from oomtrace.messages import readme_table
    from tests.conftest import ROOT

    assert readme_table() in (ROOT / "docs" / "messages.md").read_text()

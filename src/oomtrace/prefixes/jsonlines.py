"""JSON lines: a journal entry (journal.py), or a log shipper's export of one message a line.

Exports are read by content or by `--jsonl-fields` (jsonshapes.py: Loki, Elasticsearch, ECS,
Fluent Bit, Vector, OpenTelemetry); a message that kept its own prefix (a kern.log line shipped
whole) is read by the grammar, else the export's time, host and program stand for one. From
tests/corpus/lone_surrogate_in_journal_json.log, a journal entry: see journal.py.
"""

from __future__ import annotations

import json

from oomtrace import jsonshapes
from oomtrace.prefixes.grammar import split_prefixes
from oomtrace.prefixes.journal import journal_records
from oomtrace.prefixes.state import ReadState
from oomtrace.records import Record, Stamp


def split_json(state: ReadState, line: str, line_no: int) -> list[Record] | None:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # 100,000 nested brackets: not an entry, a line
        return None
    if not isinstance(entry, dict):
        return None
    if "MESSAGE" in entry and state.json_shape is None:
        records = journal_records(entry, state.source, line_no, state._boot_ids, state.zone, raw=line)
    else:
        found = jsonshapes.read(entry, state.json_shape)
        if found is None:
            state.unknown_json += 1
            return None
        records = [from_fields(state, fields, line_no) for fields in found]
    if records:
        state._previous = records[-1].stamp
    return records


def from_fields(state: ReadState, fields: jsonshapes.Fields, line_no: int) -> Record:
    """One exported message: its own prefix where it kept one (a kern.log line shipped
    whole), else the export's time, host and program."""
    message = fields.message.rstrip("\n")
    split = split_prefixes(state, message)
    wall = fields.time.astimezone(state.zone) if fields.time else None
    if split.prefixed:
        stamp = split.stamp
        if stamp.wall is None and wall is not None:
            stamp = Stamp(wall, stamp.uptime, wall.isoformat(), stamp.boot)
        host = split.host or fields.host
        return Record(
            state.source,
            line_no,
            message,
            split.message,
            stamp,
            split.ident,
            host,
            0,
            split.pid,
            separate=True,
        )
    stamp = Stamp(wall, None, wall.isoformat(), state._boot) if wall else state._previous
    raw = f"{stamp.raw or '-'} {fields.host or '-'} {fields.ident or 'kernel'}: {message}"
    return Record(state.source, line_no, raw, message, stamp, fields.ident, fields.host, separate=True)

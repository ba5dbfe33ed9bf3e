r"""The systemd journal's entries: `journalctl -o json` / export fields, and `-o verbose` text.

From tests/corpus/lone_surrogate_in_journal_json.log (one line, cut here):

    {"MESSAGE": "Out of memory: Killed process 5 (x\ud800) total-vm:1kB, anon-rss:1kB, ...",
     "_TRANSPORT": "kernel", "__REALTIME_TIMESTAMP": "1794661932000000"}

is one kernel record at that realtime stamp (its lone surrogate replaced: no output could encode
it). `journal_records` is shared with sources/journal.py and watch/follow.py, so every journal
source reads an entry alike.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.stamps import fuzzy_time
from oomtrace.prefixes.state import ReadState
from oomtrace.records import PROVEN, Record, Stamp

# The records that speak for a killer (a userspace OOM killer, or systemd of a unit's death), and
# the program whose own process must have written each: any local user can write an entry with
# `logger -t earlyoom`; only journald's trusted fields (`_UID`, `_COMM`, `_SYSTEMD_UNIT`, which
# the sender cannot set) say who did.
_CLAIMS = {
    "earlyoom": "earlyoom",
    "systemd-oomd": "systemd-oomd",
    "nohang": "nohang",
    "systemd": "systemd",
}

# journalctl -o verbose: a stamped header per entry, then its fields indented.
_VERBOSE_HEADER = lazy_compile(
    r"(?:\S{2,4} )?(?P<when>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)"
    r"(?: (?P<zone>[\w+:-]+))? \[s=[0-9a-f]+;"
)
_VERBOSE_FIELD = lazy_compile(r"\s+(?P<name>[A-Z_][A-Z0-9_]*)=(?P<value>.*)")


def _microseconds(value: object) -> int | None:
    """A journal stamp field: ASCII digits that fit 64 bits (not "¹²³", not 400 digits)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    return None


def journal_records(
    entry: dict[str, object],
    source: str,
    number: int,
    boot_ids: dict[str, int],
    zone: tzinfo,
    raw: str | None = None,
) -> list[Record]:
    """Records of one journal entry given as export/JSON string fields (journalctl -o json, or
    systemd-python with string converters): both journal sources use this, so they agree."""
    message = _json_message(entry.get("MESSAGE"))
    ident = _clean(entry.get("SYSLOG_IDENTIFIER"))
    transport = entry.get("_TRANSPORT")
    if transport == "kernel":
        ident = "kernel"
    host = _clean(entry.get("_HOSTNAME"))
    wall = None
    stamp_text = ""
    realtime = _microseconds(entry.get("__REALTIME_TIMESTAMP"))
    if realtime is not None:
        try:
            wall = datetime.fromtimestamp(realtime / 1_000_000, zone)
            stamp_text = wall.isoformat()
        except (OverflowError, ValueError, OSError):  # a stamp past year 9999: no time, still read
            wall = None
    uptime = None
    monotonic = _microseconds(entry.get("_SOURCE_MONOTONIC_TIMESTAMP") or entry.get("__MONOTONIC_TIMESTAMP"))
    if monotonic is not None:
        uptime = monotonic / 1_000_000
    boot_id = entry.get("_BOOT_ID")
    boot = boot_ids.setdefault(boot_id, len(boot_ids)) if isinstance(boot_id, str) else 0
    stamp = Stamp(wall, uptime, stamp_text, boot)
    if raw is None:
        # What `journalctl -o short-iso` would print: quotable evidence, not a JSON blob.
        raw = f"{stamp_text} {host or '-'} {ident or '-'}: {message}"
    # The kernel's own entries: only the kernel, or root through /dev/kmsg, writes them. An entry
    # that only names itself `kernel` (`logger -t kernel`, _TRANSPORT=syslog) is any process's.
    sender: str | None
    if ident == "kernel":
        sender = PROVEN if transport in (None, "kernel") else _writer(entry, transport)
    else:
        sender = sender_of(entry, ident) if ident in _CLAIMS else None
    return [
        Record(source, number, raw, part, stamp, ident, host, separate=True, sender=sender)
        for part in message.split("\n")
    ]


def sender_of(entry: dict[str, object], ident: str) -> str | None:
    """Who wrote a killer's record, by journald's trusted fields: PROVEN when it is the killer's
    own process (its system unit; its program run as root; for systemd, pid 1 or a user's own
    manager), else the process that did (`uid 1000, logger`); None without the fields."""
    uid, comm, unit = (_clean(entry.get(name)) for name in ("_UID", "_COMM", "_SYSTEMD_UNIT"))
    if uid is None or comm is None:
        return None
    program = _CLAIMS[ident]
    if ident == "systemd":
        manager = comm == "systemd" and (
            (entry.get("_PID") == "1" and uid == "0") or unit == f"user@{uid}.service"
        )
        return PROVEN if manager else f"uid {uid}, {comm}"
    if unit in (f"{program}.service", f"{program}-desktop.service") or (uid == "0" and comm == program[:15]):
        return PROVEN
    return f"uid {uid}, {comm}"


def _writer(entry: dict[str, object], transport: object) -> str:
    """Who wrote an entry that is not the kernel's, by journald's trusted fields."""
    uid, comm = _clean(entry.get("_UID")), _clean(entry.get("_COMM"))
    if uid is not None and comm is not None:
        return f"uid {uid}, {comm}"
    return f"sent through {_clean(transport) or 'an unknown transport'}"


def _clean(value: object) -> str | None:
    """A JSON string without lone surrogates (\\ud800 escapes), which no output could encode."""
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def journal_message(value: object) -> str:
    """A journal MESSAGE as text: journald exports non-UTF-8 messages as an array of bytes."""
    return _json_message(value)


def _json_message(value: object) -> str:
    if isinstance(value, str):
        return _clean(value) or ""
    if isinstance(value, list):
        # journald exports non-UTF-8 or binary messages as an array of byte values.
        return bytes(v for v in value if isinstance(v, int) and 0 <= v < 256).decode("utf-8", "replace")
    return ""


def split_verbose(state: ReadState, line: str, line_no: int) -> list[Record] | None:
    """journalctl -o verbose: the header's stamp, then one record per MESSAGE field."""
    header = _VERBOSE_HEADER.match(line)
    if header:
        when = header["when"] + (f" {header['zone']}" if header["zone"] else "")
        wall = fuzzy_time(when, state.zone)
        state._verbose = {}
        state._remember(Stamp(wall, None, header["when"], state._boot))
        return []
    if state._verbose is None:
        return None
    field_line = _VERBOSE_FIELD.match(line)
    if not field_line:
        state._verbose = None
        return None
    name, value = field_line["name"], field_line["value"]
    state._verbose[name] = value
    if name != "MESSAGE":
        return []
    ident = (
        "kernel" if state._verbose.get("_TRANSPORT") == "kernel" else state._verbose.get("SYSLOG_IDENTIFIER")
    )
    pid = state._verbose.get("SYSLOG_PID") or state._verbose.get("_PID")
    stamp = state._previous
    return [
        Record(
            state.source,
            line_no,
            line,
            value,
            stamp,
            ident,
            None,
            0,
            int(pid) if pid and pid.isdigit() else None,
        )
    ]

"""systemd's records of a unit: an OOM kill in it, its main process killed, failed, restarted, consumed.

Also journald flushing its caches under memory pressure. These come from PID 1 and journald,
never the kernel (`origin="any"`). Each kind beside its matcher.
"""

from __future__ import annotations

from oomtrace import events as ev
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages.kind import MessageKind
from oomtrace.records import Record

# The characters of a unit's name as systemd prints it (`\x2d` escapes, `user@1000.service`): also
# what a line cut inside one holds (rejoin.py).
UNIT_CHARS = r"[\w@.:\\-]"
_UNIT = rf"(?P<unit>{UNIT_CHARS}+)"
# `journalctl -u x -o cat` and `systemctl status` print these without the unit's name.
_UNIT_OOM = lazy_compile(rf"(?:{_UNIT}: |^)A process of this unit has been killed by the OOM killer\.?")
_UNIT_MAIN_KILLED = lazy_compile(rf"(?:{_UNIT}: |^)Main process exited, code=killed, status=(?P<status>\S+)")
_UNIT_FAILED = lazy_compile(rf"(?:{_UNIT}: |^)Failed with result '(?P<result>[\w-]+)'")
_UNIT_CONSUMED = lazy_compile(rf"{_UNIT}: Consumed (?P<text>.*)")
_MEMORY_PEAK = lazy_compile(r"([\d.]+)([KMGT])? memory peak")
_UNIT_RESTART = lazy_compile(rf"{_UNIT}: Scheduled restart job, restart counter is at (?P<n>\d{{1,9}})")
# systemd says "some" when it could not read the count of killed processes from the cgroup's xattr.
_UNIT_OOMD = lazy_compile(rf"{_UNIT}: systemd-oomd killed (?:(?P<n>\d{{1,9}})|some) process")
_KIB = {None: 1 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024, "T": 1024**3}


def _unit_oom(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_OOM.search(text)
    return ev.UnitRecord(record, match["unit"], "oom-kill", "killed by the OOM killer") if match else None


UNIT_OOM_KILL = MessageKind(
    "unit-oom-kill",
    ("OOM killer",),
    _unit_oom,
    "systemd: a process of the unit was OOM-killed",
    "llama.service: A process of this unit has been killed by the OOM killer.",
    origin="any",
    after_name=": A process of this unit",
)


def _unit_main_killed(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_MAIN_KILLED.search(text)
    return ev.UnitRecord(record, match["unit"], "main-killed", match["status"]) if match else None


UNIT_MAIN_KILLED = MessageKind(
    "unit-main-killed",
    ("code=killed",),
    _unit_main_killed,
    "systemd: the unit's main process was killed",
    "llama.service: Main process exited, code=killed, status=9/KILL",
    origin="any",
    after_name=": Main process exited",
)


def _unit_failed(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_FAILED.search(text)
    return ev.UnitRecord(record, match["unit"], "failed", match["result"]) if match else None


UNIT_FAILED = MessageKind(
    "unit-failed",
    ("Failed with result",),
    _unit_failed,
    "systemd: the unit failed",
    "ollama.service: Failed with result 'oom-kill'.",
    origin="any",
    after_name=": Failed with result",
)


def _unit_restart(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_RESTART.search(text)
    if not match:
        return None
    return ev.UnitRecord(record, match["unit"], "restart", text[match.start() :], count=int(match["n"]))


UNIT_RESTART = MessageKind(
    "unit-restart",
    ("restart counter",),
    _unit_restart,
    "systemd: the unit is restarted",
    "llama.service: Scheduled restart job, restart counter is at 3.",
    origin="any",
    after_name=": Scheduled restart job",
)


def _unit_oomd(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_OOMD.search(text)
    if not match:
        return None
    count = int(match["n"]) if match["n"] else None
    return ev.UnitRecord(record, match["unit"], "oomd-killed", text[match.start() :], count=count)


UNIT_OOMD_KILLED = MessageKind(
    "unit-oomd-killed",
    ("systemd-oomd killed",),
    _unit_oomd,
    "systemd: systemd-oomd killed processes of the unit",
    "user@1000.service: systemd-oomd killed 5 process(es) in this unit.",
    origin="any",
    after_name=": systemd-oomd killed",
)


# `systemctl status`: `Active: failed (Result: oom-kill) since Sat 2025-10-04 21:13:58 UTC; 21s ago`,
# or for a unit that restarts itself `Active: activating (auto-restart) (Result: oom-kill) since …`.
# Its unit is named by the status's heading a few lines above (status_unit), not on the line.
_UNIT_STATUS = lazy_compile(
    r"(?:^|\s)Active: (?:failed|activating \(auto-restart\)) \(Result: (?P<result>[\w-]+)\) "
    r"since (?P<since>[^;]{10,60})"
)
# The heading and the fields between it and `Active:`: `● ollama.service - Ollama Service`
# (`×` failed, `○` inactive, `*` in ASCII), `Loaded:`, `Transient:`, `Drop-In:` and its paths.
STATUS_LINES = 12
_STATUS_HEADING = lazy_compile(
    rf"(?:[●×○↻*]\s+)?(?P<unit>{UNIT_CHARS}+\.(?:service|scope|slice|socket|target|mount|automount|swap|timer|"
    r"path|device))(?: - .*)?"
)
_STATUS_FIELDS = ("Loaded:", "Transient:", "Drop-In:", "/", "└─", "├─", "│")


def _unit_status(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_STATUS.search(text)
    if not match:
        return None
    return ev.UnitRecord(record, None, "failed", match["result"], since=match["since"].strip())


UNIT_STATUS_FAILED = MessageKind(
    "unit-status-failed",
    ("(Result: ",),
    _unit_status,
    "systemctl status: the unit failed, with its result and since when",
    "     Active: failed (Result: oom-kill) since Sat 2025-10-04 20:46:05 UTC; 10s ago",
    origin="any",
    # Where it begins: the `since` time of any unit's status (`active (running) since …`) is
    # never read as the line's prefix.
    begins=("Active: ",),
)


def in_unit_status(text: str) -> bool:
    """Is the line a unit status's `Active:` line (the lines above it name its unit)."""
    return "(Result: " in text and _UNIT_STATUS.search(text) is not None


def status_unit(above: list[str]) -> str | None:
    """The unit a status's heading names, from the lines just above its `Active:` line, where
    only the status's own fields stand between them (anything else: no unit, never another's)."""
    for line in reversed(above[-STATUS_LINES:]):
        text = line.strip()
        heading = _STATUS_HEADING.fullmatch(text)
        if heading:
            return heading["unit"]
        if not text.startswith(_STATUS_FIELDS):
            return None
    return None


def _unit_consumed(record: Record, text: str) -> ev.Event | None:
    match = _UNIT_CONSUMED.search(text)
    if not match:
        return None
    peak = _MEMORY_PEAK.search(match["text"])
    peak_kb = round(float(peak[1]) * _KIB[peak[2]]) if peak else None
    return ev.UnitRecord(record, match["unit"], "consumed", match["text"], peak_kb=peak_kb)


UNIT_CONSUMED = MessageKind(
    "unit-consumed",
    (": Consumed ",),
    _unit_consumed,
    "systemd: what the unit consumed",
    "ollama.service: Consumed 2min 45.760s CPU time, 11.4G memory peak.",
    origin="any",
    after_name=": Consumed ",
)


def _journald_pressure(record: Record, text: str) -> ev.Event | None:
    if "Under memory pressure, flushing caches" not in text:
        return None
    return ev.EarlyWarning(record, "journald-memory-pressure", text, "journald")


JOURNALD_MEMORY_PRESSURE = MessageKind(
    "journald-memory-pressure",
    ("Under memory pressure",),
    _journald_pressure,
    "journald flushed its caches under memory pressure",
    "Under memory pressure, flushing caches.",
    origin="any",
    warning=True,
)

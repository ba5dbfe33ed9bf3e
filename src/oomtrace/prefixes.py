"""The line-prefix grammar: every way a kernel line reaches a file, cut off its message."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

from dateutil import tz as dateutil_tz
from dateutil.parser import isoparse

from oomtrace.records import NO_STAMP, Record, Stamp

# Month abbreviations as `%b` prints them in the locales people paste from (journald and
# `dmesg -T` use the host locale). Keys are lower-case with any trailing dot removed.
_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    [
        "jan janv ene gen sty led tammi oca янв 1月 1월",
        "feb févr fev lut úno helmi şub фев 2月 2월",
        "mar mär mars mrt bře maalis мар 3月 3월",
        "apr avr abr kwi dub huhti nis апр 4月 4월",
        "may mai mag mei maj kvě touko мая май 5月 5월",
        "jun juin giu cze čvn kesä haz июн 6月 6월",
        "jul juil lug lip čvc heinä tem июл 7月 7월",
        "aug août ago sie srp elo ağu авг 8月 8월",
        "sep sept set wrz zář syys eyl сен 9月 9월",
        "oct okt ott out paź říj loka eki окт 10月 10월",
        "nov lis marras kas ноя 11月 11월",
        "dec dez déc dic gru pro joulu ara дек 12月 12월",
    ],
    start=1,
):
    for _name in _names.split():
        _MONTHS[_name] = _number


def month_number(name: str) -> int | None:
    """The month a localized `%b` abbreviation names, or None."""
    key = name.lower().rstrip(".")
    return _MONTHS.get(key) or _MONTHS.get(key[:3])


_PRIORITY = re.compile(r"<\d{1,3}>")
_UPTIME = re.compile(r"\[\s*(\d+\.\d+)\]\s?")
_DMESG_T = re.compile(r"\[(\S+)\s+(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})\s+(\d{4})\]\s?")
_ISO = re.compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
_UNIX = re.compile(r"(\d{9,11}\.\d{3,9})\s")
_SYSLOG = re.compile(r"(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})(\.\d+)?\s")
# What follows a syslog or journalctl stamp: "host kernel: msg", "host <kern.warning> kernel:msg",
# "kernel: msg", "host tag[pid]: msg", "tag[pid]: msg" or (tag-less) "host: msg".
_SYSLOG_REST = re.compile(
    r"(?:(?P<host>[^\s:\[\]<]+) )?(?:<(?P<fac>[\w.]+)> )?"
    r"(?P<tag>[^\s:\[]+)(?P<pid>\[\d+\])?:(?: |(?=\S)|$)(?P<msg>.*)",
    re.DOTALL,
)
_KERNEL_ONLY = re.compile(r"kernel:\s?")

# A jump back in uptime by more than this starts a new boot segment (small jitter from
# interleaved CPUs is normal).
_BOOT_JUMP_S = 1.0


@dataclass
class LineSplitter:
    """Cuts prefixes off the lines of one source, keeping the state that needs.

    State: the previous stamp (journalctl and rsyslog print continuation lines with no
    prefix), the boot segment (uptime going backwards), and the year for stamps without one.
    """

    source: str
    zone: tzinfo = field(default_factory=dateutil_tz.tzlocal)
    """Zone for stamps printed without an offset (syslog, dmesg -T)."""
    reference: datetime = field(default_factory=lambda: datetime.now(UTC))
    """Syslog stamps have no year: take the one that puts them at or before this moment."""
    year: int | None = None
    """An explicit year for syslog stamps (overrides `reference`)."""
    _previous: Stamp = NO_STAMP
    _boot: int = 0
    _last_uptime: float | None = None
    _boot_ids: dict[str, int] = field(default_factory=dict)

    def checkpoint(self) -> tuple[object, ...]:
        """The state that reading lines changes, to undo lines read ahead (see `rollback`)."""
        return (self._previous, self._boot, self._last_uptime, dict(self._boot_ids))

    def rollback(self, state: tuple[object, ...]) -> None:
        self._previous, self._boot, self._last_uptime, boot_ids = state  # type: ignore[assignment]
        self._boot_ids = dict(boot_ids)  # type: ignore[call-overload]

    def split(self, line: str, line_no: int) -> list[Record]:
        """Records for one input line: usually one; several for `#012`-joined rsyslog lines."""
        line = line.rstrip("\r\n")
        if line.startswith("{"):
            from_json = self._split_json(line, line_no)
            if from_json is not None:
                return from_json
        stamp, ident, host, message = self._split_prefixes(line)
        # rsyslog escapes newlines in multi-line kernel records as #012 (and tabs as #011).
        parts = message.replace("#011", "\t").split("#012") if "#012" in message else [message]
        return [Record(self.source, line_no, line, part, stamp, ident, host) for part in parts]

    def _split_prefixes(self, line: str) -> tuple[Stamp, str | None, str | None, str]:
        rest = line
        match = _PRIORITY.match(rest)
        if match:
            rest = rest[match.end() :]
        wall: datetime | None = None
        raw = ""
        ident: str | None = None
        host: str | None = None
        head = rest[:1]
        if head == "[":
            match = _UPTIME.match(rest)
            if match:
                return self._after_uptime(rest, match)
            match = _DMESG_T.match(rest)
            if match:
                wall = self._dmesg_t(match)
                if wall is not None:
                    raw = match.group(0)[1:].rstrip()[:-1]
                    rest = rest[match.end() :]
                    ident = "kernel"
        elif head.isdigit():
            match = _ISO.match(rest)
            if match:
                wall = self._iso(match.group(1))
                raw = match.group(1)
                rest, ident, host = _syslog_rest(rest[match.end() :], tagless_is_host=False)
            else:
                match = _UNIX.match(rest)
                if match:
                    wall = datetime.fromtimestamp(float(match.group(1)), self.zone)
                    raw = match.group(1)
                    rest, ident, host = _syslog_rest(rest[match.end() :], tagless_is_host=True)
        if wall is None and (head.isalpha() or head.isdigit()):
            # Month first ("Nov 14", "Dez 14"); CJK locales print "11月 14".
            match = _SYSLOG.match(rest)
            if match:
                wall = self._syslog(match)
                if wall is not None:
                    raw = match.group(0).strip()
                    rest, ident, host = _syslog_rest(rest[match.end() :], tagless_is_host=True)
            if wall is None and head.isalpha():
                match = _KERNEL_ONLY.match(rest)
                if match:
                    rest = rest[match.end() :]
                    ident = "kernel"
        if wall is None and ident is None:
            # No prefix at all: a continuation line (journalctl indents them, rsyslog
            # and dmesg -T pastes leave them bare) or a raw report. Inherit the stamp.
            return self._previous, None, None, line
        uptime = None
        if ident == "kernel":
            match = _UPTIME.match(rest)
            if match:
                uptime = float(match.group(1))
                raw = f"{raw} {match.group(0).strip()}".strip()
                rest = rest[match.end() :]
        if wall is None and uptime is None:
            return self._remember(NO_STAMP), ident, host, rest
        stamp = Stamp(wall, uptime, raw, self._boot_for(uptime))
        return self._remember(stamp), ident, host, rest

    def _after_uptime(self, rest: str, match: re.Match[str]) -> tuple[Stamp, str | None, str | None, str]:
        uptime = float(match.group(1))
        raw = match.group(0).strip()
        rest = rest[match.end() :]
        ident: str | None = "kernel"
        host: str | None = None
        # journalctl -o short-monotonic: "[ 5864.708440] host kernel: msg". Plain dmesg lines far
        # outnumber these, so the cheap test comes first.
        head = rest[:120]
        tagged = _SYSLOG_REST.match(rest) if " kernel:" in head or "]: " in head else None
        if tagged and tagged.group("host") and (tagged.group("tag") == "kernel" or tagged.group("pid")):
            rest, ident, host = _syslog_rest(rest, tagless_is_host=False)
        stamp = Stamp(None, uptime, raw, self._boot_for(uptime))
        return self._remember(stamp), ident, host, rest

    def _remember(self, stamp: Stamp) -> Stamp:
        self._previous = stamp
        return stamp

    def _boot_for(self, uptime: float | None) -> int:
        if uptime is None:
            return self._boot
        if self._last_uptime is not None and uptime < self._last_uptime - _BOOT_JUMP_S:
            self._boot += 1
        self._last_uptime = uptime
        return self._boot

    def _dmesg_t(self, match: re.Match[str]) -> datetime | None:
        month = month_number(match.group(2))
        if month is None:
            return None
        day, hour, minute, second, year = (int(match.group(i)) for i in range(3, 8))
        return _local(year, month, day, hour, minute, second, 0, self.zone)

    def _iso(self, text: str) -> datetime | None:
        wall = _parse_iso(text)
        if wall is not None and wall.tzinfo is None:
            wall = wall.replace(tzinfo=self.zone)
        return wall

    def _syslog(self, match: re.Match[str]) -> datetime | None:
        month = month_number(match.group(1))
        if month is None:
            return None
        day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
        fraction = match.group(6)
        micros = round(float(fraction) * 1_000_000) if fraction else 0
        year = self.year if self.year is not None else self._infer_year(month, day)
        return _local(year, month, day, hour, minute, second, micros, self.zone)

    def _infer_year(self, month: int, day: int) -> int:
        reference = self.reference
        # A stamp later in the calendar than the reference belongs to the year before:
        # a kern.log written across New Year has December lines from last year.
        if (month, day) > (reference.month, reference.day + 1):
            return reference.year - 1
        return reference.year

    def _split_json(self, line: str, line_no: int) -> list[Record] | None:
        try:
            entry = json.loads(line)
        except ValueError:
            return None
        if not isinstance(entry, dict) or "MESSAGE" not in entry:
            return None
        records = journal_records(entry, self.source, line_no, self._boot_ids, self.zone, raw=line)
        if records:
            self._previous = records[0].stamp
        return records


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
    if entry.get("_TRANSPORT") == "kernel":
        ident = "kernel"
    host = _clean(entry.get("_HOSTNAME"))
    wall = None
    stamp_text = ""
    realtime = entry.get("__REALTIME_TIMESTAMP")
    if isinstance(realtime, str) and realtime.isdigit():
        wall = datetime.fromtimestamp(int(realtime) / 1_000_000, zone)
        stamp_text = wall.isoformat()
    uptime = None
    monotonic = entry.get("_SOURCE_MONOTONIC_TIMESTAMP") or entry.get("__MONOTONIC_TIMESTAMP")
    if isinstance(monotonic, str) and monotonic.isdigit():
        uptime = int(monotonic) / 1_000_000
    boot_id = entry.get("_BOOT_ID")
    boot = boot_ids.setdefault(boot_id, len(boot_ids)) if isinstance(boot_id, str) else 0
    stamp = Stamp(wall, uptime, stamp_text, boot)
    if raw is None:
        # What `journalctl -o short-iso` would print: quotable evidence, not a JSON blob.
        raw = f"{stamp_text} {host or '-'} {ident or '-'}: {message}"
    return [Record(source, number, raw, part, stamp, ident, host) for part in message.split("\n")]


def _syslog_rest(rest: str, *, tagless_is_host: bool) -> tuple[str, str | None, str | None]:
    """Cut "host tag[pid]: " off what follows a stamp; returns (message, ident, host)."""
    match = _SYSLOG_REST.match(rest)
    if not match:
        return rest, "kernel", None
    host, tag, pid = match.group("host"), match.group("tag"), match.group("pid")
    if tag == "kernel":
        return match.group("msg"), "kernel", host
    if host is None and pid is None:
        if tagless_is_host:
            # "Apr 01 14:13:32 mysrv: sed invoked oom-killer": a host with no tag.
            return match.group("msg"), "kernel", tag
        return rest, "kernel", None
    if host is None and not tagless_is_host:
        return rest, "kernel", None
    return match.group("msg"), tag, host


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


@lru_cache(maxsize=4096)
def _parse_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    try:
        return isoparse(text.replace(" ", "T", 1))
    except ValueError:
        return None


def _local(
    year: int, month: int, day: int, hour: int, minute: int, second: int, micros: int, zone: tzinfo
) -> datetime | None:
    try:
        naive = datetime(year, month, day, hour, minute, second, micros)
    except ValueError:
        return None
    aware = naive.replace(tzinfo=zone)
    # Resolve the zone's offset now so the stamp keeps it whatever the zone object is.
    offset = aware.utcoffset() or timedelta(0)
    return naive.replace(tzinfo=timezone(offset))

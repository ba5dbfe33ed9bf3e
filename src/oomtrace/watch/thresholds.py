"""`--warn SPEC`: when the watcher warns, with defaults chosen from the incidents it exists for."""

from __future__ import annotations

import re
from typing import Any

from oomtrace.errors import UsageError
from oomtrace.frozen import Frozen, replace


class Thresholds(Frozen):
    psi_some: float | None = 10.0
    """PSI memory `some avg10` (% of time some task stalled on memory) at or above which to warn."""
    psi_full: float | None = 5.0
    """PSI memory `full avg10` (% of time every task stalled): thrashing."""
    memavail_percent: float | None = 5.0
    """MemAvailable under this share of MemTotal."""
    memavail_kb: int | None = None
    """MemAvailable under this size (`memavail=2G`), instead of a share."""
    zero_in_s: float | None = 30.0
    """MemAvailable, falling at its slope of the last seconds, reaches zero within this many seconds."""
    kernel: bool = True
    """Warnings the kernel and daemons log (NV_ERR_NO_MEMORY, Xid, page allocation failures,
    journald's memory-pressure flush, hung tasks)."""
    repeat_s: float = 60.0
    """A warning of one kind is said at most once in this many seconds; its repeats are counted."""

    def memavail_floor_kb(self, total_kb: int) -> int | None:
        if self.memavail_kb is not None:
            return self.memavail_kb
        if self.memavail_percent is None:
            return None
        return int(total_kb * self.memavail_percent / 100)


DEFAULT_SPEC = "psi-some=10,psi-full=5,memavail=5%,zero-in=30s,kernel,repeat=60s"
HELP = (
    "When to warn, as NAME=VALUE pairs separated by commas, each overriding its default "
    f"({DEFAULT_SPEC}): psi-some and psi-full (PSI memory avg10, %), memavail (MemAvailable "
    "under a % of RAM or a size such as 2G), zero-in (MemAvailable reaching zero within this "
    "many seconds at its current slope), kernel (the kernel's own warnings, NVRM included; "
    "alias nvrm), repeat (say a warning of one kind at most this often). `NAME=off` turns one off."
)

_SIZE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt]?)i?b?", re.IGNORECASE)
_SECONDS = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|m|min)?", re.IGNORECASE)
_OFF = ("off", "no", "false")
_OFF_FIELDS = {
    "psi-some": ("psi_some",),
    "psi-full": ("psi_full",),
    "memavail": ("memavail_percent", "memavail_kb"),
    "zero-in": ("zero_in_s",),
}
_UNITS = {"": 1 / 1024, "k": 1, "m": 1024, "g": 1024**2, "t": 1024**3}


def parse_warn(spec: str | None) -> Thresholds:
    """Thresholds from `--warn`; a name or value that does not parse is a usage error."""
    thresholds = Thresholds()
    if not spec:
        return thresholds
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, value = part.partition("=")
        name, value = name.strip().lower(), value.strip().lower()
        thresholds = _apply(thresholds, name, value, part)
    return thresholds


def _apply(thresholds: Thresholds, name: str, value: str, part: str) -> Thresholds:
    if name in ("kernel", "nvrm"):
        if value in ("", "on", "yes", "true"):
            return replace(thresholds, kernel=True)
        if value in _OFF:
            return replace(thresholds, kernel=False)
        raise _bad(part)
    if value in _OFF:
        fields = _OFF_FIELDS.get(name)
        if fields is None:
            raise _bad(part)
        off: dict[str, Any] = dict.fromkeys(fields)
        return replace(thresholds, **off)
    if name in ("psi-some", "psi-full"):
        percent: dict[str, Any] = {name.replace("-", "_"): _percent(value.removesuffix("%"), part)}
        return replace(thresholds, **percent)
    if name == "memavail":
        if value.endswith("%"):
            return replace(thresholds, memavail_percent=_percent(value[:-1], part), memavail_kb=None)
        size = _SIZE.fullmatch(value)
        if size is None:
            raise _bad(part)
        kb = int(float(size["n"]) * _UNITS[size["unit"].lower()])
        return replace(thresholds, memavail_kb=kb, memavail_percent=None)
    if name in ("zero-in", "repeat"):
        seconds = _SECONDS.fullmatch(value)
        if seconds is None:
            raise _bad(part)
        amount = float(seconds["n"]) * (60 if (seconds["unit"] or "s").lower() in ("m", "min") else 1)
        timing: dict[str, Any] = {"zero_in_s" if name == "zero-in" else "repeat_s": amount}
        return replace(thresholds, **timing)
    raise _bad(part)


def _percent(value: str, part: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise _bad(part) from None
    if not 0 < number <= 100:
        raise _bad(part)
    return number


def _bad(part: str) -> UsageError:
    return UsageError(f"--warn: cannot read {part!r}", hint=f"for example --warn {DEFAULT_SPEC}")

"""`--redact`: replace host names, user names, addresses and long ids with stable placeholders."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any, TypeVar

_T = TypeVar("_T")

_EMAIL = re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_UNIT_SUFFIX = re.compile(r"\.(?:service|socket|target|scope|slice|mount|timer|path|device|swap)$")
# Dashes, or underscores as the systemd cgroup driver writes a pod's uid
# (`kubepods-burstable-pod3f2a…_8b7d_….slice`); right after "pod" as Kubernetes names them.
_UUID = re.compile(
    r"(?:(?<=pod)|(?<![0-9A-Fa-f]))"
    r"[0-9A-Fa-f]{8}([-_])[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{12}(?![0-9A-Fa-f])"
)
# Boot, machine and container ids are 32 or 64 hex digits; kernel addresses (16) are left alone.
_LONG_HEX = re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32,}(?![0-9A-Fa-f])")
# Colons or dashes (Windows, some NICs' logs); iptables' `MAC=` holds two addresses and a type.
_MAC = re.compile(r"(?<![\w:-])[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![\w:-])")
_IPTABLES_MAC = re.compile(r"(?<=MAC=)(?:[0-9A-Fa-f]{2}:)+[0-9A-Fa-f]{2}")
# Full eight-group addresses, or compressed ones with "::" (times and PCI slots have neither).
# A prefix (`2001:db8:abcd::/48`) ends at its "::"; some hex digit is always there (not a bare "::").
_IPV6 = re.compile(
    r"(?<![\w:])(?=[0-9A-Fa-f:]*[0-9A-Fa-f])(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}"
    r"|(?:[0-9A-Fa-f]{1,4}:){0,6}[0-9A-Fa-f]{0,4}::(?:(?:[0-9A-Fa-f]{1,4}:){0,6}[0-9A-Fa-f]{1,4})?)(?![\w:])"
)
# An address may end a sentence ("from 10.0.0.5."): a full stop after it is not a fifth part.
_IPV4 = re.compile(
    r"(?<!\w)(?<!\d\.)(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\w|\.\d)"
)
_HOME = re.compile(r"(?<=/home/)[^/\s]+|(?<=/Users/)[^/\s]+")


class Redactor:
    """Maps each sensitive value to a placeholder, the same one every time within a report."""

    def __init__(self, hosts: Iterable[str] = (), enabled: bool = True) -> None:
        self.enabled = enabled
        self._maps: dict[str, dict[str, str]] = {}
        names = sorted({h for h in hosts if h and len(h) > 1}, key=len, reverse=True)
        self._hosts = (
            # With the domain after a short name (`gpu01.prod.example.com`): all of it is the host.
            re.compile(
                r"(?<![\w.-])(" + "|".join(re.escape(h) for h in names) + r")(?:\.[A-Za-z][\w-]*)*(?![\w-])"
            )
            if names
            else None
        )

    @classmethod
    def disabled(cls) -> Redactor:
        """A redactor that changes nothing (no --redact)."""
        return cls(enabled=False)

    def _placeholder(self, kind: str, value: str) -> str:
        mapping = self._maps.setdefault(kind, {})
        if value not in mapping:
            mapping[value] = f"{kind}-{len(mapping) + 1}"
        return mapping[value]

    def _email(self, match: re.Match[str]) -> str:
        # `user@1000.service`, `getty@tty1.service`: systemd's templated units, not addresses.
        if _UNIT_SUFFIX.search(match.group(0)):
            return match.group(0)
        return self._placeholder("email", match.group(0))

    def text(self, value: str) -> str:
        value = _EMAIL.sub(self._email, value)
        value = _UUID.sub(lambda m: self._placeholder("id", m.group(0).lower().replace("_", "-")), value)
        value = _LONG_HEX.sub(lambda m: self._placeholder("id", m.group(0).lower()), value)
        value = _IPTABLES_MAC.sub(lambda m: self._placeholder("mac", m.group(0).lower()), value)
        value = _MAC.sub(lambda m: self._placeholder("mac", m.group(0).lower().replace("-", ":")), value)
        value = _IPV6.sub(lambda m: self._placeholder("ipv6", m.group(0).lower()), value)
        value = _IPV4.sub(lambda m: self._placeholder("ip", m.group(0)), value)
        value = _HOME.sub(lambda m: self._placeholder("user", m.group(0)), value)
        if self._hosts is not None:
            value = self._hosts.sub(lambda m: self._placeholder("host", m.group(1)), value)
        return value

    def apply(self, obj: _T) -> _T:
        """A copy of any structure of dataclasses, tuples, lists and dicts with every string redacted."""
        if not self.enabled:
            return obj
        return self._walk(obj)  # type: ignore[no-any-return]

    def _walk(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            changes = {f.name: self._walk(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
            return dataclasses.replace(obj, **changes)
        if isinstance(obj, tuple):
            return tuple(self._walk(item) for item in obj)
        if isinstance(obj, list):
            return [self._walk(item) for item in obj]
        if isinstance(obj, dict):
            return {key: self._walk(value) for key, value in obj.items()}
        return obj

"""`--redact`: replace host names, user names, addresses and long ids with stable placeholders."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, TypeVar

from oomtrace.frozen import Frozen, field_names, replace
from oomtrace.lazyregex import lazy_compile

_T = TypeVar("_T")

_EMAIL = lazy_compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_UNIT_SUFFIX = lazy_compile(r"\.(?:service|socket|target|scope|slice|mount|timer|path|device|swap)$")
# Dashes, or underscores as the systemd cgroup driver writes a pod's uid
# (`kubepods-burstable-pod3f2a…_8b7d_….slice`); right after "pod" as Kubernetes names them.
_UUID = lazy_compile(
    r"(?:(?<=pod)|(?<![0-9A-Fa-f]))"
    r"[0-9A-Fa-f]{8}([-_])[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{4}\1[0-9A-Fa-f]{12}(?![0-9A-Fa-f])"
)
# Boot, machine and container ids are 32 or 64 hex digits; kernel addresses (16) are left alone.
_LONG_HEX = lazy_compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32,}(?![0-9A-Fa-f])")
# Colons or dashes (Windows, some NICs' logs); iptables' `MAC=` holds two addresses and a type.
_MAC = lazy_compile(r"(?<![\w:-])[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![\w:-])")
_IPTABLES_MAC = lazy_compile(r"(?<=MAC=)(?:[0-9A-Fa-f]{2}:)+[0-9A-Fa-f]{2}")
# Full eight-group addresses, or compressed ones with "::" (times and PCI slots have neither).
# A prefix (`2001:db8:abcd::/48`) ends at its "::"; some hex digit is always there (not a bare "::").
_IPV6 = lazy_compile(
    r"(?<![\w:])(?=[0-9A-Fa-f:]*[0-9A-Fa-f])(?:(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}"
    r"|(?:[0-9A-Fa-f]{1,4}:){0,6}[0-9A-Fa-f]{0,4}::(?:(?:[0-9A-Fa-f]{1,4}:){0,6}[0-9A-Fa-f]{1,4})?)(?![\w:])"
)
# An address may end a sentence ("from 10.0.0.5."): a full stop after it is not a fifth part.
_IPV4 = lazy_compile(
    r"(?<!\w)(?<!\d\.)(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\w|\.\d)"
)
_HOME = lazy_compile(r"(?<=/home/)[^/\s]+|(?<=/Users/)[^/\s]+")
# A slice named after a user rather than a uid (`user-alice.slice`; `user-1000.slice` is a number).
_USER_SLICE = lazy_compile(r"(?<=user-)(?!\d+\.slice)[A-Za-z_][\w.-]*?(?=\.slice\b)")
# Cisco's dotted form (`aabb.ccdd.eeff`) and twelve bare hex digits with a letter among them
# (`0cc47a1b2c3d`; a run of decimal digits is a count, `0x...` a kernel value).
_CISCO_MAC = lazy_compile(r"(?<![\w.])[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}(?![\w.])")
_BARE_MAC = lazy_compile(r"(?<![\w:.-])(?=[0-9]*[A-Fa-f])(?=[A-Fa-f]*[0-9])[0-9A-Fa-f]{12}(?![\w:-])")
# What a device or a tool prints after "serial" (`usb 1-3: SerialNumber: 2106WXYZ0042`, `S/N:`).
_SERIAL = lazy_compile(r"(?i)\b((?:serial ?(?:number|no\.?)?|s/n|sn)(?:[:=#] ?| ))(?=[\w-]*\d)([\w-]{4,})")
# Names ending in a suffix only host names have (`.local`, `.internal`) or a public one that
# machines are named under (`.com`, `.io`): `gpu-node-7.corp.example.com`. Not ccTLDs that are
# also file extensions (`.py`, `.so`, `.sh`, `.md`).
_HOST_SUFFIXES = (
    "local|lan|internal|intranet|corp|home|localdomain|arpa|"
    "com|net|org|io|dev|cloud|ai|app|edu|gov|mil|int|biz|info|tech|systems|"
    "de|uk|fr|nl|us|ca|jp|cn|ch|se|no|fi|dk|at|be|es|it|eu|au|nz|in|kr|br|ru|pl|cz"
)
_FQDN = lazy_compile(
    r"(?<![\w.@/-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+(?:" + _HOST_SUFFIXES + r")(?![\w-]|\.\w)",
    re.IGNORECASE,
)
# The host of a URL (`http://gpu-node-7.corp.example.com:8080/v1`, `redis://cache:6379`): after
# `://` and any `user@`, up to a port, a path or the end. Whatever its name, it stands as a host.
_URL_HOST = lazy_compile(
    r"(?<=://)((?:[^@/\s]*@)?)([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?=[:/?#\s\])'\x22,;]|$)"
)
# What is already a placeholder, and the names no one needs hidden.
_NOT_A_HOST = lazy_compile(r"(?:host|ip|ipv6|mac|id|user|email|serial)-\d+|localhost", re.IGNORECASE)
# A stamp that begins a syslog or journalctl line, before the host field.
_PREFIX = r"^((?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\S*) +)"
# A host name learned from prefixes that is a stem and a number (`spark-01`, `gpu12`): the log
# names hosts that way, so any name of that stem and a number is a host (`spark-02`).
_NUMBERED = lazy_compile(r"([A-Za-z][A-Za-z-]*?)([-_]?)\d+")


class Redactor:
    """Maps each sensitive value to a placeholder, the same one every time within a report.

    A host name is replaced where it stands as a host: a record's `host` field, the host of a
    syslog prefix, the first label of a domain name, after `://` or `@`, before `:port`; never
    where the same word is a process or a unit (`postgres`, `postgres.service`). A host name of a
    stem and a number (`spark-01`) is replaced wherever its stem and any number appear."""

    def __init__(self, hosts: Iterable[str] = (), enabled: bool = True, paths: Iterable[str] = ()) -> None:
        self.enabled = enabled
        self._maps: dict[str, dict[str, str]] = {}
        names = sorted({h for h in hosts if h and len(h) > 1}, key=len, reverse=True)
        self._host_names = {h.lower() for h in names}
        alternatives = "|".join(re.escape(h) for h in names)
        self._positions = (
            re.compile(
                # The host of a prefix; after `://` or `user@`; before `:port`; a domain's first label.
                _PREFIX + r"(" + alternatives + r")(?= |\[|:)"
                r"|(?<=://)(" + alternatives + r")(?![\w-])"
                r"|(?<=@)(" + alternatives + r")(?![\w.-])"
                r"|(?<![\w.-])(" + alternatives + r")(?=:\d{1,5}(?!\d))",
                re.IGNORECASE | re.MULTILINE,
            )
            if names
            else None
        )
        stems = sorted(
            {m.group(1) + m.group(2) for h in names if (m := _NUMBERED.fullmatch(h)) and len(m.group(1)) > 1},
            key=len,
            reverse=True,
        )
        self._numbered = (
            re.compile(
                r"(?<![\w.-])(?:"
                + "|".join(re.escape(s) for s in stems)
                + r")\d+(?![\w-])(?!\.(?:service|scope|slice|socket|target|mount|timer))",
                re.IGNORECASE,
            )
            if stems
            else None
        )
        self._paths = sorted({p for p in paths if p and p != "-"}, key=len, reverse=True)

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
        for path in self._paths:
            if path in value:
                value = value.replace(path, self._path(path))
        value = _EMAIL.sub(self._email, value)
        value = _UUID.sub(lambda m: self._placeholder("id", m.group(0).lower().replace("_", "-")), value)
        value = _LONG_HEX.sub(lambda m: self._placeholder("id", m.group(0).lower()), value)
        value = _IPTABLES_MAC.sub(lambda m: self._placeholder("mac", m.group(0).lower()), value)
        value = _MAC.sub(lambda m: self._placeholder("mac", m.group(0).lower().replace("-", ":")), value)
        value = _CISCO_MAC.sub(lambda m: self._placeholder("mac", _colons(m.group(0))), value)
        value = _IPV6.sub(lambda m: self._placeholder("ipv6", m.group(0).lower()), value)
        value = _IPV4.sub(lambda m: self._placeholder("ip", m.group(0)), value)
        value = _BARE_MAC.sub(lambda m: self._placeholder("mac", _colons(m.group(0))), value)
        value = _SERIAL.sub(lambda m: m.group(1) + self._placeholder("serial", m.group(2)), value)
        value = _HOME.sub(lambda m: self._placeholder("user", m.group(0)), value)
        value = _USER_SLICE.sub(lambda m: self._placeholder("user", m.group(0)), value)
        value = _URL_HOST.sub(self._url_host, value)
        value = _FQDN.sub(self._fqdn, value)
        if self._positions is not None:
            value = self._positions.sub(self._position, value)
        if self._numbered is not None:
            value = self._numbered.sub(lambda m: self._host(m.group(0)), value)
        return value

    def _host(self, name: str) -> str:
        return self._placeholder("host", name.lower())

    def _url_host(self, match: re.Match[str]) -> str:
        userinfo, name = match.group(1), match.group(2)
        if _NOT_A_HOST.fullmatch(name):
            return match.group(0)
        return (self._placeholder("user", userinfo) + "@" if userinfo else "") + self._domain(name)

    def _fqdn(self, match: re.Match[str]) -> str:
        return self._domain(match.group(0))

    def _domain(self, name: str) -> str:
        first = name.split(".", 1)[0]
        # `gpu01.prod.example.com` is the host gpu01: the same placeholder as the bare name.
        return self._host(first if first.lower() in self._host_names else name)

    def _position(self, match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(1) + self._host(match.group(2))
        return self._host(next(g for g in match.groups()[2:] if g is not None))

    def _path(self, path: str) -> str:
        """An input file's name with the host names in it replaced (`spark-01-kern.log`)."""
        hidden = path
        for host in sorted(self._host_names, key=len, reverse=True):
            hidden = re.sub(
                r"(?<![A-Za-z0-9])" + re.escape(host) + r"(?![A-Za-z0-9])",
                lambda m: self._host(m.group(0)),
                hidden,
                flags=re.IGNORECASE,
            )
        return _HOME.sub(lambda m: self._placeholder("user", m.group(0)), hidden)

    def apply(self, obj: _T) -> _T:
        """A copy of any structure of records (Frozen), tuples, lists and dicts, every string redacted."""
        if not self.enabled:
            return obj
        return self._walk(obj)  # type: ignore[no-any-return]

    def _field(self, name: str, value: Any) -> Any:
        """A record's host field is a host whatever its name (`postgres`, a word that may also be a
        process's): only there is the bare name replaced."""
        if name == "host" and isinstance(value, str):
            return self._host(value)
        if name == "hosts" and isinstance(value, tuple):
            return tuple(self._host(h) if isinstance(h, str) else self._walk(h) for h in value)
        return self._walk(value)

    def _walk(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Frozen):
            changes = {name: self._field(name, getattr(obj, name)) for name in field_names(obj)}
            return replace(obj, **changes)
        if isinstance(obj, tuple):
            return tuple(self._walk(item) for item in obj)
        if isinstance(obj, list):
            return [self._walk(item) for item in obj]
        if isinstance(obj, dict):
            return {key: self._walk(value) for key, value in obj.items()}
        return obj


def _colons(mac: str) -> str:
    """A MAC in any of its forms as the colon form, so each form of one address is one placeholder."""
    digits = re.sub(r"[^0-9A-Fa-f]", "", mac).lower()
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))

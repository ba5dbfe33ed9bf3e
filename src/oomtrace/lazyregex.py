"""Regular expressions compiled on their first use, not when their module is imported."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, AnyStr, cast

_METHODS = ("match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split")
_ATTRIBUTES = ("flags", "groups", "groupindex")


class _OnFirstUse:
    """Stands in for a compiled pattern. The first call of any of its methods compiles it and
    puts the compiled pattern's own bound methods in the instance's dict, where they shadow the
    class's: every later `X.match(...)` is the compiled pattern's, as quick as without this
    (no `__getattr__`, which would slow every lookup).

    A `why` on a short log uses 47 of the 153 patterns oomtrace's modules define; compiling all
    of them at import cost a sixth of its start-up."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[Any] | None = None

    def _compile(self) -> re.Pattern[Any]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self._flags)
            for name in _METHODS:
                setattr(self, name, getattr(self._compiled, name))
        return self._compiled

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags})"


def _first_call(name: str) -> Callable[..., Any]:
    def method(self: _OnFirstUse, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._compile(), name)(*args, **kwargs)

    method.__name__ = name
    return method


def _attribute(name: str) -> property:
    return property(lambda self: getattr(self._compile(), name))


for _name in _METHODS:
    setattr(_OnFirstUse, _name, _first_call(_name))
for _name in _ATTRIBUTES:
    setattr(_OnFirstUse, _name, _attribute(_name))


def lazy_compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled when first used: for the patterns a module
    defines at its top, most of which a given run never needs."""
    return cast("re.Pattern[AnyStr]", _OnFirstUse(pattern, flags))

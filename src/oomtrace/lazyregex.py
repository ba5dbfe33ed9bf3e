"""Regular expressions compiled on their first use, not when their module is imported."""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

_METHODS = ("match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "split")


class _OnFirstUse:
    """Stands in for a compiled pattern. The first call of any of its methods compiles it and
    puts the compiled pattern's own bound methods in the instance's dict, where they shadow the
    class's: every later `X.match(...)` is the compiled pattern's, as quick as without this.

    A `why` on a short log uses about a third of the registry's patterns; compiling all of
    them at import cost a sixth of its start-up."""

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

    def match(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().match(*args, **kwargs)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().search(*args, **kwargs)

    def fullmatch(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().fullmatch(*args, **kwargs)

    def findall(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().findall(*args, **kwargs)

    def finditer(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().finditer(*args, **kwargs)

    def sub(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().sub(*args, **kwargs)

    def subn(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().subn(*args, **kwargs)

    def split(self, *args: Any, **kwargs: Any) -> Any:
        return self._compile().split(*args, **kwargs)

    @property
    def flags(self) -> int:
        return self._compile().flags

    @property
    def groups(self) -> int:
        return self._compile().groups

    @property
    def groupindex(self) -> Any:
        return self._compile().groupindex

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags})"


def lazy_compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled when first used: for the patterns a module
    defines at its top, most of which a given run never needs."""
    return cast("re.Pattern[AnyStr]", _OnFirstUse(pattern, flags))

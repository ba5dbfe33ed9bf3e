"""The one base of the records passed between stages: immutable, compared and hashed by fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

_F = TypeVar("_F", bound="Frozen")


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Any:
        return lambda cls: cls


# For type checkers: every subclass is frozen too, as msgspec makes it (its options are inherited).
@dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
class Frozen(msgspec.Struct, frozen=True):
    """A model class: declare fields as for a dataclass (defaults last, a docstring under a field
    where its name is not enough); build it with positional or keyword arguments; change a copy
    with `replace`. Immutable, equal when of one class with equal fields, hashed by its fields,
    with no per-instance dict (a subclass that caches with `functools.cached_property` says
    `dict=True`).

    A msgspec Struct rather than a frozen dataclass: `dataclass` writes its methods' source and
    `exec`s it as each class is defined, about 0.7 ms a class, and defining the hundred of them
    was two fifths of a `why` on a short log; a Struct's methods are msgspec's, made in C."""


field = msgspec.field


def replace(record: _F, /, **changes: Any) -> _F:
    """A copy of `record` with these fields changed (`dataclasses.replace`)."""
    return msgspec.structs.replace(record, **changes)


def field_names(record: Frozen | type[Frozen]) -> tuple[str, ...]:
    """The fields of a record or of its class, in order (`dataclasses.fields`, names only)."""
    return record.__struct_fields__


def asdict(record: Frozen) -> dict[str, Any]:
    """Its fields by name, every record within (in tuples, lists and dicts too) a dict as well,
    as `dataclasses.asdict` makes them: what the JSON format writes."""
    return {name: _plain(getattr(record, name)) for name in record.__struct_fields__}


def _plain(value: Any) -> Any:
    if isinstance(value, Frozen):
        return asdict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_plain(item) for item in value))
    if isinstance(value, tuple | list):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    return value

"""`list`: every OOM kill in the input, one row each (or one row per host), and the journal's boots."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomtrace.errors import UsageError
from oomtrace.frozen import Frozen, replace
from oomtrace.model import Analysis
from oomtrace.usecases.reading import Say, read, redactor
from oomtrace.usecases.settings import Settings

if TYPE_CHECKING:
    from oomtrace.listview import HostsView, ListView
    from oomtrace.sources.journal import Boot


class ListResult(Frozen):
    """The kills, redacted as shown: a row per victim (or kill), or with `by_host` a row per host."""

    analysis: Analysis
    view: ListView | None = None
    hosts: HostsView | None = None


def list_kills(settings: Settings, every: bool, by_host: bool, say: Say) -> ListResult:
    from oomtrace.listview import hosts_view, list_view  # only `list` shows its view

    analysis, _ = read(settings, say)
    analysis = redactor(settings, analysis).apply(analysis)
    if by_host:
        return ListResult(analysis, hosts=hosts_view(analysis))
    return ListResult(analysis, view=list_view(analysis, every))


def list_boots(settings: Settings) -> list[Boot]:
    """The journal's boots (`list --boots`), whatever --boot chose."""
    if settings.journal is None:
        raise UsageError(
            "--boots needs a journal",
            hint="pass --journal-dir or --journal-file, or run where the system journal is",
        )
    from oomtrace.sources.journal import list_boots

    return list_boots(replace(settings.journal, boot=None))

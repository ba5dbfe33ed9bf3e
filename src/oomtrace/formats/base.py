"""The seam every output format implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:  # annotations only: `why` need not import the list's view
    from oomtrace.listview import HostsView, ListView
    from oomtrace.model import Analysis
    from oomtrace.sources.journal import Boot
    from oomtrace.storyview import ReportView, WhyView
    from oomtrace.verdict import Verdict


class Format(ABC):
    """Renders a view (`list`, `why`, `report`) onto a console it is given: it words nothing itself."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @abstractmethod
    def list_episodes(self, analysis: Analysis, view: ListView) -> None:
        """`list`: the kills, as the view words them (tables) or each episode (JSON)."""

    @abstractmethod
    def hosts(self, view: HostsView) -> None:
        """`list --by-host`: one row per host, the host with the latest kill first."""

    @abstractmethod
    def why(self, analysis: Analysis, view: WhyView) -> None:
        """`why`: the verdict, and the story of each death (none when the target was not killed)."""

    @abstractmethod
    def report(self, analysis: Analysis, view: ReportView) -> None:
        """`oomtrace report`: every incident in a range with counts per victim and cause."""

    @abstractmethod
    def boots(self, boots: list[Boot]) -> None:
        """`list --boots`: the journal's boots, oldest first, each with its index and span."""

    @abstractmethod
    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        """What `why` prints on stdout when there is no record (the error goes to stderr)."""

"""A deferred report's outline (`Freezer.outline`) finds its victim without splitting the whole
tasks table: it must name the same Victim as the whole episode does, on drafts where the
lookup is not the plain pid one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from dateutil import tz

from oomtrace import events as ev
from oomtrace.episodes import EpisodeBuilder, Freezer
from oomtrace.episodes.victim import victim_of
from oomtrace.prefixes import LineSplitter
from oomtrace.rejoin import parse_records
from tests.reshaped import global_report

ROW = "[ 124531]  1000 124531 69987630      800      242      558         0        1568768        0          1000 ds4-server"
KILL = "Killed process 124531 (ds4-server) total-vm"
SUMMARY = ",pid=124531,uid=1000"


def _freezer(lines: list[str]) -> Freezer:
    """The draft of the one report in lines, as the builder holds it before closing it."""
    builder = EpisodeBuilder()
    builder.begin_source("t", "file")
    splitter = LineSplitter("t", zone=tz.UTC, year=2026)
    records = (r for number, line in enumerate(lines, start=1) for r in splitter.split(line, number))
    for record, event in parse_records(records):
        builder.feed(record, event)
    draft = builder._assembler.current
    assert draft is not None
    return Freezer(draft, builder._ledger.resolve)


def _edit(old: str, new: str) -> Callable[[str], str]:
    return lambda line: line.replace(old, new)


def _other_row(pid: int, name: str = "ds4-server") -> str:
    return ROW.replace("124531", str(pid)).replace("ds4-server", name)


# Each: how the report's lines change, and what the draft must then hold (so the case is the one named).
CASES: dict[str, tuple[Callable[[list[str]], list[str]], Callable[[Freezer], bool]]] = {
    "plain": (lambda lines: lines, lambda f: f.draft.kill is not None and f.draft.kill.pid == 124531),
    "kill pid missing, summary's pid": (
        lambda lines: [_edit(KILL, "Killed process ? (ds4-server) total-vm")(x) for x in lines],
        lambda f: f.draft.kill is not None and f.draft.kill.pid is None,
    ),
    "no pid anywhere: the row by name": (
        lambda lines: [
            _edit(SUMMARY, ",uid=1000")(_edit(KILL, "Killed process ? (ds4-server) total-vm")(x))
            for x in lines
        ],
        lambda f: f.draft.kill is not None and f.draft.kill.pid is None,
    ),
    "no pid anywhere, two rows of the name": (
        lambda lines: [
            y
            for x in lines
            for y in (
                [_edit(SUMMARY, ",uid=1000")(_edit(KILL, "Killed process ? (ds4-server) total-vm")(x))]
                + ([x[:15] + _other_row(777)] if ROW in x else [])
            )
        ],
        lambda f: f.draft.kill is not None and f.draft.kill.pid is None and len(f.all(ev.TaskRow)) >= 2,
    ),
    "name cut": (
        lambda lines: [x.split(" total-vm")[0][:-4] if KILL in x else x for x in lines],
        lambda f: f.draft.kill is not None and f.draft.kill.comm_cut,
    ),
    "name cut, summary without the task": (
        lambda lines: [
            x.split(" total-vm")[0][:-4] if KILL in x else _edit(",task=ds4-server", "")(x) for x in lines
        ],
        lambda f: f.draft.kill is not None and f.draft.kill.comm_cut,
    ),
    # The name cut and the summary without it: the victim's name comes from its row.
    "victim's row unsplittable, a later row of its pid": (
        lambda lines: [
            y
            for x in lines
            for y in (
                [_edit(" 800 ", " 8x0 ")(x), x[:15] + _other_row(124531, "ds4-server-b")]
                if ROW in x
                else [x.split(" total-vm")[0][:-4] if KILL in x else _edit(",task=ds4-server", "")(x)]
            )
        ],
        lambda f: len(f.all(ev.TaskRow)) >= 2 and f.draft.kill is not None and f.draft.kill.comm_cut,
    ),
    "victim's row unsplittable and alone": (
        lambda lines: [
            _edit(" 800 ", " 8x0 ")(x)
            if ROW in x
            else (x.split(" total-vm")[0][:-4] if KILL in x else _edit(",task=ds4-server", "")(x))
            for x in lines
        ],
        lambda f: f.draft.kill is not None and f.draft.kill.comm_cut,
    ),
    "no kill line: the summary's task": (
        lambda lines: [x for x in lines if KILL not in x],
        lambda f: f.draft.kill is None,
    ),
    "no kill line, no adj column: the last number": (
        lambda lines: [x for x in lines if KILL not in x and "[  pid  ]" not in x],
        lambda f: f.draft.kill is None and f.first(ev.TasksHeader) is None,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_outlines_victim_is_the_episodes(case: str) -> None:
    change, holds = CASES[case]
    freezer = _freezer(change(global_report(100.0)))
    assert holds(freezer), case
    whole = freezer.episode(1).victim
    assert whole is not None
    assert freezer.outline().victim == whole
    # Tasks read from the whole table and from only the rows looked up: one Victim.
    summary = freezer.first(ev.OomKillSummary)
    assert victim_of(freezer, summary) == victim_of(freezer, summary, freezer.tasks()[1]) == whole

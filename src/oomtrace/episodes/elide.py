"""The kills a very long log does not keep whole, and the reports kept unfrozen until the end.

A crash loop of 200,000 kills keeps its first and last kills (build.KEPT_FIRST, KEPT_LAST);
each kill pushed out of the middle is counted here, so an output can say what was not kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from oomtrace.episodes.freeze import Freezer
from oomtrace.model import Elided, Episode, KillIndex, Moment
from oomtrace.services import cause_of, victim_label

# Victim names an elision counts one by one; the rest are "other".
_ELIDED_NAMES = 1000


class Deferred(NamedTuple):
    """A kill kept unfrozen: its outline, and the freezer that makes the whole episode."""

    outline: Episode
    freezer: Freezer


def outline_of(kept: Episode | Deferred) -> Episode:
    return kept.outline if isinstance(kept, Deferred) else kept


def thawed(kept: Episode | Deferred) -> Episode:
    # The freezer resolves times with the boot times known now, a superset of those known when
    # the report closed (EpisodeBuilder._resolved fills the rest either way).
    return kept.freezer.episode(0) if isinstance(kept, Deferred) else kept


class Elision:
    """What the kills not kept had in common: how many, when, who died and why; and where each
    was, so that `why PID` can still find one."""

    def __init__(self) -> None:
        self.kills = 0
        self.first: Moment | None = None
        self.last: Moment | None = None
        self.victims: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()
        self.spans: dict[str, tuple[Moment, Moment]] = {}
        self.index = KillIndex()

    def add(self, episode: Episode) -> None:
        self.kills += 1
        if self.first is None:
            self.first = episode.moment
        self.last = episode.moment
        name = victim_label(episode)
        if name not in self.victims and len(self.victims) >= _ELIDED_NAMES:
            name = "(other)"
        self.victims[name] += 1
        self.spans[name] = (self.spans.get(name, (episode.moment,))[0], episode.moment)
        self.causes[cause_of(episode)] += 1
        self.index.add(episode.victim.pid if episode.victim is not None else None, episode.moment)

    def summary(
        self, runs_dropped: int, resolve: Callable[[Moment], Moment], kept_first: int, kept_last: int
    ) -> Elided:
        self.index.resolve(resolve)
        return Elided(
            kills=self.kills,
            first=resolve(self.first) if self.first is not None else None,
            last=resolve(self.last) if self.last is not None else None,
            victims=tuple(self.victims.most_common(10)),
            warning_runs=runs_dropped,
            kept_first=kept_first,
            kept_last=kept_last,
            causes=tuple(self.causes.most_common()),
            spans=tuple(
                (name, count, resolve(self.spans[name][0]), resolve(self.spans[name][1]))
                for name, count in self.victims.most_common()
            ),
            index=self.index,
        )

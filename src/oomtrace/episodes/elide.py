"""The kills a very long log does not keep whole, and the reports kept unfrozen until the end.

A crash loop of 200,000 kills keeps its first and last kills (build.KEPT_FIRST, KEPT_LAST);
each kill pushed out of the middle is counted here, so an output can say what was not kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple

from oomtrace.episodes.freeze import Freezer
from oomtrace.episodes.incidents import BURST_GAP_S, moment_gap, one_shortage, scope
from oomtrace.model import Elided, Episode, KillIndex, KillKind, Moment
from oomtrace.services import cause_of, unit_of, victim_label

# Victim names an elision counts one by one; the rest are "other".
_ELIDED_NAMES = 1000
# (host, victim) pairs and metric label sets counted one by one; past these, the victim is "(other)".
_ELIDED_PAIRS = 10_000
_ELIDED_KINDS = 1000
# Hosts whose open shortage is followed one by one (a fleet's merged log).
_ELIDED_HOSTS = 10_000
# Minutes counted one by one for the chart (a crash loop of 69 days); past this, quarter-hours
# (every zone's offset is a whole number of them, so a chart's buckets still hold their own).
_ELIDED_MINUTES = 100_000
_QUARTER_S = 900


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
        self.host: str | None = None
        self.by_host: Counter[tuple[str | None, str]] = Counter()
        self.by_kind: Counter[KillKind] = Counter()
        self.minutes: Counter[int] = Counter()
        self._minute_s = 60
        self.one_burst = True
        self.scope: tuple[str, str | None] = ("unknown", None)
        self.shortages = 0
        """How many shortages (incidents' worth: incidents.py's rule, host by host) they hold."""
        self._first_on: dict[str | None, tuple[Moment, tuple[str, str | None]]] = {}
        self._open_on: dict[str | None, tuple[Moment, tuple[str, str | None]]] = {}
        """Each host's first kill among them, and its latest with the scope of its shortage."""

    def add(self, episode: Episode) -> None:
        self.kills += 1
        self._burst(episode)
        self._shortage(episode)
        if self.first is None:
            self.first = episode.moment
        self.last = episode.moment
        self._count(episode)
        name = victim_label(episode)
        if name not in self.victims and len(self.victims) >= _ELIDED_NAMES:
            name = "(other)"
        self.victims[name] += 1
        self.spans[name] = (self.spans.get(name, (episode.moment,))[0], episode.moment)
        self.causes[cause_of(episode)] += 1
        self.index.add(episode.victim.pid if episode.victim is not None else None, episode.moment)

    def _burst(self, episode: Episode) -> None:
        """Are the kills so far one shortage still (one host, one scope, no gap past a burst's)?"""
        mine = scope(episode)
        if self.last is None:
            self.scope = mine
            return
        if not self.one_burst:
            return
        gap = moment_gap(self.last, episode.moment)
        if (
            episode.host != self.host
            or gap is None
            or not 0 <= gap <= BURST_GAP_S
            or not one_shortage(mine, self.scope)
        ):
            self.one_burst = False
        elif self.scope[0] == "unknown" or (mine[0] == "memcg" and self.scope[1] is None):
            self.scope = mine

    def _shortage(self, episode: Episode) -> None:
        """Count a new shortage where incidents_of would open a new incident: another host's, a
        gap past a burst's, or another scope."""
        host, mine = episode.host, scope(episode)
        open_ = self._open_on.get(host)
        gap = moment_gap(open_[0], episode.moment) if open_ is not None else None
        if open_ is None or gap is None or not 0 <= gap <= BURST_GAP_S or not one_shortage(mine, open_[1]):
            self.shortages += 1
        elif open_[1][0] != "unknown" and not (mine[0] == "memcg" and open_[1][1] is None):
            mine = open_[1]
        if host not in self._open_on and len(self._open_on) >= _ELIDED_HOSTS:
            return  # past the bound, each kill of a new host counts as a shortage of its own
        self._open_on[host] = (episode.moment, mine)
        self._first_on.setdefault(host, (episode.moment, mine))

    def incidents_beside(self, before: Episode | None, after: Episode | None, bridged: bool) -> int:
        """The shortages among them that are no kept incident's: those the kept kill just before
        them (`before`) or just after (`after`) does not continue. `bridged`: the kept incidents
        on both sides were joined into one through them (incidents.Bridge)."""
        count = self.shortages - _continues(before, self._first_on, into=True)
        count -= _continues(after, self._open_on, into=False)
        return max(0, count + bridged)

    def _count(self, episode: Episode) -> None:
        """Its host, its metric labels and its minute: what `list --by-host`, `export` and the
        chart count of the whole log."""
        if self.kills == 1:
            self.host = episode.host
        name = victim_label(episode)
        pair = (episode.host, name)
        if pair not in self.by_host and len(self.by_host) >= _ELIDED_PAIRS:
            pair = (episode.host, "(other)")
        self.by_host[pair] += 1
        victim = episode.victim
        kind = KillKind(
            episode.constraint,
            episode.killer,
            episode.unit or unit_of(episode.task_memcg),
            episode.task_memcg or episode.memcg,
            victim.comm if victim is not None else None,
        )
        if kind not in self.by_kind and len(self.by_kind) >= _ELIDED_KINDS:
            kind = KillKind(episode.constraint, episode.killer, None, None, "(other)")
        self.by_kind[kind] += 1
        time = episode.moment.time
        if time is not None:
            step = self._minute_s
            self.minutes[int(time.timestamp()) // step * step] += 1
            if len(self.minutes) > _ELIDED_MINUTES and step < _QUARTER_S:
                self._minute_s = _QUARTER_S
                quarters: Counter[int] = Counter()
                for second, count in self.minutes.items():
                    quarters[second // _QUARTER_S * _QUARTER_S] += count
                self.minutes = quarters

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
            by_host=tuple((host, name, count) for (host, name), count in self.by_host.most_common()),
            by_kind=tuple(self.by_kind.most_common()),
            per_minute=tuple(
                (datetime.fromtimestamp(second, UTC), count) for second, count in sorted(self.minutes.items())
            ),
            one_burst=self.one_burst and self.kills > 0,
            host=self.host,
            scope=self.scope,
        )


def _continues(
    kept: Episode | None, ends: dict[str | None, tuple[Moment, tuple[str, str | None]]], into: bool
) -> bool:
    """Does the kept kill make one shortage with the elided kill at that end on its host?"""
    if kept is None or kept.host not in ends:
        return False
    moment, shortage = ends[kept.host]
    gap = moment_gap(kept.moment, moment) if into else moment_gap(moment, kept.moment)
    return gap is not None and 0 <= gap <= BURST_GAP_S and one_shortage(scope(kept), shortage)

"""The `oomtrace/1` JSON contract (docs/json.md): add fields freely, never rename."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from oomtrace.badness import Ranking
from oomtrace.charts import Chart, memory_chart, run_up, samples_trace
from oomtrace.explain import MemoryPicture, explain_episode, plan_comparison
from oomtrace.formats.base import Format
from oomtrace.frozen import asdict
from oomtrace.listview import HostsView, ListView
from oomtrace.model import Analysis, Elided, Episode, Incident, KernelWarning, Moment
from oomtrace.sanitize import INVISIBLE
from oomtrace.services import restart_count
from oomtrace.story import Story, TimelineEntry
from oomtrace.storyview import ReportView, WhyView
from oomtrace.units import iso_time
from oomtrace.verdict import Verdict

if TYPE_CHECKING:
    from oomtrace.sources.journal import Boot

SCHEMA = "oomtrace/1"


class JsonFormat(Format):
    def list_episodes(self, analysis: Analysis, view: ListView) -> None:
        # Every episode, whatever the view folded: a program wants each kill.
        self._emit(
            {
                "schema": SCHEMA,
                "source": source_json(analysis),
                "episodes": (episode_json(e) for e in analysis.episodes),
                "warnings": (warning_json(w) for w in analysis.warnings),
                "incidents": (incident_json(i) for i in analysis.incidents),
            }
        )

    def why(self, analysis: Analysis, view: WhyView) -> None:
        stories, verdict = view.stories_data, view.verdict_data
        document: dict[str, Any] = {"schema": SCHEMA, **_empty_story(verdict.query)}
        if stories:
            document.update(story_json(stories[-1]))
        document.update(verdict_json(verdict, stories[-1] if stories else None))
        document["source"] = source_json(analysis)
        if len(stories) > 1:
            document["all"] = (story_json(s) for s in stories)
        self._emit(document)

    def report(self, analysis: Analysis, view: ReportView) -> None:
        report = view.report_data
        self._emit(
            {
                "schema": SCHEMA,
                "since": iso_time(report.since),
                "until": iso_time(report.until),
                "counts": {
                    "incidents": report.incidents,
                    "kept_incidents": len(report.stories),
                    "kills": sum(n for _, n in report.by_victim),
                    "kept_kills": report.kept,
                    "by_victim": dict(report.by_victim),
                    "by_cause": dict(report.by_cause),
                },
                "untimed_episodes": report.untimed,
                "charts": {"kills_over_time": _chart_json(view.kills_chart)},
                "incidents": (story_json(s) for s in report.stories),
                "source": source_json(analysis),
            }
        )

    def hosts(self, view: HostsView) -> None:
        self._emit(
            {
                "schema": SCHEMA,
                "hosts": list(view.hosts),
                "notes": list(view.notes),
                "charts": {"kills_per_host": _chart_json(view.chart)},
            }
        )

    def boots(self, boots: list[Boot]) -> None:
        rows = [
            {"index": b.index, "boot_id": b.boot_id, "first": iso_time(b.first), "last": iso_time(b.last)}
            for b in boots
        ]
        self._emit({"schema": SCHEMA, "boots": rows})

    def not_found(self, analysis: Analysis, query: str, verdict: Verdict) -> None:
        document: dict[str, Any] = {"schema": SCHEMA, **_empty_story(query), **verdict_json(verdict, None)}
        document["victims_in_input"] = [
            {"comm": e.victim.comm, "pid": e.victim.pid, "time": iso_time(e.moment.time)}
            for e in analysis.episodes
            if e.victim
        ]
        document["source"] = source_json(analysis)
        self._emit(document)

    def _emit(self, document: dict[str, Any]) -> None:
        """The document as `json.dumps(indent=2)` writes it, but a top-level value that is an
        iterator is written item by item: a list of 200,000 episodes is never one string."""
        # Plain writes: rich would wrap or highlight; json.dumps escapes control characters.
        write = self.console.file.write
        # An output that cannot take every character (PYTHONIOENCODING=ascii) gets \u escapes.
        encoding = (getattr(self.console.file, "encoding", None) or "utf-8").lower().replace("-", "")
        plain = encoding.startswith("utf")
        write("{")
        for number, (key, value) in enumerate(document.items()):
            write(("," if number else "") + f"\n  {json.dumps(key)}: ")
            if not isinstance(value, Iterator):
                write(_dumps(value, 2, plain))
                continue
            write("[")
            empty = True
            for item in value:
                write(("\n    " if empty else ",\n    ") + _dumps(item, 4, plain))
                empty = False
            write("]" if empty else "\n  ]")
        write("\n}\n" if document else "}\n")


def _dumps(value: Any, indent: int, plain: bool = True) -> str:
    """`value` as it appears `indent` spaces deep in an indent=2 document."""
    text = json.dumps(value, indent=2, ensure_ascii=not plain).replace("\n", "\n" + " " * indent)
    # json.dumps keeps what is not ASCII as it is, bidi overrides, zero-width spaces, U+2028, a
    # Hangul filler and C1 controls too: those (sanitize.INVISIBLE) are written `\u202e`, as
    # ensure_ascii would (they only occur inside strings, so the document reads back the same):
    # a viewer of the JSON cannot be fooled.
    return INVISIBLE.sub(_json_escape, text) if plain and not text.isascii() else text


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def moment_json(moment: Moment | None) -> dict[str, Any] | None:
    if moment is None:
        return None
    return {
        "time": iso_time(moment.time),
        "uptime_s": moment.uptime_s,
        "raw_time": moment.raw,
        "source": moment.source,
        "line": moment.line,
    }


def episode_json(episode: Episode) -> dict[str, Any]:
    moment = episode.moment
    why = explain_episode(episode)
    victim = asdict(episode.victim) if episode.victim else None
    if victim is not None:
        victim["oom_score_adj_origin"] = why.adj_origin
    return {
        "id": episode.id,
        "killer": episode.killer,
        "doubt": episode.doubt,
        "time": iso_time(moment.time),
        "uptime_s": moment.uptime_s,
        "raw_time": moment.raw,
        "source": moment.source,
        "host": episode.host,
        "trigger": asdict(episode.trigger) if episode.trigger else None,
        "request": why.request,
        "call_path": why.call_path,
        "constraint": episode.constraint,
        "constraint_from": episode.constraint_from,
        "memcg": episode.memcg,
        "memcg_from": episode.memcg_from,
        "memcg_owner": why.memcg_owner,
        "task_memcg": episode.task_memcg,
        "task_memcg_owner": why.task_memcg_owner,
        "victim": victim,
        "outside_rss_note": why.outside_rss,
        "why_victim": why.reason,
        "ranking": _ranking_json(why.ranking),
        "top_holders": [asdict(h) for h in why.holders],
        "cotenants": why.cotenants,
        "chosen": asdict(episode.chosen) if episode.chosen else None,
        "task_columns": list(episode.task_columns),
        "tasks": [dict(row) for row in episode.tasks],
        "kernel": episode.kernel,
        "hardware": episode.hardware,
        "call_trace": [f.function + (f" [{f.module}]" if f.module else "") for f in episode.call_trace],
        "mem_info": dict(episode.mem_info),
        "page_size_kb": episode.page_size_kb,
        "page_size_from": episode.page_size_from,
        "pages": dict(episode.pages),
        "zones": [asdict(z) for z in episode.zones],
        "swap": {"total_kb": episode.swap_total_kb, "free_kb": episode.swap_free_kb},
        "memcg_usage": [asdict(c) for c in episode.memcg_usage],
        "memcg_stats_path": episode.memcg_stats_path,
        "memcg_stats": dict(episode.memcg_stats),
        "reaped": _reap_json(episode),
        "no_killable": episode.no_killable,
        "panic": episode.panic,
        "suppressed_reports": episode.suppressed_reports,
        "missing": list(episode.missing),
        "trimmed": list(episode.trimmed),
        "lines": list(episode.lines),
        "unit": episode.unit,
        "unit_records": [
            {
                "kind": n.kind,
                "detail": n.detail,
                "count": n.count,
                "peak_kb": n.peak_kb,
                "text": n.text,
                "time": iso_time(n.moment.time),
            }
            for n in episode.unit_notes
        ],
        "restart_count": restart_count(episode),
        "killer_reason": episode.killer_reason,
        "witnesses": [
            {"who": w.who, "text": w.text, "time": iso_time(w.moment.time)} for w in episode.witnesses
        ],
    }


def _ranking_json(ranking: Ranking | None) -> dict[str, Any] | None:
    if ranking is None:
        return None
    return {
        "formula": ranking.formula,
        "total_pages": ranking.total_pages,
        "victim_rank": ranking.victim_rank,
        "candidates": len(ranking.candidates),
        "top": [asdict(c) for c in ranking.candidates[:10]],
        "top_without_adj": asdict(ranking.top_without_adj) if ranking.top_without_adj else None,
        "printed_score": ranking.printed_score,
        "recomputed_score": ranking.recomputed_score,
    }


def _reap_json(episode: Episode) -> dict[str, Any] | None:
    reap = episode.reaped
    if reap is None:
        return None
    return {
        "pid": reap.pid,
        "comm": reap.comm,
        "anon_rss_kb": reap.anon_rss_kb,
        "file_rss_kb": reap.file_rss_kb,
        "shmem_rss_kb": reap.shmem_rss_kb,
        "time": iso_time(reap.moment.time),
        "uptime_s": reap.moment.uptime_s,
    }


def warning_json(warning: KernelWarning) -> dict[str, Any]:
    return {
        "kind": warning.kind,
        "key": warning.key,
        "time": iso_time(warning.first.time),
        "uptime_s": warning.first.uptime_s,
        "raw_time": warning.first.raw,
        "text": warning.text,
        "count": warning.count,
        "last_time": iso_time(warning.last.time),
        "last_uptime_s": warning.last.uptime_s,
        "source": warning.first.source,
        "line": warning.first.line,
        "host": warning.host,
    }


def incident_json(incident: Incident) -> dict[str, Any]:
    return {
        "id": incident.id,
        "episodes": list(incident.episode_ids),
        "warnings": [warning_json(w) for w in incident.warnings],
        "earliest_warning": warning_json(incident.earliest_warning) if incident.earliest_warning else None,
        "lead_time_s": incident.lead_time_s,
        "during": [warning_json(w) for w in incident.during],
        "beside": list(incident.beside),
    }


def memory_json(memory: MemoryPicture | None) -> dict[str, Any] | None:
    return asdict(memory) if memory else None


def timeline_json(entry: TimelineEntry) -> dict[str, Any]:
    return {
        "time": iso_time(entry.moment.time),
        "uptime_s": entry.moment.uptime_s,
        "offset_s": entry.offset_s,
        "kind": entry.kind,
        "text": entry.text,
        "episode": entry.episode_id,
    }


def story_json(story: Story) -> dict[str, Any]:
    return {
        "query": story.query,
        "found": True,
        "cause": story.cause,
        "episode": episode_json(story.episode),
        "collateral": [episode_json(e) for e in story.collateral],
        "collateral_more": story.collateral_more,
        "earliest_warning": warning_json(story.earliest_warning) if story.earliest_warning else None,
        "lead_time_s": story.lead_time_s,
        "warnings_before": [warning_json(w) for w in story.warnings_before],
        "warned_before_incident": story.warned_before_incident,
        "timeline": [timeline_json(t) for t in story.timeline],
        "timeline_warnings_more": story.warnings_more,
        "memory": memory_json(story.memory),
        "incident": story.incident.id if story.incident else None,
        "elsewhere": [{"episode": other.id, "incident": number} for other, number in story.elsewhere],
        "charts": {
            "memory": _chart_json(memory_chart(story.memory)),
            "run_up": _chart_json(run_up(story.timeline)),
            "samples": _chart_json(samples_trace(story.samples, story.episode.moment.time, story.timeline)),
        },
    }


def _chart_json(chart: Chart | None) -> dict[str, object] | None:
    """A chart's series as the Markdown and terminal pictures draw them."""
    return chart.data() if chart is not None else None


def source_json(analysis: Analysis) -> dict[str, Any]:
    sources = analysis.sources
    firsts = [s.first for s in sources if s.first is not None]
    lasts = [s.last for s in sources if s.last is not None]
    return {
        "kind": sources[0].kind if len(sources) == 1 else "files",
        "names": [s.name for s in sources],
        "records": sum(s.records for s in sources),
        "first": moment_json(firsts[0]) if firsts else None,
        "last": moment_json(lasts[-1]) if lasts else None,
        "problems": [{"name": s.name, "problem": s.problem} for s in sources if s.problem],
        "unparsed_oom_lines": analysis.unparsed_count,
        "unparsed_samples": [asdict(u) for u in analysis.unparsed[:10]],
        "range": {
            "since": iso_time(analysis.range_since),
            "until": iso_time(analysis.range_until),
            "kills_outside": analysis.outside_range,
        }
        if analysis.range_since is not None or analysis.range_until is not None
        else None,
        "kills_read_twice": analysis.read_twice,
        "warning_lines_read_twice": analysis.warnings_read_twice,
        "elided": _elided_json(analysis.elided),
    }


def _elided_json(elided: Elided | None) -> dict[str, Any] | None:
    """Kills counted, not kept, between the first and last ones (a log of very many kills)."""
    if elided is None:
        return None
    return {
        "kills": elided.kills,
        "first": moment_json(elided.first),
        "last": moment_json(elided.last),
        "victims": [{"comm": name, "kills": count} for name, count in elided.victims],
        "warning_runs": elided.warning_runs,
        "kept_first": elided.kept_first,
        "kept_last": elided.kept_last,
        "note": elided.note(),
    }


def _empty_story(query: str) -> dict[str, Any]:
    return {
        "query": query,
        "found": False,
        "cause": None,
        "episode": None,
        "collateral": [],
        "collateral_more": 0,
        "earliest_warning": None,
        "lead_time_s": None,
        "warnings_before": [],
        "warned_before_incident": False,
        "timeline": [],
        "timeline_warnings_more": 0,
        "memory": None,
        "incident": None,
        "elsewhere": [],
    }


def verdict_json(verdict: Verdict, story: Story | None) -> dict[str, Any]:
    reading = verdict.server_log
    server_log = None
    if reading is not None:
        facts = reading.facts
        memory = story.memory if story else None
        server_log = {
            "path": facts.path,
            "lines": facts.lines,
            "last_line": facts.last_line,
            "last_time": iso_time(facts.last_time),
            "last_time_from": facts.last_time_from,
            "ending": reading.ending,
            "ending_line": facts.ending_line,
            "gap_s": reading.gap_s,
            "note": reading.note,
            "plan": [asdict(item) for item in facts.plan],
            "plan_total_gib": round(sum(i.gib for i in facts.plan if i.counted), 2) if facts.plan else None,
            "plan_against_kill": plan_comparison(facts.plan, verdict.episode, memory),
        }
    return {
        "found": verdict.found,
        "cause": verdict.cause,
        "verdict": verdict.headline,
        "server_log": server_log,
        "involvement": [{"role": i.role, "episode": episode_json(i.episode)} for i in verdict.involvement],
        "crash": (
            {
                "comm": verdict.crash.comm,
                "pid": verdict.crash.pid,
                "text": verdict.crash.text,
                "time": iso_time(verdict.crash.moment.time),
            }
            if verdict.crash
            else None
        ),
        "searched": verdict.searched,
    }

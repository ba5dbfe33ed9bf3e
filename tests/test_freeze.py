"""The freezer alone (episodes/freeze.py): one real report's draft → its Episode, field by field."""

from __future__ import annotations

from oomtrace.episodes.freeze import Freezer
from oomtrace.model import Moment
from tests.conftest import FIXTURES
from tests.test_assemble import drafts

MEMCG = (FIXTURES / "real_memcg_v1_6.18" / "kernel.log").read_text().splitlines()


def _as_read(moment: Moment) -> Moment:
    return moment


def test_a_memcg_report_freezes_to_its_episode() -> None:
    [draft] = drafts(MEMCG)
    episode = Freezer(draft, _as_read).episode(7)
    assert episode.id == 7 and episode.killer == "kernel"
    assert episode.trigger is not None and episode.trigger.comm == "oomprobe-hog"
    assert episode.trigger.oom_score_adj == 200 and episode.trigger.gfp_flags == "GFP_KERNEL"
    assert (episode.constraint, episode.constraint_from) == ("memcg", "oom-kill summary")
    assert (episode.memcg, episode.task_memcg) == ("/oomprobe", "/oomprobe")
    victim = episode.victim
    assert victim is not None and (victim.comm, victim.pid, victim.uid) == ("oomprobe-hog", 2110, 0)
    assert victim.anon_rss_kb == 65152
    assert episode.kernel is not None and episode.kernel.startswith("6.18")
    assert [c.kind for c in episode.memcg_usage][:1] == ["memory"]
    assert episode.memcg_stats_path == "/oomprobe"
    assert draft.kill is not None and episode.moment.uptime_s == draft.kill.record.stamp.uptime
    assert episode.lines == (draft.first_line, draft.last_line)
    assert "header" not in episode.missing and "kill" not in episode.missing


def test_the_outline_tells_what_the_episode_tells_of_when_who_and_which_limit() -> None:
    [draft] = drafts(MEMCG)
    freezer = Freezer(draft, _as_read)
    whole, outline = freezer.episode(0), freezer.outline()
    assert (outline.moment, outline.victim, outline.constraint) == (
        whole.moment,
        whole.victim,
        whole.constraint,
    )
    assert outline.tasks == () and outline.raw_lines == ()

"""Score oomtrace on the real-paste corpus: per-case and total field accuracy.

Each `cases/<name>/` holds `input.txt`, copied exactly from a public bug report, forum or
mailing list (its URL in `expected.json`), and `expected.json`, the facts a kernel engineer
reads off it by hand. This runs `oomtrace list --format json` on every input, as a user would,
and counts each expected fact right, wrong or missing.

    python tests/realworld/score.py            # table and total
    python tests/realworld/score.py -v CASE    # every fact of one case
    python tests/realworld/score.py --write-baseline   # after a change that reads more facts
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oomtrace.cli import cli as oomtrace_main

CASES = Path(__file__).parent / "cases"
# Pastes oomtrace cannot read yet, each a named limit (issue 38): the day one is read, the test
# test_realworld fails until it leaves this list; tests
# that need a log read skip them.
REFUSED = {
    "paste-earlyoom-kill-failed-glued-no-newline": "earlyoom's kill glued behind a prompt, no prefix",
    "user2-android-arc-kmsg-raw-comment-wrapped": "lowmemorykiller lines inside C++ comments",
    "user2-nohang-logfile-comma-ms-top-table-no-kill": "nohang's own log file",
}

# The facts each case read right when it was last raised: `score.py --write-baseline`.
BASELINE = Path(__file__).parent / "baseline.json"

# Expected field -> how to read it off an episode of `list --format json`.
_VICTIM = ("anon_rss_kb", "total_vm_kb", "file_rss_kb", "shmem_rss_kb", "oom_score_adj")


def _actual(episode: dict[str, Any], name: str) -> Any:
    victim = episode.get("victim") or {}
    trigger = episode.get("trigger") or {}
    if name == "victim":
        # A kill of a whole cgroup or unit (systemd-oomd, systemd's records) names no process.
        cgroup = (episode.get("task_memcg") or "").rstrip("/").rsplit("/", 1)[-1] or None
        return victim.get("comm") or episode.get("unit") or cgroup
    if name == "pid":
        return victim.get("pid")
    if name in _VICTIM:
        return victim.get(name)
    if name == "trigger":
        return trigger.get("comm")
    if name == "trigger_pid":
        return trigger.get("pid")
    if name in ("gfp_mask", "order"):
        return trigger.get(name)
    if name in ("killer", "constraint", "memcg", "uptime_s"):
        return episode.get(name)
    if name == "clock":
        time = episode.get("time")
        return time[11:19] if time else None
    if name == "date":
        time = episode.get("time")
        return time[:10] if time else None
    raise KeyError(name)


def _same(name: str, want: Any, got: Any) -> bool:
    if got is None:
        return False
    if name == "uptime_s":
        return abs(float(want) - float(got)) < 0.0005
    if name == "date":
        return str(got).endswith(str(want))
    if name == "gfp_mask":
        return str(want).lower() == str(got).lower()
    return bool(want == got)


@dataclass
class CaseScore:
    name: str
    right: int = 0
    total: int = 0
    refused: str | None = None
    wrong: list[str] = field(default_factory=list)
    facts_right: list[str] = field(default_factory=list)
    """The labels of the facts read right (`#1.pid`, `warning nvrm-xid`, `read`)."""

    @property
    def share(self) -> float:
        return self.right / self.total if self.total else 1.0


def _match(expected: dict[str, Any], episodes: list[dict[str, Any]], used: set[int]) -> dict[str, Any] | None:
    """The actual episode an expected one stands for: same pid, else same victim name, else the
    next unused one in order."""
    candidates = [(i, e) for i, e in enumerate(episodes) if i not in used]
    for key in ("pid", "victim"):
        if key in expected:
            for i, episode in candidates:
                if _actual(episode, key) == expected[key]:
                    used.add(i)
                    return episode
    if "pid" not in expected and "victim" not in expected and candidates:
        i, episode = candidates[0]
        used.add(i)
        return episode
    return None


def score_case(case: Path) -> CaseScore:
    expected = json.loads((case / "expected.json").read_text())
    score = CaseScore(case.name)
    facts = [(f"#{n + 1}.{k}", k, v) for n, ep in enumerate(expected["episodes"]) for k, v in ep.items()]
    kinds = expected.get("warnings", [])
    score.total = len(facts) + len(kinds) + 1  # +1: the input is read, not refused
    result = CliRunner().invoke(
        oomtrace_main, ["list", "-k", str(case / "input.txt"), "--format", "json", "--tz", "UTC"]
    )
    if result.exit_code != 0:
        score.refused = (result.stderr or result.output).strip().splitlines()[-1:] or [str(result.exit_code)]
        score.refused = score.refused[0]
        score.wrong.append(f"refused: {score.refused}")
        return score
    score.right += 1
    score.facts_right.append("read")
    document = json.loads(result.stdout)
    episodes = document["episodes"]
    used: set[int] = set()
    matched = [_match(ep, episodes, used) for ep in expected["episodes"]]
    for label, name, want in facts:
        n = int(label[1:].split(".")[0]) - 1
        episode = matched[n]
        got = _actual(episode, name) if episode is not None else None
        if _same(name, want, got):
            score.right += 1
            score.facts_right.append(label)
        else:
            score.wrong.append(f"{label}: want {want!r}, got {got!r}")
    present = {w["kind"] for w in document["warnings"]}
    for kind in kinds:
        if kind in present:
            score.right += 1
            score.facts_right.append(f"warning {kind}")
        else:
            score.wrong.append(f"warning {kind}: not found (have {sorted(present)})")
    return score


def score_all() -> list[CaseScore]:
    return [score_case(case) for case in sorted(CASES.iterdir()) if (case / "expected.json").exists()]


def write_baseline(scores: list[CaseScore]) -> None:
    """The facts each case reads right now: tests/test_realworld.py holds every later change to
    them, case by case (a fix for one shape must not change another's answer)."""
    document = {s.name: s.facts_right for s in sorted(scores, key=lambda s: s.name)}
    BASELINE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    names = [a for a in argv if not a.startswith("-")]
    scores = [s for s in score_all() if not names or s.name in names]
    if "--write-baseline" in argv:
        write_baseline(scores)
    right = sum(s.right for s in scores)
    total = sum(s.total for s in scores)
    for s in scores:
        flag = " REFUSED" if s.refused else ""
        print(f"{s.name:<48} {s.right:>3}/{s.total:<3} {s.share:6.1%}{flag}")
        if verbose or names:
            for line in s.wrong:
                print(f"    {line}")
    refused = sum(1 for s in scores if s.refused)
    print(
        f"total: {right}/{total} facts right ({right / max(total, 1):.1%}) in {len(scores)} cases, {refused} refused"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""One view, many renderers: every phrase `why` and `report` print is worded once, in storyview,
and the terminal and Markdown each show that same phrase (never a rewording of their own)."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from oomtrace.analyze import analyze
from oomtrace.formats.markdown import text as markdown_text
from oomtrace.prefixes import LineSplitter
from oomtrace.sources.textfile import KernelLogFile
from oomtrace.story import report, tell
from oomtrace.storyview import ReportView, StoryView, report_view, story_view
from tests.conftest import FIXTURES, run
from tests.reshaped import BOOT, global_report, memcg_report, nvrm_line, xid_line

CASES = sorted(p.parent for p in FIXTURES.glob("*/case.toml"))


def _view(case: Path) -> tuple[ReportView, list[str]]:
    config = tomllib.loads((case / "case.toml").read_text())
    args = config["args"]
    options = dict(zip(args[::2], args[1::2], strict=True))
    logs = [str(case / name) for name in config.get("kernel_logs", ["kernel.log"])]
    boot = options.get("--boot-time")
    sources = [
        KernelLogFile(
            log,
            timezone.utc,
            int(options["--year"]) if "--year" in options else None,
            datetime.fromisoformat(boot) if boot else None,
        )
        for log in logs
    ]
    analysis = analyze(sources)
    view = report_view(analysis, report(analysis, None, None, 0))
    cli_args = [arg for log in logs for arg in ("-k", log)] + args
    return view, cli_args


def _squeezed(value: str) -> str:
    # The terminal wraps and folds long values anywhere, inside a panel's borders; without
    # whitespace and box-drawing characters they compare whole.
    return re.sub(r"[\s\u2500-\u257f]+", "", value)


def _phrases(story: StoryView) -> list[str]:
    """What both formats show; the Markdown summary's sentences restate the facts in prose."""
    said = [story.who, story.what.strip()]
    said += [fact.value for fact in story.facts]
    if story.memory is not None:
        said += [*(amount for _, amount in story.memory.figures), *story.memory.notes]
    said += [row[3] for row in story.timeline.rows]
    return said


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_text_and_markdown_say_the_views_phrases(case: Path) -> None:
    _says_the_views_phrases(case)


@pytest.mark.parametrize("shape", ["two-cgroup-trees", "memcg-beside-global", "warning-inside-a-burst"])
def test_text_and_markdown_say_the_views_phrases_of_shortages_side_by_side(
    shape: str, tmp_path: Path
) -> None:
    """'Meanwhile', the elsewhere rows and a later kill's own first warning, in both formats."""
    (tmp_path / "kernel.log").write_text("\n".join(_shaped(shape)) + "\n")
    (tmp_path / "case.toml").write_text(f'query = "x"\nargs = ["--boot-time", "{BOOT}"]\n')
    _says_the_views_phrases(tmp_path)


def _says_the_views_phrases(case: Path) -> None:
    view, args = _view(case)
    if not view.stories:
        pytest.skip(f"{case.name} has no incident to tell")
    terminal = run("report", *args, "--format", "text").stdout
    # Markdown is a document to paste: it is read whole, at any width.
    markdown = run("report", *args, "--format", "markdown").stdout
    squeezed = _squeezed(terminal)
    for story in view.stories:
        for sentence in story.sentences:
            assert markdown_text(sentence) in markdown, sentence
        brief = {fact.value: fact.brief for fact in story.facts if fact.brief}
        # Markdown gives the collateral its own table instead of the fact's list.
        tabled = {f.value for f in story.facts if f.key == "collateral" and story.collateral}
        for phrase in _phrases(story):
            if phrase not in tabled:
                assert markdown_text(phrase) in markdown, phrase
            assert _squeezed(brief.get(phrase, phrase)) in squeezed, phrase
        for row in story.collateral.rows if story.collateral else ():
            assert "| " + " | ".join(markdown_text(cell) for cell in row) + " |" in markdown
    assert markdown_text(view.footer) in markdown
    assert _squeezed(view.footer) in squeezed


def test_markdown_summary_says_no_word_of_its_own() -> None:
    """Each sentence of a Markdown story is the view's: the paragraph is the headline and them."""
    view, args = _view(FIXTURES / "seed000_llama_server_gb10")
    markdown = run("report", *args, "--format", "markdown").stdout
    (story,) = view.stories
    headline = f"**{markdown_text(story.who)}**{markdown_text(story.what)}."
    paragraph = " ".join([headline, *(markdown_text(s) for s in story.sentences)])
    assert paragraph in markdown.splitlines()


# ---- no false sentence: each story checked against the log's own lines ----------------------

_WARNING_LINE = re.compile(r"NV_ERR_NO_MEMORY|page allocation failure|Under memory pressure")
_KILL_LINE = re.compile(r"Killed process (\d+)")
_SCOPE = re.compile(r"oom_memcg=([^,\s]+)|(global_oom)")
_FAILCNT = re.compile(r"^memory: usage \d+kB, limit \d+kB, failcnt (\d+)")


def _read(log: Path, boot: datetime | None) -> list[tuple[int, datetime | None, str]]:
    """(line number, time, message) of every line, as its prefix dates it: the log, not the story."""
    splitter = LineSplitter(str(log), zone=timezone.utc, year=2026)
    lines = []
    for number, line in _mail_lines(log.read_text()):
        for record in splitter.split(line, number):
            stamp = record.stamp
            when = stamp.wall
            if when is None and stamp.uptime is not None and boot is not None:
                when = boot + timedelta(seconds=stamp.uptime)
            lines.append((number, when, record.message))
    return lines


def _mail_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a log; in a mail read raw in quoted-printable, a line broken with a
    soft `=` at its end is one line with the next (`failcnt 52=` / `843037`), numbered as its first."""
    physical = list(enumerate(text.splitlines(), start=1))
    if "=3D" not in text:
        return physical
    lines: list[tuple[int, str]] = []
    held: tuple[int, str] | None = None
    for number, line in physical:
        if held is not None:
            number, line = held[0], held[1] + line
            held = None
        if line.rstrip(" \t").endswith("="):
            held = (number, line.rstrip(" \t")[:-1])
        else:
            lines.append((number, line))
    if held is not None:
        lines.append(held)
    return lines


def _scope_in(lines: list[tuple[int, datetime | None, str]], span: tuple[int, int]) -> str | None:
    """What the report in these lines says ran short: a cgroup path, "global", or None."""
    for number, _, message in lines:
        found = _SCOPE.search(message) if span[0] <= number <= span[1] else None
        if found:
            return found.group(1) or "global"
    return None


def _one_tree(a: str | None, b: str | None) -> bool:
    if a is None or b is None or a == b:
        return True
    if "global" in (a, b):
        return False
    return a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _false_sentences(log: Path, boot: datetime | None) -> list[str]:
    """Every sentence of every kill's story that the log's lines contradict."""
    lines = _read(log, boot)
    analysis = analyze([KernelLogFile(str(log), timezone.utc, 2026, boot)])
    kills = {int(m.group(1)): when for _, when, text in lines if (m := _KILL_LINE.search(text))}
    warnings = [when for _, when, text in lines if when is not None and _WARNING_LINE.search(text)]
    wrong = []
    for episode in analysis.episodes:
        if episode.victim is None or episode.victim.pid not in kills:
            continue
        pid, at = episode.victim.pid, kills[episode.victim.pid]
        view = story_view(tell(analysis, episode, episode.victim.comm))
        facts = {fact.key: fact.value for fact in view.facts}
        said = " ".join([*facts.values(), *view.sentences, *(row[3] for row in view.timeline.rows)])
        # "none before the kill" while a warning line lies between the host's kill before and it.
        before = max(
            (t for p, t in kills.items() if t is not None and at is not None and t < at), default=None
        )
        warned = [w for w in warnings if at is not None and w < at and (before is None or w > before)]
        if warned and "none in the kernel log before the kill" in facts["first-warning"]:
            wrong.append(f"pid {pid}: 'none' with a warning line {(at - warned[0]).total_seconds()}s before")
        if warned and "Nothing in the kernel log warned before the kill." in view.sentences:
            wrong.append(f"pid {pid}: 'Nothing ... warned' with a warning line before it")
        # Never "also killed" or collateral for a kill the log puts in another cgroup tree.
        mine = _scope_in(lines, episode.lines)
        for other in analysis.episodes:
            if other.victim is None or other.id == episode.id:
                continue
            theirs = _scope_in(lines, other.lines)
            named = f"{other.victim.comm} (pid {other.victim.pid}"
            collateral = [row for row in view.timeline.rows if row[2] == "collateral" and named in row[3]]
            rows = [
                row
                for row in (view.collateral.rows if view.collateral else ())
                if row[1] == str(other.victim.pid)
            ]
            if not _one_tree(mine, theirs) and (named in facts["collateral"] or collateral or rows):
                wrong.append(f"pid {pid}: {named}) in {theirs} said killed with it in {mine}")
            when = kills.get(other.victim.pid)
            near = when is not None and at is not None and abs((when - at).total_seconds()) <= 60
            elsewhere = [row for row in view.timeline.rows if row[2] == "elsewhere" and named in row[3]]
            if (
                near
                and not _one_tree(mine, theirs)
                and not (elsewhere and named in facts.get("elsewhere", ""))
            ):
                wrong.append(f"pid {pid}: {named}) in {theirs} at the same time is not said")
        # failcnt is the cgroup's lifetime count: never said as this kill's, and the log's number.
        counts = [
            int(m.group(1))
            for n, _, t in lines
            if episode.lines[0] <= n <= episode.lines[1] and (m := _FAILCNT.match(t))
        ]
        for note in view.memory.notes if view.memory else ():
            lifetime = "since the cgroup was made" in note and f"failcnt {counts[0]:,}:" in note
            if ("failcnt" in note or "hit the limit" in note) and not lifetime:
                wrong.append(f"pid {pid}: {note}")
        if re.search(r"hit the limit [\d,]+ times", said):
            wrong.append(f"pid {pid}: a lifetime failcnt said as this kill's")
    return wrong


def _shaped(name: str) -> list[str]:
    """Logs of two shortages side by side, from real report lines (tests/reshaped.py)."""
    if name == "two-cgroup-trees":
        # /a and /b 14 s apart (issue 22), an NVRM line between them, /a again 16 s after /b.
        return [
            *memcg_report(100.0, "/a", 3001, "job-a", 223),
            nvrm_line(110.0),
            *memcg_report(114.0, "/b", 3002, "job-b", 5),
            *memcg_report(130.0, "/a", 3003, "job-a", 230),
        ]
    if name == "memcg-beside-global":
        return [*memcg_report(200.0, "/a", 4001, "job-a"), *global_report(205.0, 5001, "hog")]
    # A burst of two global kills, the driver's warning 75 ms before the second (issue 22).
    second = global_report(206.0, 5002, "hog2")
    return [
        *global_report(205.0, 5001, "hog"),
        nvrm_line(206.0 + 0.0001 * (len(second) - 1) - 0.075),
        *second,
    ]


SHAPED = ("two-cgroup-trees", "memcg-beside-global", "warning-inside-a-burst")


def _log_of(case: Path) -> tuple[Path, datetime | None]:
    config = tomllib.loads((case / "case.toml").read_text())
    args = config["args"]
    boot = dict(zip(args[::2], args[1::2], strict=True)).get("--boot-time")
    log = case / config.get("kernel_logs", ["kernel.log"])[0]
    return log, datetime.fromisoformat(boot) if boot else None


@pytest.mark.parametrize("case", [*SHAPED, *(c.name for c in CASES)])
def test_no_story_says_what_the_log_contradicts(case: str, tmp_path: Path) -> None:
    """A story never says "none" where a warning line precedes the kill, never "also killed" or
    collateral for a kill in another cgroup tree (and names that kill as what happened
    meanwhile), never a cgroup's lifetime failcnt as this kill's."""
    if case in SHAPED:
        log, boot = tmp_path / "kernel.log", datetime.fromisoformat(BOOT)
        log.write_text("\n".join(_shaped(case)) + "\n")
    else:
        log, boot = _log_of(FIXTURES / case)
    assert _false_sentences(log, boot) == []


def _shaped_stories(name: str, tmp_path: Path) -> dict[int, StoryView]:
    log = tmp_path / "kernel.log"
    log.write_text("\n".join(_shaped(name)) + "\n")
    analysis = analyze([KernelLogFile(str(log), timezone.utc, 2026, datetime.fromisoformat(BOOT))])
    return {
        e.victim.pid: story_view(tell(analysis, e, e.victim.comm))  # type: ignore[misc]
        for e in analysis.episodes
        if e.victim is not None
    }


def _fact(story: StoryView, key: str) -> str:
    return next(fact.value for fact in story.facts if fact.key == key)


def test_a_later_kill_names_the_warning_that_came_after_the_first(tmp_path: Path) -> None:
    stories = _shaped_stories("warning-inside-a-burst", tmp_path)
    assert _fact(stories[5001], "first-warning") == "none in the kernel log before the kill"
    assert _fact(stories[5002], "first-warning") == (
        "NVIDIA driver out of memory (NV_ERR_NO_MEMORY in _memdescAllocInternal) (0.1s before the kill), "
        "after the incident's first kill (nothing in the kernel log warned before that)"
    )
    assert (
        "The first warning, NVIDIA driver out of memory (NV_ERR_NO_MEMORY in _memdescAllocInternal), came "
        "0.1s before the kill, after the incident's first kill (nothing in the kernel log warned before that)."
        in stories[5002].sentences
    )
    # The first kill's timeline shows it too, after the kill: what the incident went through.
    assert [row[2] for row in stories[5001].timeline.rows].count("warning") == 1
    # JSON says the same as data: this kill's warnings, and that none came before the incident.
    log = tmp_path / "kernel.log"
    document = json.loads(run("why", "hog2", "-k", str(log), "--boot-time", BOOT, "-f", "json").stdout)
    assert [w["kind"] for w in document["warnings_before"]] == ["nvrm-no-memory"]
    assert document["earliest_warning"]["kind"] == "nvrm-no-memory"
    assert document["warned_before_incident"] is False and 0.07 < document["lead_time_s"] < 0.08
    said = _fact(stories[5002], "first-warning")
    assert _squeezed(said) in _squeezed(run("why", "hog2", "-k", str(log), "--boot-time", BOOT).stdout)
    markdown = run("why", "hog2", "-k", str(log), "--boot-time", BOOT, "-f", "markdown").stdout
    assert markdown_text(said) in markdown


def test_a_kill_in_another_cgroup_tree_is_meanwhile_not_collateral(tmp_path: Path) -> None:
    stories = _shaped_stories("two-cgroup-trees", tmp_path)
    job_b = stories[3002]
    assert _fact(job_b, "collateral") == "no other process in this incident"
    assert job_b.collateral is None
    assert _fact(job_b, "elsewhere") == (
        "in another incident: job-a (pid 3001, T-14s, memory cgroup /a, incident 1), "
        "job-a (pid 3003, T+16s, memory cgroup /a, incident 1)"
    )
    assert stories[3002].timeline.rows[0][:3] == ("T-14s", "09:52:45", "elsewhere")
    # /a's second kill: /a's first is its collateral, /b's is not; the NVRM line 4 s before /b's
    # kill came after /a's first kill, and is named by both later kills.
    job_a = stories[3003]
    assert _fact(job_a, "collateral") == "job-a (pid 3001, T-30s)"
    assert _fact(job_a, "first-warning").startswith("NVIDIA driver out of memory")
    assert _fact(job_b, "first-warning").startswith("NVIDIA driver out of memory")
    assert "No other process was killed in the same incident." in job_b.sentences
    memcg_beside_global = _shaped_stories("memcg-beside-global", tmp_path)
    assert _fact(memcg_beside_global[5001], "collateral") == "no other process in this incident"
    assert "memory cgroup /a, incident 1" in _fact(memcg_beside_global[5001], "elsewhere")


def test_failcnt_is_the_cgroups_lifetime_count_with_the_change_since_its_last_report(tmp_path: Path) -> None:
    stories = _shaped_stories("two-cgroup-trees", tmp_path)
    (first,) = [n for n in stories[3001].memory.notes if "failcnt" in n]  # type: ignore[union-attr]
    assert first == (
        "the cgroup was at its limit: 64.0 MiB used of 64.0 MiB (failcnt 223: the times it hit the "
        "limit since the cgroup was made)"
    )
    (later,) = [n for n in stories[3003].memory.notes if "failcnt" in n]  # type: ignore[union-attr]
    assert later.endswith(
        "(failcnt 230: the times it hit the limit since the cgroup was made; 7 since its report at 2026-11-29 09:52:45+00:00)"
    )
    # /b's own count is not set against /a's.
    (other,) = [n for n in stories[3002].memory.notes if "failcnt" in n]  # type: ignore[union-attr]
    assert "since its report" not in other


def test_the_headline_leads_with_the_strongest_part_and_how_often() -> None:
    """seed 002: kwin_wayland invoked the killer twice (pipewire, dbus-daemon) and sat in the
    tasks table of the other two kills: it is the invoker, twice, not a bystander."""
    log = str(FIXTURES / "seed002_ds4_server_gb10" / "kernel.log")
    document = json.loads(run("why", "kwin_wayland", "-k", log, "--tz", "UTC", "-f", "json").stdout)
    assert document["verdict"] == (
        "kwin_wayland invoked the OOM killer twice, at 2026-11-19 21:47:34+00:00 and 21:47:35; never "
        "chosen; the kernel killed pipewire (pid 3015, 55.5 MiB anon) and dbus-daemon (pid 3021, "
        "35.2 MiB anon) instead"
    )
    roles = [i["role"] for i in document["involvement"]]
    assert roles == ["bystander", "trigger", "trigger", "bystander"]
    # The log's lines say the same: two headers of kwin_wayland, none of its kills.
    text = Path(log).read_text()
    assert text.count("kwin_wayland invoked oom-killer") == 2 and "(kwin_wayland)" not in text
    # It is never called a bystander of a kill it invoked.
    assert "running beside" not in document["verdict"]
    # The story below is the last of the two, and says so.
    terminal = run("why", "kwin_wayland", "-k", log, "--tz", "UTC").stdout
    assert "The last of the 2 OOM kills it invoked\n╭─ oomtrace why dbus-daemon" in terminal
    assert "The OOM kill it took part in" not in terminal


def test_a_name_killed_five_times_says_so_and_which_kill_it_tells(tmp_path: Path) -> None:
    log = tmp_path / "kernel.log"
    lines = [line for n in range(5) for line in memcg_report(100.0 + 300 * n, "/jobs", 7000 + n, "python3")]
    log.write_text("\n".join(lines) + "\n")
    args = ("-k", str(log), "--boot-time", BOOT)
    latest = json.loads(run("why", "python3", *args, "-f", "json").stdout)
    assert latest["episode"]["victim"]["pid"] == 7004
    assert latest["verdict"].endswith(
        "; the last of 5 kills of python3 in the log (oomtrace why python3 --all tells each)"
    )
    every = json.loads(run("why", "python3", *args, "--all", "-f", "json").stdout)
    assert len(every["all"]) == 5
    assert every["verdict"].endswith("; the last of 5 kills of python3 in the log, each told below")
    # One kill: no count at all.
    single = json.loads(
        run(
            "why", "oomprobe-hog", "-k", str(FIXTURES / "real_memcg_v1_6.18" / "kernel.log"), "-f", "json"
        ).stdout
    )
    assert "kills of" not in single["verdict"]


def test_a_range_that_leaves_out_the_other_incident_leaves_out_its_kills_meanwhile(tmp_path: Path) -> None:
    log = tmp_path / "kernel.log"
    log.write_text("\n".join(_shaped("two-cgroup-trees")) + "\n")
    args = ("-k", str(log), "--boot-time", BOOT, "--until", "2026-11-29 09:52:50+00:00")
    result = run("report", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    (story,) = json.loads(result.stdout)["incidents"]
    # The range selects kills (issue 41): job-a's second kill, 30 s later, is outside it too.
    assert [e["victim"]["pid"] for e in [story["episode"], *story["collateral"]]] == [3001]
    assert story["elsewhere"] == []
    assert "job-b" not in run("report", *args).stdout


def test_a_large_process_that_was_not_chosen_is_a_holder_not_a_bystander(tmp_path: Path) -> None:
    """RHEL 6's report with mysqld's row grown to 461,233 pages (1.8 GiB of 7.7 GiB RAM): it held
    memory; crond (160 pages) only ran beside."""
    log = tmp_path / "messages"
    original = (FIXTURES / "rhel6_2.6.32_messages" / "kernel.log").read_text()
    log.write_text(original.replace("   421104    61233   0", "   421104   461233   0"))
    args = ("-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "json")
    held = json.loads(run("why", "mysqld", *args).stdout)
    assert [i["role"] for i in held["involvement"]] == ["holder"]
    assert held["verdict"] == (
        "mysqld was one of the largest processes (1.8 GiB resident) at the OOM kill, at 2026-03-03 "
        "02:14:07+00:00, and was never chosen; the kernel killed java (pid 4417, 234.4 MiB anon) instead"
    )
    beside = json.loads(run("why", "crond", *args).stdout)
    assert [i["role"] for i in beside["involvement"]] == ["bystander"]
    assert beside["verdict"].startswith("crond was running beside the OOM kill, at 2026-03-03 02:14:07+00:00")


def test_no_story_of_a_real_paste_says_what_its_log_contradicts() -> None:
    """The same checks over the 101 kernel logs copied from public bug reports (tests/realworld)."""
    from tests.realworld.score import REFUSED

    pastes = sorted((Path(__file__).parent / "realworld" / "cases").glob("*/input.txt"))
    pastes = [paste for paste in pastes if paste.parent.name not in REFUSED]
    assert len(pastes) > 100
    wrong = {paste.parent.name: found for paste in pastes if (found := _false_sentences(paste, None))}
    assert wrong == {}


def test_a_later_kills_memory_warning_says_what_came_before_the_first_kill(tmp_path: Path) -> None:
    """An Xid before the burst, the driver's out-of-memory line between its two kills: the second
    kill's first warning is the memory warning, and it says the Xid came before the first kill."""
    log = tmp_path / "kernel.log"
    lines = [
        xid_line(204.0),
        *global_report(205.0, 5001, "hog"),
        nvrm_line(205.9),
        *global_report(206.0, 5002, "hog2"),
    ]
    log.write_text("\n".join(lines) + "\n")
    analysis = analyze([KernelLogFile(str(log), timezone.utc, 2026, datetime.fromisoformat(BOOT))])
    first, second = (story_view(tell(analysis, e, "x")) for e in analysis.episodes)
    assert (
        _fact(first, "first-warning")
        == "NVIDIA Xid 31: GPU memory page fault (MMU fault) (1.0s before the kill)"
    )
    assert _fact(second, "first-warning").endswith(
        "(0.1s before the kill), after the incident's first kill (before that one: NVIDIA Xid 31: GPU "
        "memory page fault (MMU fault))"
    )
    assert _false_sentences(log, datetime.fromisoformat(BOOT)) == []


def test_a_parent_the_kernel_chose_is_never_said_not_chosen(tmp_path: Path) -> None:
    """RHEL 6's `Kill process 4410 (java) score 978 or sacrifice child`, the parent renamed
    tomcat: the kernel chose it and killed its child java (pid 4417), so 'never chosen' is false."""
    log = tmp_path / "messages"
    original = (FIXTURES / "rhel6_2.6.32_messages" / "kernel.log").read_text()
    renamed = original.replace("Kill process 4410 (java)", "Kill process 4410 (tomcat)")
    log.write_text(
        renamed.replace("1986021   0       0             0 java", "1986021   0       0             0 tomcat")
    )
    document = json.loads(
        run("why", "tomcat", "-k", str(log), "--tz", "UTC", "--year", "2026", "-f", "json").stdout
    )
    assert [i["role"] for i in document["involvement"]] == ["chosen"]
    assert document["verdict"] == (
        "tomcat was chosen by the OOM killer at 2026-03-03 02:14:07+00:00 (score 978), and the kernel "
        "killed its child java (pid 4417) in its place"
    )
    assert "never chosen" not in document["verdict"]


def test_a_userspace_killer_is_not_said_to_invoke_the_kernels() -> None:
    """A real paste of earlyoom killing ComfyUI's python twice: earlyoom is the killer, and never
    'invoked the OOM killer' with 'the kernel killed' someone 'instead'."""
    paste = Path(__file__).parent / "realworld" / "cases" / "gpu-comfyui-earlyoom" / "input.txt"
    result = run("why", "earlyoom", "-k", str(paste))
    assert "invoked the OOM killer" not in result.output and "the kernel killed" not in result.output
    assert result.exit_code == 1 and "OOM victims in it: python3.13 (pid 322603)" in result.stderr

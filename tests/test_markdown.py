"""The Markdown report, rendered by cmark-gfm (GitHub's renderer) and checked as a document tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from oomtrace.formats.markdown import GITHUB_LIMIT, code_block, text
from tests.conftest import FIXTURES, ROOT, run

CMARK = shutil.which("cmark-gfm")
NS = "{http://commonmark.org/xml/1.0}"
pytestmark = pytest.mark.skipif(
    CMARK is None, reason="cmark-gfm is not installed (apt-get install cmark-gfm; .ci/run does)"
)
REAL = FIXTURES / "real_memcg_v1_6.18" / "kernel.log"


def render(markdown: str) -> ET.Element:
    done = subprocess.run(
        [CMARK or "cmark-gfm", "-e", "table", "-e", "tagfilter", "-e", "autolink", "--to", "xml"],
        input=markdown,
        capture_output=True,
        text=True,
        check=True,
    )
    return ET.fromstring(done.stdout)


def nodes(tree: ET.Element, kind: str) -> list[ET.Element]:
    return list(tree.iter(NS + kind))


def raw_blocks(tree: ET.Element) -> list[ET.Element]:
    """The quoted kernel lines' code blocks (the charts are code blocks too, of Mermaid)."""
    return [b for b in nodes(tree, "code_block") if b.get("info") == "text"]


def why_markdown(log: Path, query: str, *args: str) -> str:
    result = run("why", query, "-k", str(log), "--format", "markdown", "--tz", "UTC", *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_seed000_report_structure() -> None:
    markdown = why_markdown(
        FIXTURES / "seed000_llama_server_gb10" / "kernel.log", "llama-server", "--year", "2026"
    )
    tree = render(markdown)
    headings = [" ".join("".join(h.itertext()).split()) for h in nodes(tree, "heading")]
    assert headings[0] == "OOM kill: llama-server (pid 1966928)"
    assert {"Timeline", "Facts", "Memory at the kill", "Largest processes at the kill"} <= set(headings)
    tables = nodes(tree, "table")
    timeline = tables[0]
    assert len(nodes(timeline, "table_row")) == 4  # warning, invoked, kill, reaped
    html = [b.text or "" for b in nodes(tree, "html_block")]
    assert html[0].startswith("<details>") and html[-1].strip() == "</details>"
    warning, raw = raw_blocks(tree)
    assert "Out of memory: Killed process 1966928 (llama-server)" in (raw.text or "")
    # Issue 39: the first warning's own lines, verbatim, beside the episode's (lines 4-5).
    log_lines = (FIXTURES / "seed000_llama_server_gb10" / "kernel.log").read_text().splitlines()
    assert (warning.text or "").splitlines() == log_lines[3:5]
    assert [b.get("info") for b in nodes(tree, "code_block")] == ["mermaid", "mermaid", "text", "text"]
    verdict = " ".join("".join(nodes(tree, "paragraph")[0].itertext()).split())
    assert verdict.startswith("Verdict (kernel-oom): llama-server (pid 1966928) was killed")
    summary = " ".join(" ".join(p.itertext()) for p in nodes(tree, "paragraph"))
    assert "3m13s before the kill" in summary and "The killer was invoked by dashboard-servi" in summary
    assert len(markdown) < GITHUB_LIMIT


HOSTILE_NAMES = [
    "```",
    "</details>",
    "<script>x</script>",
    "a|b|c",
    "*bold*",
    "[x](http://e)",
    "`tick`",
    "#head",
    "www.evil.com",
    "http://evil.example/x",
    "@alice",
    "fix #12",
    "owner/repo#7",
    "$x^2$",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_log_text_cannot_break_out_of_its_place(tmp_path: Path, name: str) -> None:
    log = tmp_path / "hostile.log"
    log.write_text(REAL.read_text().replace("oomprobe-hog", name))
    markdown = why_markdown(log, "2110")
    tree = render(markdown)
    # Our own two HTML blocks, nothing else: no HTML from the log, no closed <details>.
    html = [b.text or "" for b in nodes(tree, "html_block")] + [
        b.text or "" for b in nodes(tree, "html_inline")
    ]
    assert [h.strip()[:9] for h in html] == ["<details>", "</details", "<sub>", "</sub>"], html
    # The raw lines stay in one code block, byte for byte.
    (raw,) = raw_blocks(tree)
    assert f"Killed process 2110 ({name})" in (raw.text or "")
    # In prose and tables the name is text, never markup or a link.
    assert not nodes(tree, "emph") and not nodes(tree, "link")
    strong = ["".join(n.itertext()).strip() for n in nodes(tree, "strong")]
    assert strong == ["Verdict (cgroup-oom):", f"{name} (pid 2110)"]
    assert all(
        len(nodes(t, "table_header")[0]) == len(nodes(t, "table_row")[0])
        for t in nodes(tree, "table")
        if nodes(t, "table_row")
    )


@pytest.mark.parametrize("name", ["@alice", "fix #12", "owner/repo#7", "$x^2$", "GH-5"])
def test_mentions_issue_links_and_math_become_code(tmp_path: Path, name: str) -> None:
    log = tmp_path / "hostile.log"
    log.write_text(REAL.read_text().replace("oomprobe-hog", name))
    tree = render(why_markdown(log, "2110"))
    codes = ["".join(n.itertext()) for n in nodes(tree, "code")]
    assert name in codes


def test_code_block_fence_outgrows_backticks() -> None:
    block = code_block(["a ```` b"])
    assert block.startswith("`````text") and block.endswith("`````")


def test_text_escapes_markup() -> None:
    assert text("a|b*c_d<e>") == "a\\|b\\*c\\_d\\<e\\>"
    assert text("\x1b[31m") == "\\\\x1b\\[31m"


def test_a_huge_episode_is_cut_under_githubs_limit(tmp_path: Path) -> None:
    lines = REAL.read_text().splitlines()
    rows = [
        f"[   53.459398] [ {10000 + i}]     0 {10000 + i}    19561    17981    16288     1693         0   192512        0           0 filler-{i:05d}"
        for i in range(3000)
    ]
    table_at = next(i for i, line in enumerate(lines) if "pgtables_bytes" in line) + 1
    log = tmp_path / "huge.log"
    log.write_text("\n".join(lines[:table_at] + rows + lines[table_at:]) + "\n")
    markdown = why_markdown(log, "oomprobe-hog")
    assert len(markdown) <= GITHUB_LIMIT
    # The episode keeps its first 300 lines for quoting (bounded memory) and says so.
    assert "quoted lines: the first 300 of the report" in markdown
    assert "3084 lines" not in markdown and "(300 lines)" in markdown
    render(markdown)  # still a well-formed document


def test_quoted_lines_are_cut_under_githubs_limit(tmp_path: Path) -> None:
    lines = REAL.read_text().splitlines()
    pad = "x" * 400  # call frames as long as a mangled paste makes them
    frames = [f"[   53.457485]  filler_{i:04d}_{pad}+0x59/0x90" for i in range(250)]
    trace_at = next(i for i, line in enumerate(lines) if "Call Trace:" in line) + 1
    log = tmp_path / "huge.log"
    log.write_text("\n".join(lines[:trace_at] + frames + lines[trace_at:]) + "\n")
    markdown = why_markdown(log, "oomprobe-hog")
    assert len(markdown) <= GITHUB_LIMIT
    assert "lines were cut to stay under GitHub's 65,536-character comment limit" in markdown
    assert "the log has them all at lines" in markdown
    render(markdown)


def _crash_loop(tmp_path: Path, kills: int) -> Path:
    log = tmp_path / "loop.log"
    lines = [
        f"[{1000 + 3600 * n}.000000] Out of memory: Killed process {5000 + n} (llama-server) "
        "total-vm:164222812kB, anon-rss:31651260kB, file-rss:8420kB, shmem-rss:0kB, UID:1000 pgtables:63896kB "
        "oom_score_adj:200"
        for n in range(kills)
    ]
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        (["why", "llama-server", "--all"], "oomtrace why llama-server --all --format json"),
        (["report", "--boot-time", "2026-11-14 00:00:00"], "oomtrace report --format json"),
        (["list", "--all"], "oomtrace list --format json"),
    ],
    ids=["why --all", "report", "list --all"],
)
def test_every_markdown_output_stays_under_githubs_limit(
    tmp_path: Path, command: list[str], hint: str
) -> None:
    log = _crash_loop(tmp_path, 3000 if command[0] == "list" else 300)
    result = run(*command, "-k", str(log), "--format", "markdown", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    assert len(result.stdout) < GITHUB_LIMIT
    assert "left out to stay under GitHub's 65,536-character comment limit" in result.stdout
    assert f"`{hint}`" in result.stdout


def test_list_folds_a_crash_loop_into_one_row_with_its_count(tmp_path: Path) -> None:
    log = _crash_loop(tmp_path, 40)
    folded = run("list", "-k", str(log), "--format", "markdown", "--tz", "UTC")
    assert "| 1-40 | " in folded.stdout and "| 40 |" in folded.stdout
    assert "40 kills of the same victim, one after another, are shown as 1 row(s)" in folded.stdout
    every = run("list", "--all", "-k", str(log), "--format", "markdown", "--tz", "UTC")
    assert every.stdout.count("| llama-server |") == 40
    text = run("list", "-k", str(log), "--tz", "UTC")
    assert "1-40" in text.stdout and "5039" in text.stdout  # the last kill's pid
    # JSON lists every kill whatever the view.
    assert len(json.loads(run("list", "-k", str(log), "--format", "json").stdout)["episodes"]) == 40


def test_missing_parts_are_worded_alike_in_text_and_markdown(tmp_path: Path) -> None:
    log = tmp_path / "headless.log"
    log.write_text(
        "".join(line for line in REAL.read_text().splitlines(True) if "invoked oom-killer" not in line)
    )
    words = "the log lacks the `invoked oom-killer` header"
    assert words in run("why", "oomprobe-hog", "-k", str(log)).stdout
    assert text(words) in run("why", "oomprobe-hog", "-k", str(log), "--format", "markdown").stdout


SEED000 = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
SEED002 = FIXTURES / "seed002_ds4_server_gb10" / "kernel.log"


def _report(log: Path) -> str:
    result = run("report", "-k", str(log), "--format", "markdown", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_report_reads_top_down() -> None:
    markdown = _report(SEED002)
    tree = render(markdown)
    headings = [(h.get("level"), "".join(h.itertext()).strip()) for h in nodes(tree, "heading")]
    # The title first, then the incidents' overview, then each incident.
    assert headings[:3] == [
        ("1", "OOM post-incident report"),
        ("2", "Incidents"),
        ("2", "OOM kill: ds4-server (pid 124531)"),
    ]
    first = " ".join("".join(nodes(tree, "paragraph")[0].itertext()).split())
    # The range is the actual times, not "from the start to the end".
    assert first == "1 incident(s), 4 kill(s), from 2026-11-19 21:47:33+00:00 to 2026-11-19 21:47:35+00:00."
    assert "the start" not in markdown and "the end" not in markdown
    overview = nodes(tree, "table")[0]
    header = ["".join(c.itertext()).strip() for c in nodes(overview, "table_header")[0]]
    assert header == ["incident", "time", "first victim", "constraint", "first warning"]
    (row,) = nodes(overview, "table_row")
    cells = [" ".join("".join(c.itertext()).split()) for c in row]
    assert cells[:4] == ["1", "2026-11-19 21:47:33+00:00", "ds4-server (pid 124531)", "global"]
    assert cells[4].endswith("(53s before the kill)")  # the story's first-warning fact, word for word


@pytest.mark.parametrize("log", [SEED000, SEED002, REAL], ids=lambda p: p.parent.name)
def test_no_table_has_an_empty_header(log: Path) -> None:
    for markdown in (_report(log), why_markdown(log, _victim(log))):
        for table in nodes(render(markdown), "table"):
            header = ["".join(c.itertext()).strip() for c in nodes(table, "table_header")[0]]
            assert all(header), header


def _victim(log: Path) -> str:
    document = json.loads(run("list", "-k", str(log), "--format", "json").stdout)
    return str(document["episodes"][0]["victim"]["pid"])


def test_a_systemd_unit_is_never_a_mailto_link() -> None:
    # seed 000's victim runs under user@1000.service: GitHub's autolink takes it for an address.
    markdown = why_markdown(SEED000, "llama-server")
    assert "user@1000.service" in markdown
    tree = render(markdown)
    assert not nodes(tree, "link")
    assert "user@1000.service" in ["".join(n.itertext()) for n in nodes(tree, "code")]


def test_text_puts_email_shaped_words_in_code_and_escapes_the_rest() -> None:
    assert text("unit user@1000.service of *x*") == "unit `user@1000.service` of \\*x\\*"
    assert text("a@b") == "a\\@b"  # no dot after the @: no autolink, an escape is enough


def test_the_summary_does_not_repeat_the_facts_explanations() -> None:
    markdown = why_markdown(SEED002, "ds4-server")
    summary = markdown.split("### Timeline")[0]
    facts = markdown.split("### Facts")[1]
    for explanation in ("asked to be killed first", "highest badness of the 9 killable tasks"):
        assert explanation not in summary and explanation in facts
    # After the headline (the victim's name in bold), every sentence starts with a capital letter.
    paragraph = " ".join("".join(nodes(render(summary), "paragraph")[-1].itertext()).split())
    headline, *sentences = paragraph.split(". ")
    assert headline.startswith("ds4-server (pid 124531) was killed")
    assert len(sentences) == 5 and all(s[0].isupper() for s in sentences), sentences


def test_the_quote_keeps_the_titles_a_reader_needs() -> None:
    tree = render(why_markdown(SEED000, "llama-server"))
    _, raw = raw_blocks(tree)  # the first warning's lines, then the episode's
    lines = [line.partition("kernel: ")[2] for line in (raw.text or "").splitlines()]
    # The tasks table's title (its values are pages) just before its header, and the call
    # trace's title before its frames.
    title = lines.index("Tasks state (memory values in pages):")
    assert lines[title + 1].startswith("[  pid  ]")
    trace = lines.index("Call trace:")
    assert lines[trace + 1].strip().startswith("show_stack+")
    summary = "".join(nodes(tree, "html_block")[0].itertext())
    # What the quote leaves out is said, with where to read it.
    assert "the other 9 (registers, free-page lists" in summary and "7–76" in summary


def test_a_pasted_write_up_quotes_its_lines_as_they_stand_and_the_range_covers_them() -> None:
    """Issue 39: seed 000 as pasted wraps its kill line over two lines; the quote shows them as
    the log has them (never `\\x0a`), its range covers the continuation (lines 26-28), and the
    first warning's NVRM line and its `(repeats)` are quoted verbatim (lines 24-25)."""
    seed = ROOT / "tests" / "seeds"
    (log,) = seed.glob("000_*.txt")
    markdown = why_markdown(log, "llama-server")
    tree = render(markdown)
    assert "\\x0a" not in markdown
    warning, raw = raw_blocks(tree)
    pasted = log.read_text().splitlines()
    assert (warning.text or "").splitlines() == pasted[23:25]
    assert (raw.text or "").splitlines() == pasted[25:28]
    summary = "".join(nodes(tree, "html_block")[0].itertext())
    assert "Kernel log lines 24–25 (its first warning) and lines 26–28 of this episode (3 lines)" in summary


def test_no_warning_no_warning_quote(tmp_path: Path) -> None:
    markdown = why_markdown(REAL, "2110")
    assert "The first warning" not in markdown and "(its first warning)" not in markdown
    assert len(raw_blocks(render(markdown))) == 1


def test_the_server_log_is_told_where_the_terminal_tells_it(tmp_path: Path) -> None:
    """Issue 39: in seed 002's Markdown 'The server's own log' came before the kill it explains
    (after it on a terminal). Both now tell it after the kill's facts, before its memory."""
    case = FIXTURES / "seed002_ds4_server_gb10"
    server = tmp_path / "server.log"
    server.write_bytes((case / "server.log").read_bytes())
    when = datetime.fromisoformat("2026-11-19T21:47:32+00:00").timestamp()
    os.utime(server, (when, when))
    args = ["why", "ds4-server", "-k", str(case / "kernel.log"), "--tz", "UTC", "--server-log", str(server)]
    markdown = run(*args, "--format", "markdown").stdout
    headings = [" ".join("".join(h.itertext()).split()) for h in nodes(render(markdown), "heading")]
    assert headings[0] == "OOM kill: ds4-server (pid 124531)"
    at = headings.index("The server's own log")
    assert headings.index("Facts") < at < headings.index("Memory at the kill")
    terminal = run(*args).stdout
    order = [terminal.index(t) for t in ("The server's own log", "Memory at the kill", "Largest processes")]
    assert order == sorted(order)
    assert terminal.index("Invoked by") < terminal.index("The server's own log")

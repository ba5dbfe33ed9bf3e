"""The OOM-report line grammar across kernel generations, one line at a time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from dateutil import tz

from oomtrace import events as ev
from oomtrace.parse import columns_by_count, parse_record, split_task_row
from oomtrace.records import NO_STAMP, Record
from oomtrace.rejoin import parse_records
from oomtrace.sources.textfile import KernelLogFile
from tests.conftest import CORPUS, FIXTURES


def parse(text: str, ident: str | None = "kernel") -> ev.Event | None:
    return parse_record(Record("t", 1, text, text, NO_STAMP, ident))


@pytest.mark.parametrize(
    ("line", "comm", "gfp", "flags", "order", "adj"),
    [
        ("sed invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0", "sed", "0x201da", None, 0, 0),
        (
            "php-fpm invoked oom-killer: gfp_mask=0x1100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
            "php-fpm",
            "0x1100cca",
            "GFP_HIGHUSER_MOVABLE",
            0,
            0,
        ),
        (
            "java invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=-17",
            "java",
            "0x14200ca",
            "GFP_HIGHUSER_MOVABLE",
            0,
            -17,
        ),
        (
            "java invoked oom-killer: gfp_mask=0x201da, order=0, oom_adj=0, oom_score_adj=300",
            "java",
            "0x201da",
            None,
            0,
            300,
        ),
        ("httpd invoked oom-killer: gfp_mask=0x280d2, order=0, oomkilladj=0", "httpd", "0x280d2", None, 0, 0),
        (
            "VM Monitoring Task invoked oom-killer: gfp_mask=0x201da, order=-1, oom_score_adj=0",
            "VM Monitoring Task",
            "0x201da",
            None,
            -1,
            0,
        ),
    ],
)
def test_header_generations(line: str, comm: str, gfp: str, flags: str | None, order: int, adj: int) -> None:
    event = parse(line)
    assert isinstance(event, ev.OomInvoked)
    assert (event.comm, event.gfp_mask, event.gfp_flags, event.order, event.oom_score_adj) == (
        comm,
        gfp,
        flags,
        order,
        adj,
    )


@pytest.mark.parametrize(
    ("line", "pid", "comm", "uid", "anon", "adj", "memcg"),
    [
        (
            "Out of memory: Killed process 1966928 (llama-server) total-vm:164222812kB, anon-rss:31651260kB, "
            "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:63332kB oom_score_adj:200",
            1966928,
            "llama-server",
            1000,
            31651260,
            200,
            False,
        ),
        (
            "Memory cgroup out of memory: Killed process 2110 (oomprobe-hog) total-vm:78244kB, anon-rss:65152kB, "
            "file-rss:6772kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:200",
            2110,
            "oomprobe-hog",
            0,
            65152,
            200,
            True,
        ),
        (
            "Killed process 6576 (mysqld) total-vm:33914892kB, anon-rss:20629004kB, file-rss:0kB, shmem-rss:0kB",
            6576,
            "mysqld",
            None,
            20629004,
            None,
            False,
        ),
        (
            "Killed process 4417, UID 501, (java) total-vm:11605768kB, anon-rss:7942908kB, file-rss:1176kB",
            4417,
            "java",
            501,
            7942908,
            None,
            False,
        ),
        (
            "Killed process 1532 (badsysprogram) total-vm:1641388kB, anon-rss:1595164kB, file-rss:76kB",
            1532,
            "badsysprogram",
            None,
            1595164,
            None,
            False,
        ),
        ("Killed process 12 (Web Content (x))", 12, "Web Content (x)", None, None, None, False),
        # A terminal-wrapped paste pads inside the numbers.
        (
            "Out of memory: Killed process 9 (a) total-vm:53312244      kB, anon-rss:12 kB, UID:3 pgtables:1kB oom_score_adj:-5",
            9,
            "a",
            3,
            12,
            -5,
            False,
        ),
        (
            "Out of memory (oom_kill_allocating_task): Killed process 5 (b) total-vm:1kB, anon-rss:1kB, file-rss:0kB",
            5,
            "b",
            None,
            1,
            None,
            False,
        ),
    ],
)
def test_kill_line_generations(
    line: str, pid: int, comm: str, uid: int | None, anon: int | None, adj: int | None, memcg: bool
) -> None:
    event = parse(line)
    assert isinstance(event, ev.Killed)
    assert (event.pid, event.comm, event.uid, event.anon_rss_kb, event.oom_score_adj, event.memcg) == (
        pid,
        comm,
        uid,
        anon,
        adj,
        memcg,
    )


@pytest.mark.parametrize(
    ("line", "pid", "comm", "score", "memcg"),
    [
        (
            "Out of memory: Kill process 6576 (mysqld) score 651 or sacrifice child",
            6576,
            "mysqld",
            651,
            False,
        ),
        (
            "Memory cgroup out of memory: Kill process 1381 (gunpowder-memho) score 1046 or sacrifice child",
            1381,
            "gunpowder-memho",
            1046,
            True,
        ),
        ("Out of memory: kill process 2201 (httpd) score 12 or a child", 2201, "httpd", 12, False),
    ],
)
def test_chosen_lines(line: str, pid: int, comm: str, score: int, memcg: bool) -> None:
    event = parse(line)
    assert isinstance(event, ev.KillChosen)
    assert (event.pid, event.comm, event.score, event.memcg) == (pid, comm, score, memcg)


def test_oom_kill_summary_keeps_commas_inside_values() -> None:
    event = parse(
        "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,2,global_oom,"
        "task_memcg=/user.slice,task=a,pid=7,uid=0"
    )
    assert isinstance(event, ev.OomKillSummary)
    assert event.global_oom
    assert event.fields["mems_allowed"] == "0,2"
    assert event.fields["pid"] == "7"


@pytest.mark.parametrize(
    ("line", "kind", "key"),
    [
        (
            "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) returned from "
            "_memdescAllocInternal(pMemDesc) @ mem_desc.c:1359",
            "nvrm-no-memory",
            "_memdescAllocInternal",
        ),
        (
            "NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY] ... _memdescAllocInternal",
            "nvrm-no-memory",
            "nvrm",
        ),
        (
            "NVRM: nvAssertFailed: Out of memory [NV_ERR_NO_MEMORY] returned from osAllocPages",
            "nvrm-no-memory",
            "osAllocPages",
        ),
        (
            "NVRM: sysmemConstruct_IMPL: *** Cannot allocate sysmem through fb heap",
            "nvrm-no-memory",
            "sysmemConstruct_IMPL",
        ),
        (
            "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s",
            "nvrm-xid",
            "xid-119",
        ),
        (
            "tf-engine: page allocation failure: order:4, mode:0x40dc0(GFP_KERNEL|__GFP_COMP), nodemask=(null)",
            "page-allocation-failure",
            "tf-engine:order4",
        ),
        ("java: page allocation failure. order:1, mode:0x20", "page-allocation-failure", "java:order1"),
        ("INFO: task kworker/u8:2:123 blocked for more than 120 seconds.", "hung-task", "kworker/u8:2"),
        (
            "__vm_enough_memory: pid: 4242, comm: python3, bytes: 1073741824 not enough memory for the allocation",
            "overcommit-refused",
            "python3",
        ),
    ],
)
def test_early_warnings(line: str, kind: str, key: str) -> None:
    event = parse(line)
    assert isinstance(event, ev.EarlyWarning)
    assert (event.kind, event.key) == (kind, key)


def test_other_nvrm_lines_are_not_warnings() -> None:
    assert parse("NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  580.173.02") is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "CPU: 1 UID: 0 PID: 2110 Comm: oomprobe-hog Not tainted 6.18.44-fc-v857 #1 PREEMPT(none)",
            ev.TaskLine,
        ),
        ("CPU: 8 PID: 3923954 Comm: php-fpm Tainted: P           O      5.15.158-2-pve #1", ev.TaskLine),
        ("Pid: 4417, comm: java Not tainted 2.6.32-754.35.1.el6.x86_64 #1", ev.TaskLine),
        ("Hardware name: HP ProLiant DL385 G7, BIOS A18 12/08/2012", ev.HardwareName),
        (" [<ffffffff816861ac>] dump_stack+0x19/0x1b", ev.CallFrame),
        (" os_alloc_mem+0x54/0x100 [nvidia]", ev.CallFrame),
        ("Mem-Info:", ev.MemInfoHeader),
        ("active_anon:7355653 inactive_anon:660960 isolated_anon:0", ev.Counters),
        ("Node 0 DMA32 free:59728kB min:7832kB low:9788kB high:11748kB active_anon:2154380kB", ev.ZoneLine),
        ("Node 0 active_anon:1kB inactive_anon:2kB", ev.NodeLine),
        ("Free swap  = 0kB", ev.SwapLine),
        ("8379834 pages RAM", ev.PagesLine),
        (
            "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
            ev.TasksHeader,
        ),
        ("[ 6576] 12345  6576  8478546  5157063   15483  1527848             0 mysqld", ev.TaskRow),
        ("Task in /mem2 killed as a result of limit of /mem2", ev.TaskInMemcg),
        ("memory: usage 65536kB, limit 65536kB, failcnt 240", ev.MemcgUsage),
        ("Memory cgroup stats for /oomprobe:", ev.MemcgStatsHeader),
        ("rss 66846720", ev.MemcgStat),
        (
            "oom_reaper: reaped process 1381 (gunpowder-memho), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
            ev.Reaped,
        ),
        ("Out of memory and no killable processes...", ev.NoKillable),
        ("Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled", ev.OomPanic),
        ("oom_kill_process: 12 callbacks suppressed", ev.CallbacksSuppressed),
    ],
)
def test_report_body_lines(line: str, kind: type) -> None:
    assert isinstance(parse(line), kind)


def test_cpu_line_fields() -> None:
    event = parse("CPU: 3 PID: 473206 Comm: doxygen Tainted: G           OE      6.1.1-arch1-1 #1 9bd0")
    assert isinstance(event, ev.TaskLine)
    assert (event.pid, event.comm, event.kernel) == (473206, "doxygen", "6.1.1-arch1-1")


def test_userspace_records_are_not_kernel_events() -> None:
    assert parse("Out of memory: Killed process 1 (x) total-vm:1kB", ident="myapp") is None


def test_a_process_name_cannot_forge_a_kill() -> None:
    # A tasks-table row whose name spells a kill line stays a row.
    event = parse(
        "[  390]     0   390    39012     6739      78       51             0 Killed process 1 (init)"
    )
    assert isinstance(event, ev.TaskRow)


@pytest.mark.parametrize(
    ("rest", "columns", "expected"),
    [
        (
            "0  6576  8478546  5157063   15483  1527848             0 mysqld",
            ("pid", "uid", "tgid", "total_vm", "rss", "nr_ptes", "swapents", "oom_score_adj", "name"),
            {
                "uid": 0,
                "tgid": 6576,
                "total_vm": 8478546,
                "rss": 5157063,
                "nr_ptes": 15483,
                "swapents": 1527848,
                "oom_score_adj": 0,
                "name": "mysqld",
            },
        ),
        (
            "0 1 2 3 4 5 -1000 VM Monitoring Task",
            ("pid", "uid", "tgid", "total_vm", "rss", "nr_ptes", "swapents", "oom_score_adj", "name"),
            {
                "uid": 0,
                "tgid": 1,
                "total_vm": 2,
                "rss": 3,
                "nr_ptes": 4,
                "swapents": 5,
                "oom_score_adj": -1000,
                "name": "VM Monitoring Task",
            },
        ),
        ("0 1 2 3 web (x) 1", ("pid",), {"col2": 0, "col3": 1, "col4": 2, "col5": 3, "name": "web (x) 1"}),
    ],
)
def test_task_rows_split_by_header(rest: str, columns: tuple[str, ...], expected: dict[str, object]) -> None:
    assert split_task_row(rest, columns) == expected


def test_hyperscan_finds_the_anchors_the_python_loop_finds() -> None:
    """A long log's anchor test goes to Hyperscan: on every line of the fixtures, and on lines
    that hold several anchors, one inside another, or characters outside ASCII, it names the
    same kinds as the loop of `in` tests small logs use."""
    pytest.importorskip("hyperscan")
    from pathlib import Path

    from oomtrace import parse as p

    texts = [
        line
        for path in sorted(Path(__file__).parent.parent.joinpath("fixtures").rglob("*.log"))
        for line in path.read_text(errors="surrogateescape").splitlines()
    ]
    texts += [
        "systemd-oomd killed /x: SIGTERM to process 12 (SIGKILL later)",
        "Ünïcode invoked oom-killer: gfp_mask=0x0 Killed process 1 \udcff pid  ] ill process",
        "Memory cgroup stats for /a: Node 0 pages swap Mem-Info",
        "\ud800 lone surrogate before oom-kill:constraint=CONSTRAINT_NONE",
        "",
    ]
    assert len(texts) > 500
    for kinds in (p._KERNEL_KINDS, p._OTHER_KINDS):
        loop, fast = p._Anchors(kinds), p._Anchors(kinds)
        loop._database = False
        fast._database, fast._scratch = p._compiled(fast.table)
        assert fast._database
        for text in texts:
            assert fast.kinds_in(text) == loop.kinds_in(text), text
        assert any(fast.kinds_in(text) for text in texts)


def _tables(path: Path) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """Each tasks table in a log: its header's columns and its rows' text after `[pid]`."""
    table: tuple[tuple[str, ...], list[str]] | None = None
    records = KernelLogFile(str(path), tz.UTC, year=2026).records()
    for _record, event in parse_records(records):
        if isinstance(event, ev.TasksHeader):
            table = (event.columns, [])
        elif isinstance(event, ev.TaskRow) and table is not None:
            table[1].append(event.rest)
        elif table is not None and table[1]:
            yield table
            table = None
    if table is not None and table[1]:
        yield table


def test_a_table_named_by_its_count_is_named_as_its_header_names_it_in_every_real_log() -> None:
    """The layouts a cut table is named by (parse.TABLE_LAYOUTS) agree with the header of every
    table whose rows have that count, in the fixtures, the real pastes and the peers' corpus: a
    count that told the wrong kernel would rank tasks by the wrong figures."""
    paths = [
        *sorted(FIXTURES.glob("*/kernel.log")),
        *sorted((Path(__file__).parent / "realworld" / "cases").glob("*/input.txt")),
        *(sorted(p for p in CORPUS.rglob("*") if p.suffix in (".txt", ".log")) if CORPUS.is_dir() else []),
    ]
    named: Counter[int] = Counter()
    for path in paths:
        for header, rests in _tables(path):
            by_count = columns_by_count(rests)
            if by_count is not None:
                assert by_count == header, path
                named[len(header) - 2] += 1
    # Both layouts are held against real headers, not only assumed.
    assert named[10] >= 1 and named[8] >= 1, named


def test_pieces_of_a_wrapped_line_are_joined_only_when_adjacent() -> None:
    # A kill line wrapped into four: a scan that skips the third piece must not pair the second
    # with the fourth (`anon-rss:316` + `3332kB` read 3,163,332 kB).
    from oomtrace.prefixes.splitter import LineSplitter

    pieces = {
        31: "Nov 14 13:12:12 spark-01 kernel: Out of memory: Killed proce",
        32: "ss 1966928 (llama-server) total-vm:164222812kB, anon-rss:316",
        33: "51260kB, file-rss:8400kB, shmem-rss:0kB, UID:1000 pgtables:6",
        34: "3332kB oom_score_adj:200",
    }

    def killed(numbers: tuple[int, ...]) -> ev.Killed:
        splitter = LineSplitter("k.log", zone=tz.UTC, year=2026)
        records = [r for n in numbers for r in splitter.split(pieces[n], n)]
        (kill,) = [e for _, e in parse_records(records) if isinstance(e, ev.Killed)]
        return kill

    assert killed((31, 32, 33, 34)).anon_rss_kb == 31651260
    skipped = killed((31, 32, 34))
    assert (skipped.comm, skipped.anon_rss_kb, skipped.oom_score_adj) == ("llama-server", None, None)

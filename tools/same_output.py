"""Prove a change left every output the same: run every input through list, why and report, and diff.

    python tools/same_output.py --rev main          # this working tree against main, one command
    python tools/same_output.py save DIR            # this working tree's outputs into DIR
    python tools/same_output.py compare DIR         # run again; each file unlike DIR's, exit 1
    python tools/same_output.py save DIR --rev REV  # REV's outputs (REV checked out in a temporary
                                                    # git worktree), e.g. before a redesign starts
    python tools/same_output.py --rev main --only fixtures/ --keep /tmp/so   # a part; keep both

Inputs, copied into one temporary folder (the same bytes for every revision: always this
checkout's, never REV's) and named by their path in it, as a user would type them:
  fixtures/*/        each case's kernel log(s), case.toml's args, and for its query its server
                     logs with the modification time case.toml gives (as tests/test_golden.py)
  tests/realworld/cases/*/input.txt
  corpus/...         every log (.txt, .log) in tests/peers/ (the peers' corpus, copied from
                     ../shared/corpus into the repository)
  bench/out/         two logs from bench/make_log.py (its fixed seeds): reports-200.log, 200
                     reports in 4 MiB of dmesg noise, and kills-2000.log, a crash loop of 2,000
                     kills in journalctl -k text
Commands, each with `-k LOG... --tz UTC` and the case's args:
  list, list -f json, report -f markdown,
  why NAME --all in text, json and markdown, for the fixture's query and for every victim,
  trigger and unit named in that input's `list -f json`,
  list -f json again through the other reading path (OOMTRACE_FAST_MIN_BYTES: the chunk scan
  forced on for the small inputs, off for the bench logs), as a redesign of sources/ may
  change one path only.

Each output is one file, DIR/<input>/<command>.out: the command, its exit code, its stdout and
its stderr, byte for byte. Also DIR/_inputs.txt: every input file's size and SHA-256.

What keeps the outputs still from run to run: a width of 100 columns (COLUMNS), NO_COLOR, TZ=UTC
and --tz UTC, PYTHONHASHSEED=0, a small environment (PASSED_ON: no OOMTRACE_* or colour
variables), every input's modification time fixed (2026-12-01 00:00 UTC: syslog stamps take
their year from it), and paths relative to the inputs' folder. No output holds the time of the
run (there is no "generated" field) and no output is normalised; but a few stamps take their
year or date from the day of the run (through dateutil, DATEUTIL_TODAY below says where), so
each run makes dateutil's "today" one fixed day, 2026-12-01.

How: one Python process per revision (this script, `_run`, with PYTHONPATH=<revision>/src, so
the revision needs no install: this checkout's .venv supplies the dependencies), which forks
--jobs workers (2); each takes an input at a time and runs its commands in-process with click's
CliRunner. A full run takes about 40 s a revision on 2 cores (the 2,000-kill crash loop alone
takes one worker that long), so `--rev main` takes about 75 s.

Exit codes: 0 the same, 1 some output differs (each file's unified diff is printed, cut to
--max-lines), 2 this script could not run (a git worktree, a revision that fails to start).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WIDTH = "100"
MTIME = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
MARKER = "_inputs.txt"
WINDOW = 5000
BENCH = (
    ("bench/out/reports-200.log", ("--mib", "4", "--reports", "200")),
    ("bench/out/kills-2000.log", ("--kills", "2000", "--style", "journalctl")),
)
# The chunk scan starts at 1 MiB (sources/textfile.py): below it every line is read.
CHUNK_SCAN_ALWAYS = "0"
CHUNK_SCAN_NEVER = str(1 << 60)
# The day a run happens leaks into the outputs through dateutil, which fills what a stamp does not
# say from today: a stamp read by prefixes/stamps.py's fuzzy_time took today's date (`Jun 12 06:39:26:`
# in tests/realworld/cases/user-earlyoom-colon-stamp-sigterm-retry and old-redis-el6-glued-quotes)
# or today's date (`[2025-09-13T20:46:45.253118849Z]` in dev-talos-rpi5-node-prefix, where only
# the clock reaches dateutil). The runs make dateutil's today this fixed day, as if every run
# happened on it; found by a run under faketime on another date, which then changes no output.
DATEUTIL_TODAY = datetime(2026, 12, 1)
# The environment a run gets from this script's, besides what it sets; faketime's variables pass,
# so `NO_FAKE_STAT=1 faketime '2027-03-15 10:00:00' python tools/same_output.py compare DIR`
# checks that no output depends on the day.
PASSED_ON = ("PATH", "HOME", "TMPDIR", "LANG", "LD_PRELOAD", "FAKETIME", "NO_FAKE_STAT")


class Failed(Exception):
    """This script could not do its part (exit 2): not a difference in the outputs."""


@dataclass(frozen=True)
class Input:
    """One input and what it needs: its logs, options, and for a fixture its query and server logs."""

    name: str
    """Its folder among the outputs."""
    logs: tuple[str, ...]
    args: tuple[str, ...] = ()
    query: str | None = None
    server_logs: tuple[str, ...] = ()
    big: bool = False
    """Read through the chunk scan by default: the other path is then line by line."""
    size: int = 0


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    file: str
    env: dict[str, str | None] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# The inputs, staged


def stage(into: Path, only: str | None) -> list[Input]:
    """Copy every input into `into` (fixed modification times) and list them."""
    inputs = [*_fixtures(into), *_realworld(into), *_corpus(into), *_bench(into, only)]
    for path in into.rglob("*"):
        if path.is_file():
            os.utime(path, (MTIME, MTIME))
    for item in inputs:  # a server log without stamps ends at the time its case.toml gives
        mtime = _server_log_mtime(item)
        for log in item.server_logs:
            os.utime(into / log, (mtime, mtime))
    inputs = [item for item in inputs if only is None or only in item.name]
    sized = [
        Input(**{**asdict(item), "size": sum((into / log).stat().st_size for log in item.logs)})
        for item in inputs
    ]
    return sorted(sized, key=lambda item: (-item.size, item.name))


def _copy(source: Path, into: Path, relative: str) -> str:
    target = into / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return relative


def _fixtures(into: Path) -> Iterator[Input]:
    for case_toml in sorted((ROOT / "fixtures").glob("*/case.toml")):
        case = case_toml.parent
        config = tomllib.loads(case_toml.read_text())
        logs = []
        for name in config.get("kernel_logs", ["kernel.log"]):
            relative = os.path.relpath((case / name).resolve(), ROOT)
            logs.append(_copy(ROOT / relative, into, relative))
        servers = [
            _copy(case / name, into, f"fixtures/{case.name}/{name}") for name in config.get("server_logs", [])
        ]
        yield Input(
            name=f"fixtures/{case.name}",
            logs=tuple(logs),
            args=tuple(config["args"]),
            query=config["query"],
            server_logs=tuple(servers),
        )


def _server_log_mtime(item: Input) -> float:
    if not item.server_logs:
        return MTIME
    config = tomllib.loads((ROOT / item.name / "case.toml").read_text())
    if "server_log_mtime" not in config:
        return MTIME
    return datetime.fromisoformat(config["server_log_mtime"]).timestamp()


def _realworld(into: Path) -> Iterator[Input]:
    for log in sorted((ROOT / "tests" / "realworld" / "cases").glob("*/input.txt")):
        relative = _copy(log, into, str(log.relative_to(ROOT)))
        yield Input(name=f"realworld/{log.parent.name}", logs=(relative,))


def corpus_folder() -> Path | None:
    """The peers' corpus, kept in the repository (tests/peers, copied from ../shared/corpus)."""
    folder = ROOT / "tests" / "peers"
    return folder if folder.is_dir() else None


def _corpus(into: Path) -> Iterator[Input]:
    corpus = corpus_folder()
    if corpus is None:
        print("note: tests/peers is not there: the peer corpus is skipped", file=sys.stderr)
        return
    for log in sorted(corpus.rglob("*")):
        if log.is_file() and log.suffix in (".txt", ".log"):
            relative = _copy(log, into, f"corpus/{log.relative_to(corpus)}")
            yield Input(name=str(Path(relative).with_suffix("")), logs=(relative,))


def _bench(into: Path, only: str | None) -> Iterator[Input]:
    for relative, options in BENCH:
        name = str(Path(relative).with_suffix("")).replace("/out", "")
        if only is not None and only not in name:
            continue
        made = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "make_log.py"), str(into / relative), *options]
        )
        if made.returncode != 0:
            raise Failed(f"bench/make_log.py could not write {relative}")
        yield Input(name=name, logs=(relative,), big=True)


def describe(into: Path, inputs: Sequence[Input]) -> bytes:
    """Every input file's size and SHA-256, and each input's options: saved beside the outputs."""
    lines = [
        f"width {WIDTH}, TZ=UTC, NO_COLOR=1, mtime {datetime.fromtimestamp(MTIME, UTC):%Y-%m-%d %H:%M} UTC"
    ]
    for path in sorted(p for p in into.rglob("*") if p.is_file() and p.name != "inputs.json"):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{path.stat().st_size:>10} {digest[:16]} {path.relative_to(into)}")
    for item in sorted(inputs, key=lambda item: item.name):
        query = (
            f" query {item.query!r} with {' '.join(item.server_logs) or 'no server log'}"
            if item.query
            else ""
        )
        lines.append(f"{item.name}: {' '.join(_log_args(item))}{query}")
    return ("\n".join(lines) + "\n").encode()


# ---------------------------------------------------------------------------------------------
# One revision's run (a process of its own: `same_output.py _run`)


def _log_args(item: Input) -> list[str]:
    args = [arg for log in item.logs for arg in ("-k", log)] + list(item.args)
    return args if "--tz" in args else [*args, "--tz", "UTC"]


def _file_name(argv: Sequence[str]) -> str:
    """A file name for a command (its input's options left out), the same for every run."""
    plain = "_".join(argv)
    name = re.sub(r"[^A-Za-z0-9._+=-]", "_", plain)
    # `why '****'` and `why '????'` must not share a file, nor two names cut at 200 bytes (a
    # victim's name read wrong can run a whole line long: NAME_MAX is 255).
    if name != plain or len(name) > 200:
        name = name[:200] + "." + hashlib.sha256(plain.encode()).hexdigest()[:8]
    return name + ".out"


def _why(name: str, fmt: str, extra: Sequence[str] = ()) -> Command:
    shown = ("why", name, "--all", "-f", fmt)
    # A name that starts with a dash would be read as an option: `--` ends the options first.
    argv = ("why", "--all", "-f", fmt, *extra, "--", name) if name.startswith("-") else (*shown, *extra)
    return Command(argv, _file_name(shown))


def _names(list_json: bytes) -> list[str]:
    """The victims, triggers and units `list -f json` names, sorted."""
    try:
        episodes = json.loads(list_json)["episodes"]
    except (ValueError, KeyError, TypeError):
        return []
    names = set()
    for episode in episodes:
        for role in ("victim", "trigger"):
            comm = (episode.get(role) or {}).get("comm")
            if comm:
                names.add(comm)
        if episode.get("unit"):
            names.add(episode["unit"])
    return sorted(names)


def _commands_before_why(item: Input) -> list[Command]:
    other = CHUNK_SCAN_NEVER if item.big else CHUNK_SCAN_ALWAYS
    path = "line_by_line" if item.big else "chunk_scan"
    return [
        Command(("list",), _file_name(("list",))),
        Command(("list", "-f", "json"), _file_name(("list", "-f", "json"))),
        Command(
            ("list", "-f", "json"),
            _file_name(("list", "-f", "json", path)),
            {"OOMTRACE_FAST_MIN_BYTES": other},
        ),
        Command(("report", "-f", "markdown"), _file_name(("report", "-f", "markdown"))),
    ]


def run_input(job: tuple[Input, str]) -> tuple[str, float, int]:
    """Every command on one input, each output written under `out`; (name, seconds, files)."""
    from click.testing import CliRunner

    from oomtrace.cli import cli

    item, out = job
    started = time.perf_counter()
    folder = Path(out) / item.name
    folder.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    logs = _log_args(item)
    written = 0

    def run(command: Command) -> bytes:
        nonlocal written
        argv = [*command.argv, *logs]
        env = {"COLUMNS": WIDTH, "NO_COLOR": "1", "OOMTRACE_FAST_MIN_BYTES": None, **command.env}
        result = runner.invoke(cli, argv, env=env)
        setting = "".join(f"{key}={value} " for key, value in command.env.items())
        head = f"$ {setting}oomtrace {' '.join(argv)}\nexit {result.exit_code}\n"
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            head += f"exception {type(result.exception).__name__}: {result.exception}\n"
        text = head.encode() + b"--- stdout\n" + result.stdout_bytes + b"\n--- stderr\n" + result.stderr_bytes
        (folder / command.file).write_bytes(text)
        written += 1
        return result.stdout_bytes

    names = []
    for command in _commands_before_why(item):
        stdout = run(command)
        if command.argv == ("list", "-f", "json") and not command.env:
            names = _names(stdout)
    whys = []
    if item.query:
        servers = [arg for log in item.server_logs for arg in ("--server-log", log)]
        whys.append((item.query, servers))
    whys += [(name, []) for name in names if name != item.query]
    for name, extra in whys:
        for fmt in ("text", "json", "markdown"):
            run(_why(name, fmt, extra))
    return item.name, time.perf_counter() - started, written


def _fix_dateutil_today() -> None:
    """Make DATEUTIL_TODAY the date dateutil fills in where a stamp does not say it."""
    from dateutil.parser import _parser

    parse = _parser.parser.parse

    def parse_on_the_fixed_day(
        self: Any, timestr: str, default: datetime | None = None, **kwargs: Any
    ) -> Any:
        return parse(self, timestr, default=default or DATEUTIL_TODAY, **kwargs)

    _parser.parser.parse = parse_on_the_fixed_day  # type: ignore[method-assign, assignment]


def run_revision(inputs_dir: Path, out: Path, jobs: int, src: Path) -> None:
    """`_run`: this process runs one revision (the oomtrace on PYTHONPATH) over the staged inputs."""
    import multiprocessing

    import oomtrace.cli  # noqa: F401  (imported once, before the workers fork)

    _fix_dateutil_today()

    where = Path(sys.modules["oomtrace"].__file__ or "").resolve()
    if src.resolve() not in where.parents:
        sys.exit(f"oomtrace was imported from {where}, not from {src}: is PYTHONPATH set?")
    inputs = [
        Input(**{**raw, **{key: tuple(raw[key]) for key in ("logs", "args", "server_logs")}})
        for raw in json.loads((inputs_dir / "inputs.json").read_text())
    ]
    os.chdir(inputs_dir)
    started = time.perf_counter()
    timings = []
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for name, seconds, written in pool.imap_unordered(run_input, [(i, str(out)) for i in inputs]):
            timings.append((seconds, name, written))
    slowest = ", ".join(f"{name} {seconds:.0f} s" for seconds, name, _ in sorted(timings, reverse=True)[:3])
    print(
        f"{len(inputs)} inputs, {sum(t[2] for t in timings)} outputs in "
        f"{time.perf_counter() - started:.0f} s with {jobs} workers (slowest: {slowest})",
        file=sys.stderr,
    )


# ---------------------------------------------------------------------------------------------
# Revisions, saving and comparing


@contextmanager
def checkout(rev: str | None) -> Iterator[tuple[Path, str]]:
    """The src folder of REV (a temporary detached git worktree, removed after) or of this tree."""
    if rev is None:
        yield ROOT / "src", "the working tree"
        return
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if commit.returncode != 0:
        raise Failed(f"{rev!r} is not a revision here: {commit.stderr.strip()}")
    where = Path(tempfile.mkdtemp(prefix="same-output-rev-"))
    added = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--quiet", "--detach", str(where), commit.stdout.strip()]
    )
    if added.returncode != 0:
        raise Failed(f"git worktree add of {rev} failed")
    try:
        yield where / "src", f"{rev} ({commit.stdout.strip()[:10]})"
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], check=False)
        shutil.rmtree(where, ignore_errors=True)


def produce(staged: Path, inputs: Sequence[Input], rev: str | None, out: Path, jobs: int) -> None:
    """Every output of REV (or of this tree) into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_bytes(describe(staged, inputs))
    with checkout(rev) as (src, label):
        print(f"running {label} ...", file=sys.stderr)
        env = {key: os.environ[key] for key in PASSED_ON if key in os.environ}
        env |= {
            "PYTHONPATH": str(src),
            "PYTHONHASHSEED": "0",
            "TZ": "UTC",
            "LC_ALL": "C.UTF-8",
            "NO_COLOR": "1",
            "COLUMNS": WIDTH,
        }
        command = [
            sys.executable,
            __file__,
            "_run",
            str(staged),
            str(out),
            "--jobs",
            str(jobs),
            "--src",
            str(src),
        ]
        if subprocess.run(command, env=env, cwd=staged).returncode != 0:
            raise Failed(f"the run of {label} failed")


def _diff(a: str, b: str, name: str, context: int) -> list[str]:
    """The unified diff of two outputs. Of a long one (the bench logs' run to 100,000 lines and
    more) only the part between the lines both begin and end with is diffed, at most WINDOW
    lines of it, so one change in a big file costs no quadratic matching."""
    old, new = a.splitlines(), b.splitlines()
    start = 0
    if max(len(old), len(new)) > WINDOW:
        while start < min(len(old), len(new)) and old[start] == new[start]:
            start += 1
        end = 0
        while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
            end += 1
        start = max(start - context, 0)
        old = old[start : max(len(old) - end + context, start)][:WINDOW]
        new = new[start : max(len(new) - end + context, start)][:WINDOW]
    diff = list(difflib.unified_diff(old, new, f"before/{name}", f"after/{name}", n=context, lineterm=""))
    if start:  # the hunks' line numbers counted from the window's start: from the file's
        diff = [
            _HUNK.sub(lambda m: _shifted(m, start), line) if line.startswith("@@") else line for line in diff
        ]
    return diff


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _shifted(hunk: re.Match[str], by: int) -> str:
    old, old_count, new, new_count = hunk.groups()
    return f"@@ -{int(old) + by}{old_count or ''} +{int(new) + by}{new_count or ''} @@"


def differences(before: Path, after: Path, only: str | None, context: int, max_lines: int) -> int:
    """Print every file that is not the same in both trees; return how many."""

    def files(root: Path) -> set[str]:
        found = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
        # With --only the inputs listed differ from a full run's: their list is left out.
        return {name for name in found if only is None or (only in name and name != MARKER)}

    old, new = files(before), files(after)
    differing = 0
    for name in sorted(old | new):
        if name not in new or name not in old:
            print(f"only in {before if name in old else after}: {name}")
            differing += 1
            continue
        a, b = (before / name).read_bytes(), (after / name).read_bytes()
        if a == b:
            continue
        differing += 1
        diff = _diff(a.decode(errors="replace"), b.decode(errors="replace"), name, context)
        print("\n".join(diff[:max_lines]))
        if len(diff) > max_lines:
            print(f"... ({len(diff) - max_lines} more diff lines)")
    total = len(old | new)
    print(
        f"{differing} of {total} files differ" if differing else f"{total} files, all the same",
        file=sys.stderr,
    )
    return differing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0],
        epilog="Read the module's docstring for what runs and why: tools/same_output.py.",
    )
    parser.add_argument("mode", nargs="?", choices=("save", "compare"), help="save DIR or compare DIR")
    parser.add_argument("dir", nargs="?", type=Path, help="where the outputs are saved or compared from")
    parser.add_argument("--rev", help="run this git revision (a temporary worktree) instead of this tree")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--only", help="only inputs whose name holds this text (fixtures/, realworld/...)")
    parser.add_argument("--keep", type=Path, help="with --rev and no mode: keep both outputs here")
    parser.add_argument("--context", type=int, default=3, help="lines of context in a diff")
    parser.add_argument("--max-lines", type=int, default=40, help="diff lines shown per file")
    args = parser.parse_args(argv)
    if (args.mode is None) != (args.dir is None):
        parser.error("save and compare take a DIR")
    if args.mode is None and args.rev is None:
        parser.error("give save DIR, compare DIR or --rev REV")
    if args.mode == "compare" and not (args.dir / MARKER).exists():
        parser.error(f"{args.dir} holds no saved outputs ({MARKER} is missing)")
    try:
        return _main(args)
    except Failed as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="same-output-") as temporary:
        staged = Path(temporary) / "inputs"
        staged.mkdir()
        started = time.perf_counter()
        inputs = stage(staged, args.only)
        (staged / "inputs.json").write_text(json.dumps([asdict(item) for item in inputs]))
        if args.mode == "save":
            _prepare(args.dir)
            produce(staged, inputs, args.rev, args.dir.resolve(), args.jobs)
            code = 0
        else:
            if args.mode == "compare":
                before, after, after_rev = args.dir.resolve(), Path(temporary) / "after", args.rev
            else:
                base = (args.keep or Path(temporary)).resolve()
                before, after, after_rev = base / "before", base / "after", None
                for folder in (before, after):
                    _prepare(folder)
                produce(staged, inputs, args.rev, before, args.jobs)
            produce(staged, inputs, after_rev, after, args.jobs)
            code = 1 if differences(before, after, args.only, args.context, args.max_lines) else 0
        print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return code


def _prepare(folder: Path) -> None:
    """An empty folder for outputs: a new one, or one that holds a previous run's (replaced)."""
    if folder.exists() and any(folder.iterdir()):
        if not (folder / MARKER).exists():
            raise Failed(f"{folder} is not empty and holds no saved outputs: not replacing it")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_run"]:
        internal = argparse.ArgumentParser()
        internal.add_argument("_run")
        internal.add_argument("inputs", type=Path)
        internal.add_argument("out", type=Path)
        internal.add_argument("--jobs", type=int, default=2)
        internal.add_argument("--src", type=Path, required=True)
        options = internal.parse_args()
        run_revision(options.inputs, options.out, options.jobs, options.src)
    else:
        sys.exit(main())

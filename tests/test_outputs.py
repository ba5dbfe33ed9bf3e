"""What oomtrace writes, and what it must never destroy: devices, FIFOs, symlinks, its own inputs
(issue 26), and the one-line errors for an output that cannot be written."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run
from tests.journals import REMOTE, kernel_entries, write_journal

LOG = FIXTURES / "seed000_llama_server_gb10" / "kernel.log"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
FULL, NULL = os.makedev(1, 7), os.makedev(1, 3)


def _node(tmp_path: Path, name: str, device: int, kind: int = stat.S_IFCHR) -> Path:
    """A device node in tmp_path (never the real /dev ones)."""
    path = tmp_path / name
    os.mknod(path, kind | 0o666, device)
    return path


def _log(tmp_path: Path) -> Path:
    copy = tmp_path / "x.log"
    copy.write_bytes(LOG.read_bytes())
    return copy


def _one_line_error(stderr: str, words: str) -> None:
    assert stderr.startswith("oomtrace: error: ") and stderr.count("\n") == 1, stderr
    assert words in stderr and "internal error" not in stderr and "Traceback" not in stderr


def _oomtrace(*args: str, shell: str = "", stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    """The installed entry point in a real process; `shell` redirections (`>&-`) are applied
    by /bin/sh before it starts."""
    command = [sys.executable, "-m", "oomtrace", *args]
    return subprocess.run(
        ["/bin/sh", "-c", f'"$@" {shell}', "sh", *command],
        capture_output=True,
        text=True,
        check=False,
        stdin=stdin,
        env={**os.environ, "COLUMNS": "80", "NO_COLOR": "1"},
        timeout=60,
    )


@ROOT_ONLY
@pytest.mark.parametrize("command", [("export", "--prom-textfile"), ("list", "-o")])
def test_a_full_device_stays_a_device_and_the_error_is_one_line(
    tmp_path: Path, command: tuple[str, str]
) -> None:
    full = _node(tmp_path, "full", FULL)
    result = run(command[0], "-k", str(_log(tmp_path)), command[1], str(full))
    assert result.exit_code == 2
    _one_line_error(result.stderr, "No space left on device")
    info = os.lstat(full)
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == FULL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "x.log"]  # no temporary left


@ROOT_ONLY
@pytest.mark.parametrize(
    "command", [("export", "--prom-textfile"), ("list", "-o"), ("why", "llama-server", "-o")]
)
def test_a_null_device_is_written_not_replaced(tmp_path: Path, command: tuple[str, ...]) -> None:
    null = _node(tmp_path, "null", NULL)
    result = run(*command[:-1], "-k", str(_log(tmp_path)), command[-1], str(null))
    assert result.exit_code == 0, result.output
    info = os.lstat(null)
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == NULL


@ROOT_ONLY
def test_a_block_device_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    # Major 60 is for local/experimental use: no driver, so even a wrong open could write nothing.
    disk = _node(tmp_path, "disk", os.makedev(60, 0), stat.S_IFBLK)
    for option in ("-o", "--prom-textfile"):
        result = run("export" if option != "-o" else "list", "-k", str(_log(tmp_path)), option, str(disk))
        assert result.exit_code == 2
        _one_line_error(result.stderr, "it is a block device")
        assert stat.S_ISBLK(os.lstat(disk).st_mode)


@pytest.mark.parametrize("command", [("export", "--prom-textfile"), ("list", "-o")])
def test_a_fifo_is_written_to_its_reader(tmp_path: Path, command: tuple[str, str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run(command[0], "-k", str(_log(tmp_path)), command[1], str(fifo))
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not renamed over by a regular file
    reader.join(timeout=30)
    assert got, "nothing reached the FIFO's reader"
    expected = b"oomtrace_oom_kills_total" if command[0] == "export" else b"llama-server"
    assert expected in got[0]


@pytest.mark.parametrize("command", [("export", "--prom-textfile"), ("list", "-o")])
def test_a_symlink_is_followed_and_its_target_replaced_whole(
    tmp_path: Path, command: tuple[str, str]
) -> None:
    target = tmp_path / "target"
    target.write_text("the previous output\n")
    target.chmod(0o600)
    before = os.stat(target).st_ino
    link = tmp_path / "link"
    link.symlink_to(target)
    result = run(command[0], "-k", str(_log(tmp_path)), command[1], str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "previous" not in target.read_text() and "llama-server" in target.read_text()
    # Replaced by a rename (a new inode), not rewritten in place; the old mode kept.
    assert os.stat(target).st_ino != before and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "target", "x.log"]


AS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="a link or file of another user's is made with os.lchown, which needs root"
)
NOBODY = 65534  # the overflow uid: nobody


def _shared(tmp_path: Path, owner: int = 0, sticky: bool = True) -> Path:
    """A folder like /tmp (sticky, world-writable), inside tmp_path; or a plain one of `owner`'s."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777 if sticky else 0o755)
    os.chown(folder, owner, -1)
    return folder


def _planted_link(folder: Path, target: Path, owner: int = NOBODY, name: str = "report.md") -> Path:
    link = folder / name
    link.symlink_to(target)
    os.lchown(link, owner, owner)
    return link


def _secret(tmp_path: Path, text: str = "root's secret\n") -> Path:
    secret = tmp_path / "secret"
    secret.write_text(text)
    secret.chmod(0o600)
    return secret


def _planted_link_cases(log: Path, link: Path) -> list[tuple[str, ...]]:
    watch = ("watch", "--source", "kmsg", "--duration", "0")
    cases = [
        ("list", "-k", str(log), "-o", str(link)),
        ("why", "llama-server", "-k", str(log), "-o", str(link)),
        ("export", "-k", str(log), "--prom-textfile", str(link)),
        (*watch, "--cursor-file", str(link)),  # checked at start, before /dev/kmsg is opened
    ]
    if _kmsg_reason() is None:
        cases += [(*watch, "--record", str(link)), (*watch, "--prom-textfile", str(link))]
    return cases


@AS_ROOT
def test_a_symlink_another_user_planted_in_a_sticky_folder_is_not_followed(tmp_path: Path) -> None:
    """Issue 41: as root, `-o report.md` in a sticky world-writable folder where nobody had made
    report.md a link to a root-owned 0600 file replaced that file with the report."""
    secret = _secret(tmp_path)
    link = _planted_link(_shared(tmp_path), secret)
    for args in _planted_link_cases(_log(tmp_path), link):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        _one_line_error(result.stderr, f"the symlink {link} belongs to nobody (uid {NOBODY})")
        assert "not followed" in result.stderr and "protected_symlinks" in result.stderr
        assert secret.read_text() == "root's secret\n" and os.readlink(link) == str(secret), args
    # A link on the way is judged too, not only the last one.
    (tmp_path / "inside").mkdir()
    through = _planted_link(link.parent, tmp_path / "inside", name="folder")
    result = run("list", "-k", str(_log(tmp_path)), "-o", str(through / "report.md"))
    assert result.exit_code == 2
    _one_line_error(result.stderr, f"the symlink {through} belongs to nobody")
    assert list((tmp_path / "inside").iterdir()) == []


@AS_ROOT
def test_check_does_not_write_its_cursor_through_a_planted_symlink(tmp_path: Path) -> None:
    cursor = tmp_path / "root-cursor.json"
    cursor.write_text('{"said": []}')  # a cursor of root's, which check can read: it gets to the write
    link = _planted_link(_shared(tmp_path), cursor, name="cursor.json")
    result = run("check", "-k", str(_log(tmp_path)), "--cursor-file", str(link))
    assert result.exit_code == 2  # NPD's "unknown", its reason on stdout cut to its line
    assert result.stdout.startswith(f"unknown: cannot write --cursor-file {str(link)[:30]}"), result.stdout
    assert cursor.read_text() == '{"said": []}' and link.is_symlink()


@AS_ROOT
@pytest.mark.parametrize(
    ("folder_owner", "link_owner", "sticky"),
    [(0, 0, True), (NOBODY, NOBODY, True), (0, NOBODY, False)],
    ids=["yours-in-sticky", "folder-owners-in-sticky", "another-users-in-plain"],
)
def test_a_symlink_is_followed_where_the_kernel_rule_follows_it(
    tmp_path: Path, folder_owner: int, link_owner: int, sticky: bool
) -> None:
    target = _secret(tmp_path, "the previous report\n")
    link = _planted_link(_shared(tmp_path, folder_owner, sticky), target, link_owner)
    result = run("list", "-k", str(_log(tmp_path)), "-o", str(link))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # root's own file: nothing to say
    assert "llama-server" in target.read_text() and os.readlink(link) == str(target)


@AS_ROOT
def test_a_file_or_fifo_another_user_put_in_a_sticky_folder_is_not_written(tmp_path: Path) -> None:
    """The same trap without a link: nobody's file (or FIFO) at the name root writes would get root's
    report, and nobody would own it. Refused as `>` is where protected_regular is on."""
    folder = _shared(tmp_path)
    planted, fifo = folder / "report.md", folder / "fifo"
    planted.write_text("nobody's\n")
    planted.chmod(0o666)
    os.mkfifo(fifo)  # nobody listens: a FIFO refused is never opened, so the test cannot hang
    for path in (planted, fifo):
        os.chown(path, NOBODY, NOBODY)
    log = _log(tmp_path)
    for args, kind in [
        (("list", "-k", str(log), "-o", str(planted)), "file"),
        (("export", "-k", str(log), "--prom-textfile", str(fifo)), "FIFO"),
    ]:
        result = run(*args)
        assert result.exit_code == 2, result.output
        _one_line_error(result.stderr, f"the {kind} {folder}/")
        assert f"belongs to nobody (uid {NOBODY})" in result.stderr and "not written" in result.stderr
    assert planted.read_text() == "nobody's\n" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    from oomtrace.errors import OutputError
    from oomtrace.outputs import open_append

    with pytest.raises(OutputError, match="belongs to nobody"):
        open_append(str(planted), "--record")  # the watcher's record: judged on the file it opened
    assert planted.read_text() == "nobody's\n"


@AS_ROOT
def test_replacing_another_users_file_is_said_and_its_owner_kept(tmp_path: Path) -> None:
    """Outside a sticky folder only root or the folder's owner can have put the file there (a
    node_exporter textfile, say): replaced as before, owner and mode kept, and said on stderr."""
    folder = _shared(tmp_path, sticky=False)
    saved = folder / "report.md"
    saved.write_text("the previous report\n")
    saved.chmod(0o640)
    os.chown(saved, NOBODY, NOBODY)
    result = run("list", "-k", str(_log(tmp_path)), "-o", str(saved))
    assert result.exit_code == 0, result.output
    assert (
        result.stderr
        == f"oomtrace: -o {saved} is a file of nobody (uid {NOBODY}): replaced, its owner and mode kept\n"
    )
    info = os.stat(saved)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (NOBODY, 0o640)
    assert "llama-server" in saved.read_text()


def test_a_symlinked_cursor_file_is_followed_and_its_target_replaced_whole(tmp_path: Path) -> None:
    """Issue 41: the cursor (`check`, `watch`) replaced a symlink with a regular file."""
    from oomtrace.watch.blackbox import CursorFile, read_cursor

    target, link = tmp_path / "state" / "cursor.json", tmp_path / "cursor.json"
    target.parent.mkdir()
    link.symlink_to(target)
    log = _log(tmp_path)
    assert run("check", "-k", str(log), "--cursor-file", str(link)).exit_code == 0  # first run: made
    before = os.stat(target).st_ino
    assert run("check", "-k", str(log), "--cursor-file", str(link)).stdout == "no new OOM kill\n"
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert os.stat(target).st_ino != before and "said" in target.read_text()  # renamed over, whole
    # The watcher's saves.
    said: list[str] = []
    CursorFile(str(link), "kmsg", said.append).save("boot:42")
    assert link.is_symlink() and read_cursor(str(link), "kmsg") == "boot:42" and not said
    assert sorted(p.name for p in target.parent.iterdir()) == ["cursor.json"]  # no temporary left


# `list -o` that stops inside its write, its report drawn into the temporary file: the test
# signals it there.
STALL_IN_WRITE = """
import sys, time
from oomtrace import cli, render
draw = render.draw_on
def stall(stream, *args):
    draw(stream, *args)
    stream.flush()
    print("in the write", file=sys.stderr, flush=True)
    time.sleep(120)
render.draw_on = stall
sys.argv = ["oomtrace", *sys.argv[1:]]
cli.main()
"""


@pytest.mark.parametrize(
    ("number", "code"),
    [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP), (signal.SIGINT, 130)],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_an_interrupted_write_leaves_no_temporary_file(tmp_path: Path, number: int, code: int) -> None:
    """Issue 41: a SIGTERM during `-o` left a .oomtrace-* file beside the report. It still ends
    the run as it did (killed by the signal; 130 for Ctrl-C), the previous report kept whole."""
    saved = tmp_path / "out" / "report.txt"
    saved.parent.mkdir()
    saved.write_text("the previous report\n")
    process = subprocess.Popen(
        [sys.executable, "-c", STALL_IN_WRITE, "list", "-k", str(LOG), "-o", str(saved)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        assert process.stderr.readline() == "in the write\n"
        assert len(list(saved.parent.iterdir())) == 2, "the run was not inside the write"
    finally:
        process.send_signal(number)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert [p.name for p in saved.parent.iterdir()] == ["report.txt"]
    assert saved.read_text() == "the previous report\n"


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "new.txt")
    result = run("list", "-k", str(_log(tmp_path)), "-o", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and "llama-server" in (tmp_path / "new.txt").read_text()


def test_a_directory_is_refused(tmp_path: Path) -> None:
    result = run("list", "-k", str(_log(tmp_path)), "-o", str(tmp_path))
    assert result.exit_code == 2
    _one_line_error(result.stderr, "it is a directory")


def _same_file_cases(tmp_path: Path, log: Path) -> list[tuple[str, ...]]:
    link = tmp_path / "link.log"
    link.symlink_to(log)
    hard = tmp_path / "hard.log"
    os.link(log, hard)
    return [
        ("list", "-k", str(log), "-o", str(log)),
        ("list", "-k", str(link), "-o", str(log)),
        ("report", "-k", str(log), "-o", str(hard)),
        ("why", "llama-server", "-k", str(log), "-o", str(link)),
        ("why", "llama-server", "-k", str(LOG), "--server-log", str(log), "-o", str(log)),
        ("list", "-k", str(LOG), "--record", str(log), "-o", str(log)),
        ("export", "-k", str(log), "--prom-textfile", str(log)),
        ("export", "-k", str(LOG), "--record", str(hard), "--prom-textfile", str(link)),
    ]


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    log = _log(tmp_path)
    for args in _same_file_cases(tmp_path, log):
        result = run(*args)
        assert result.exit_code == 2, args
        _one_line_error(result.stderr, "writing it would destroy it")
        assert log.read_bytes() == LOG.read_bytes(), args


NEEDS_REMOTE = pytest.mark.skipif(
    REMOTE is None, reason="systemd-journal-remote is not installed (apt-get install systemd-journal-remote)"
)
BOOT = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def written_journal(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Seed 000's kernel lines as a real journal file, written once; each test copies it."""
    if REMOTE is None:
        pytest.skip("systemd-journal-remote is not installed")
    entries = kernel_entries(LOG, "spark-01", BOOT)
    path = tmp_path_factory.mktemp("journal") / "remote.journal"
    return write_journal(path, entries, {BOOT: entries[0].time - timedelta(hours=1)}).read_bytes()


def _journal_folder(root: Path, journal: bytes) -> list[Path]:
    """A journal folder as journald leaves one: a file at the top, and in a machine-id folder an
    archived one and a hidden one (libsystemd opens both; a glob of *.journal* misses the hidden)."""
    machine = root / "0123456789abcdef0123456789abcdef"
    machine.mkdir(parents=True)
    files = [root / "remote.journal", machine / "system@0001-0002.journal~", machine / ".user-1000.journal"]
    for path in files:
        path.write_bytes(journal)
    return files


def _journal_cases(tmp_path: Path, folder: Path, files: list[Path]) -> list[tuple[str, ...]]:
    link = tmp_path / "report.md"
    link.symlink_to(files[0])
    d = ("-D", str(folder))
    return [
        ("list", *d, "-o", str(files[0])),
        ("why", "llama-server", *d, "-o", str(files[1])),
        ("report", *d, "-o", str(files[2])),
        ("list", *d, "-o", str(link)),  # the journal file behind a link
        ("export", *d, "--prom-textfile", str(files[1])),
        ("list", "--journal-file", str(files[0]), "-o", str(files[0])),
        ("watch", *d, "--duration", "0", "--record", str(files[0])),
        ("watch", *d, "--duration", "0", "--prom-textfile", str(files[2])),
        ("watch", *d, "--duration", "0", "--cursor-file", str(link)),
    ]


@NEEDS_REMOTE
def test_an_output_into_a_journal_folder_read_is_refused_and_the_journal_kept(
    tmp_path: Path, written_journal: bytes
) -> None:
    """Issue 41: `list -D j -o j/remote.journal` replaced the journal file with the report, exit 0."""
    folder = tmp_path / "j"
    files = _journal_folder(folder, written_journal)
    for args in _journal_cases(tmp_path, folder, files):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        _one_line_error(result.stderr, "writing it would destroy it")
        assert all(path.read_bytes() == written_journal for path in files), args
    result = run("check", "-D", str(folder), "--cursor-file", str(files[2]))
    assert result.exit_code == 2 and result.stdout.startswith("unknown: --cursor-file"), result.output
    assert files[2].read_bytes() == written_journal
    # A file of the folder is named, and so is the folder it was read in.
    said = run("list", "-D", str(folder), "-o", str(files[1])).stderr
    assert f"is also {files[1]}, a file of -D {folder}" in said


@NEEDS_REMOTE
def test_an_output_into_the_system_journal_is_refused(
    tmp_path: Path, written_journal: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no -k, -D or --journal-file the system journal is read: its files are inputs too.
    Its folders are moved into tmp_path (never the real /var/log/journal)."""
    from oomtrace.sources import journalquery

    roots = (tmp_path / "var-log-journal", tmp_path / "run-log-journal")
    monkeypatch.setattr(journalquery, "SYSTEM_JOURNALS", tuple(map(str, roots)))
    files = _journal_folder(roots[1], written_journal)
    for args in (("list", "-o", str(files[0])), ("export", "--prom-textfile", str(files[2]))):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        _one_line_error(result.stderr, ", a file of the system journal: writing it would destroy it")
        assert all(path.read_bytes() == written_journal for path in files), args


def test_an_output_that_is_standard_input_is_refused(tmp_path: Path) -> None:
    log = _log(tmp_path)
    with open(log) as stdin:
        done = _oomtrace("list", "-k", "-", "-o", str(log), stdin=stdin.fileno())
    assert done.returncode == 2
    _one_line_error(done.stderr, "-o " + str(log) + " is also -k -")
    assert log.read_bytes() == LOG.read_bytes()


def test_watch_outputs_may_not_be_one_file(tmp_path: Path) -> None:
    same = str(tmp_path / "state")
    for options in (("--record", same, "--prom-textfile", same), ("--record", same, "--cursor-file", same)):
        result = run("watch", "--source", "kmsg", "--duration", "0", *options)
        assert result.exit_code == 2
        _one_line_error(result.stderr, "writing it would destroy it")
    assert not os.path.lexists(same)


def _kmsg_reason() -> str | None:
    if os.geteuid() != 0:
        return "mknod and /dev/kmsg need root"
    try:
        os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    except OSError as error:
        return f"cannot read /dev/kmsg: {error.strerror}"
    return None


@pytest.mark.skipif(_kmsg_reason() is not None, reason=str(_kmsg_reason()))
def test_watch_on_a_full_device_says_so_at_start(tmp_path: Path) -> None:
    full = _node(tmp_path, "full", FULL)
    record = _oomtrace("watch", "--source", "kmsg", "--duration", "5", "--record", str(full))
    assert record.returncode == 2
    _one_line_error(record.stderr, "--record " + str(full) + " is a character device")
    metrics = _oomtrace("watch", "--source", "kmsg", "--duration", "5", "--prom-textfile", str(full))
    assert metrics.returncode == 2
    assert "cannot write --prom-textfile" in metrics.stderr and "No space left on device" in metrics.stderr
    assert "Traceback" not in metrics.stderr and "internal error" not in metrics.stderr
    assert stat.S_ISCHR(os.lstat(full).st_mode) and os.lstat(full).st_rdev == FULL


@ROOT_ONLY
@pytest.mark.parametrize("command", [("list",), ("why", "llama-server"), ("report", "--format", "json")])
def test_standard_output_on_a_full_device_is_a_one_line_error(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    full = _node(tmp_path, "full", FULL)
    done = _oomtrace(*command, "-k", str(LOG), shell=f"> {full}")
    assert done.returncode == 2
    _one_line_error(done.stderr, "cannot write the report to standard output: No space left on device")


def test_a_closed_standard_output_is_a_one_line_error_not_nothing_found(tmp_path: Path) -> None:
    done = _oomtrace("list", "-k", str(LOG), shell=">&-")
    assert done.returncode == 2  # never 1, which means "nothing explains the death"
    _one_line_error(done.stderr, "standard output is closed")
    # With -o the report never needed standard output.
    saved = tmp_path / "list.txt"
    done = _oomtrace("list", "-k", str(LOG), "-o", str(saved), shell=">&-")
    assert done.returncode == 0 and done.stderr == "" and "llama-server" in saved.read_text()


@pytest.mark.parametrize(
    "command",
    [("list",), ("report",), ("why", "llama-server"), ("check", "--cursor-file", "{cursor}")],
    ids=lambda c: c[0],
)
def test_a_closed_standard_error_leaves_the_report_whole(tmp_path: Path, command: tuple[str, ...]) -> None:
    """Issue 41: with `2>&-` every command exited 2 with no output ('NoneType' object has no
    attribute 'isatty'). Messages have nowhere to go then, but the report is written."""
    args = [a.replace("{cursor}", str(tmp_path / "cursor.json")) for a in command]
    done = _oomtrace(*args, "-k", str(LOG), "--tz", "UTC", shell="2>&-")
    assert done.returncode == 0, done.stdout[-500:]
    assert "llama-server" in done.stdout or command[0] == "check"
    assert "Traceback" not in done.stdout and "NoneType" not in done.stdout


def test_watch_with_standard_error_closed_writes_only_json_to_standard_output(tmp_path: Path) -> None:
    """Issue 41: `watch --format jsonl 2>&-` wrote its diagnostics (the start-up line) into the
    JSON stream: rich's Console, handed a None stderr, writes to standard output."""
    from tests.journals import REMOTE

    if REMOTE is None:
        pytest.skip("needs systemd-journal-remote to write journal files")
    from tests.test_watch_live import _journal

    journal, _, _ = _journal(tmp_path)
    done = _oomtrace(
        "watch", "--format", "jsonl", "--journal-file", str(journal), "--duration", "1", shell="2>&-"
    )
    assert done.returncode == 0
    assert [json.loads(line)["event"] for line in done.stdout.splitlines()] == ["started"]


def test_a_closed_standard_input_is_a_one_line_error() -> None:
    done = _oomtrace("list", "-k", "-", shell="<&-")
    assert done.returncode == 2
    _one_line_error(done.stderr, "cannot read -k -: standard input is closed")


# /dev/fd/1, not /dev/stdout: where a broken build renamed over the name, /dev/fd (a link to
# /proc/self/fd) cannot take a new file, while the real /dev/stdout would be replaced.
STDOUT = "/dev/fd/1"


def test_a_reader_that_leaves_is_still_quiet(tmp_path: Path) -> None:
    for options in ((), ("-o", STDOUT)):
        done = _oomtrace("list", "-k", str(LOG), *options, shell="| head -c 1 >/dev/null; exit 0")
        assert done.stderr == "", options


def test_dev_fd_1_writes_through_to_the_file_the_shell_opened(tmp_path: Path) -> None:
    saved = tmp_path / "saved.txt"
    saved.write_text("kept\n")
    before = os.stat(saved).st_ino
    done = _oomtrace("list", "-k", str(LOG), "-o", STDOUT, shell=f">> {saved}")
    assert done.returncode == 0, done.stderr
    assert os.stat(saved).st_ino == before
    assert saved.read_text().startswith("kept\n") and "llama-server" in saved.read_text()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--since", "0001-01-01"), "the time '0001-01-01' is not one a log can hold"),
        (("--until", "9999-12-31T23:59:59+00:00"), "is not one a log can hold"),
        (("--since", "0001-01-01 00:00", "--until", "now"), "use a time from 1970-01-01 to 9999-12-30"),
        # Found by fuzz/fuzz_options.py: a POSIX rule read, then failing on every stamp.
        (("--tz", "X99"), "unknown time zone 'X99'"),
        (("--tz", "0:995666666666664593"), "unknown time zone '0:995666666666664593'"),
        (("--until", "9999-12-31T3:59555555555555555555:59+0"), "cannot read the time"),  # decimal error
        # Found by fuzz/fuzz_options.py in CI: dateutil reads an offset of two days from it.
        (
            ("--until", "9:999-1-159:59+00:2-31T23:59:25"),
            "cannot read the time '9:999-1-159:59+00:2-31T23:59:25'",
        ),
    ],
)
def test_times_no_log_can_hold_are_one_line_errors(args: tuple[str, ...], words: str) -> None:
    result = run("list", "-k", str(LOG), *args)
    assert result.exit_code == 2
    _one_line_error(result.stderr, words)


def test_the_first_and_last_times_allowed_still_work() -> None:
    result = run("list", "-k", str(LOG), "--since", "1970-01-01", "--until", "9999-12-30")
    assert result.exit_code == 0 and "llama-server" in result.stdout


def test_an_unreadable_fast_min_bytes_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "abc")
    result = run("list", "-k", str(LOG))
    assert result.exit_code == 2
    _one_line_error(result.stderr, "OOMTRACE_FAST_MIN_BYTES='abc' is not a number of bytes")
    monkeypatch.setenv("OOMTRACE_FAST_MIN_BYTES", "0")  # every file scanned in chunks: same kill
    assert "llama-server" in run("list", "-k", str(LOG)).stdout


def test_check_refuses_a_cursor_file_that_is_its_log(tmp_path: Path) -> None:
    log = _log(tmp_path)
    result = run("check", "--cursor-file", str(log), "-k", str(log))
    assert result.exit_code == 2  # node-problem-detector's "unknown", its reason on stdout
    assert result.stdout.startswith(f"unknown: --cursor-file {str(log)[:40]}")  # cut to NPD's line
    assert log.read_bytes() == LOG.read_bytes()

"""Does every record the test suite left in this machine's kernel log say it is a test's?

Run from the repository's root: `.ci/run` notes the last record's sequence number before the suite (`mark`) and checks the
records after it (`check SEQ`): each kill oomtrace finds in them and each warning it would name
must carry tests.conftest.TEST_TAG, so none can be taken for a real one later."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from datetime import UTC

# Every record the suite leaves in the machine's kernel log carries this in its text: a line
# written to /dev/kmsg, and the name of each process the suite OOM-kills (its comm: 15 bytes at
# most, so the tag and two hex digits). docs/development.md says what they are.
TEST_TAG = "oomtrace-test"


def kmsg_records() -> list[tuple[int, str]]:
    """(sequence number, `[uptime] text`) of every record in the kernel's ring buffer."""
    found = []
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                record = os.read(fd, 16384).decode("utf-8", "replace")
            except BlockingIOError:
                return found
            except OSError as error:
                if error.errno == errno.EPIPE:  # overwritten while read: the next one
                    continue
                raise
            header, _, text = record.partition(";")
            fields = header.split(",")
            seq, usec = int(fields[1]), int(fields[2])
            found.append((seq, f"[{usec / 1e6:12.6f}] {text.splitlines()[0] if text else ''}"))
    finally:
        os.close(fd)


def untagged(lines: list[str]) -> list[str]:
    """The kills and warnings oomtrace finds in these dmesg lines that do not carry the tag."""
    if not lines:
        return []
    # Here, not above: `mark` runs before the package is installed.
    from oomtrace.analyze import analyze
    from oomtrace.sources.textfile import KernelLogFile

    with tempfile.NamedTemporaryFile("w", suffix=".log", encoding="utf-8") as log:
        log.write("\n".join(lines) + "\n")
        log.flush()
        analysis = analyze([KernelLogFile(log.name, UTC)])
    kills = [
        f"a kill of {e.victim.comm if e.victim else e.unit}: {e.raw_lines[-1] if e.raw_lines else ''}"
        for e in analysis.episodes
        if not any(TEST_TAG in line for line in e.raw_lines)
    ]
    warnings = [f"a {w.kind} warning: {w.text}" for w in analysis.warnings if TEST_TAG not in w.text]
    return kills + warnings


def main(argv: list[str]) -> int:
    if argv[:1] == ["mark"]:
        records = kmsg_records()
        print(records[-1][0] if records else -1)
        return 0
    if len(argv) == 2 and argv[0] == "check":
        since = int(argv[1])
        found = untagged([line for seq, line in kmsg_records() if seq > since])
        for item in found:
            print(f"a kernel log record since the suite began without {TEST_TAG!r}: {item}", file=sys.stderr)
        return 1 if found else 0
    print("usage: python -m tests.kmsg_audit mark | check SEQ", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

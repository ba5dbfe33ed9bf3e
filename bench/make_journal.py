"""Write a deterministic journal of N entries with systemd-journal-remote: the make_log.py noise and
reports as kernel records, plus a unit's records, for benchmarking the journal sources.

    python bench/make_journal.py bench/out/bench.journal --entries 1000000
    python bench/make_journal.py bench/out/fleet/remote-gpu-07.journal --host gpu-07 --seed 7
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_log import _TEMPLATES, NVRM_OOM, report_lines

BOOT = "7d0c2c1e5a9f4d6b8e0a61f2c3b4d5e6"
START_US = 1_794_600_000_000_000
REMOTE = next(
    (
        p
        for p in ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")
        if Path(p).exists()
    ),
    shutil.which("systemd-journal-remote"),
)


def entry(realtime: int, message: str, identifier: str = "kernel", host: str = "bench-01") -> bytes:
    monotonic = realtime - START_US + 100_000_000
    transport = "kernel" if identifier == "kernel" else "journal"
    fields = (
        f"__REALTIME_TIMESTAMP={realtime}\n__MONOTONIC_TIMESTAMP={monotonic}\n_BOOT_ID={BOOT}\n"
        f"_HOSTNAME={host}\n_TRANSPORT={transport}\nSYSLOG_IDENTIFIER={identifier}\n"
        f"MESSAGE={message}\n\n"
    )
    return fields.encode()


def write(path: Path, entries: int, reports: int = 10, seed: int = 1, host: str = "bench-01") -> None:
    assert REMOTE is not None, "systemd-journal-remote is not installed"
    rng = random.Random(seed)
    body = report_lines()
    every = entries // (reports + 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    remote = subprocess.Popen(
        [REMOTE, f"--output={path}", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert remote.stdin is not None
    now = START_US
    done = 0
    written = 0
    chunk: list[bytes] = []
    while written < entries:
        now += rng.randrange(1, 10_000)
        template = _TEMPLATES[rng.randrange(len(_TEMPLATES))]
        chunk.append(
            entry(
                now,
                template.format(n=rng.randrange(1 << 20), p=rng.randrange(1, 9), t=now // 1_000_000),
                host=host,
            )
        )
        written += 1
        if done < reports and written >= every * (done + 1):
            for _ in range(3):
                now += 1_500_000
                chunk.append(entry(now, NVRM_OOM, host=host))
            now += 60_000_000
            for line in body:
                chunk.append(entry(now, line.replace("1966928", str(1_000_000 + done)), host=host))
            scope = "vte-spawn-8c6a1f2e-1d1b-4c5e-9b8e-3f6f2b9f1c11.scope"
            chunk.append(
                entry(
                    now + 1_000_000,
                    f"{scope}: A process of this unit has been killed by the OOM killer.",
                    "systemd",
                    host,
                )
            )
            written += len(body) + 4
            done += 1
        if len(chunk) >= 10_000:
            remote.stdin.write(b"".join(chunk))
            chunk = []
    remote.stdin.write(b"".join(chunk))
    remote.stdin.close()
    remote.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--host", default="bench-01")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    write(args.path, args.entries, seed=args.seed, host=args.host)


if __name__ == "__main__":
    main()

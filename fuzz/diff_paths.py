"""A differential fuzz of the two ways a saved log is read: the chunk scan against every line.

Mutated real pastes (tests/realworld/cases) and fixtures: stretches cut (a header, part of a
body), noise, Xid and NVRM lines put in, the whole repeated (a crash loop), neighbours swapped,
lines doubled. Each input is read both ways with `list -f json`; where the episodes, warnings or
incidents differ, the input is kept in OUT with the head size it was read with.

Run: python fuzz/diff_paths.py SEED SECONDS [OUT]   (random mutations, not coverage-guided:
a given seed tries the same inputs in the same order). On 2026-12-02, 120 s of seed 21 tried
19,875 inputs and kept 116 (0.6 %): most differ as they did before the chunk scan read back cut
reports (a line with no prefix takes the stamp of the line before it, which the scan may have
skipped; incidents joined or a unit's records told across lines it skipped): to be sorted out.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import make_log  # noqa: E402  (bench/make_log.py: its noise and NVRM lines)
from tests.conftest import run  # noqa: E402

from oomtrace.sources import bigfile  # noqa: E402

SOURCES = [*(ROOT / "tests/realworld/cases").glob("*/input.txt"), *(ROOT / "fixtures").glob("*/kernel.log")]
PASTES = [path.read_text(errors="replace").splitlines() for path in sorted(SOURCES)]
NOISE = [template.format(n=123456, p=3, t=100) for template in make_log._TEMPLATES[:40:4]]
XID = "NVRM: Xid (PCI:0000:01:00): 13, pid=999, name=python3, Graphics Exception"
INSERTED = [*NOISE, XID, make_log.NVRM_OOM]


def mutated(rng: random.Random) -> str:
    lines = list(rng.choice(PASTES))
    for _ in range(rng.randrange(1, 6)):
        step = rng.randrange(6)
        if step == 0 and len(lines) > 3:  # a stretch cut out: a header, part of a body
            at = rng.randrange(len(lines))
            del lines[at : at + rng.randrange(1, 10)]
        elif step == 1:  # noise, an Xid or an NVRM failure, behind the `[ uptime] ` next to it
            at = rng.randrange(len(lines) + 1)
            near = lines[min(at, len(lines) - 1)] if lines else ""
            prefix = near[: near.find("] ") + 2] if near.startswith("[") and "] " in near else ""
            lines[at:at] = [prefix + rng.choice(INSERTED)] * rng.randrange(1, 4)
        elif step == 2:  # the whole again: a crash loop
            lines += lines
        elif step == 3 and len(lines) > 1:  # two neighbours swapped
            at = rng.randrange(len(lines) - 1)
            lines[at : at + 2] = lines[at : at + 2][::-1]
        elif step == 4:  # noise before, so that the report lies past the head
            lines = [rng.choice(NOISE) for _ in range(rng.randrange(5, 60))] + lines
        elif step == 5 and lines:  # a line doubled
            at = rng.randrange(len(lines))
            lines.insert(at, lines[at])
    return "\n".join(lines) + "\n"


def read(path: Path, chunk_scan: bool) -> object:
    os.environ["OOMTRACE_FAST_MIN_BYTES"] = "0" if chunk_scan else str(1 << 60)
    result = run("list", "-k", str(path), "--format", "json", "--tz", "UTC", "--year", "2026")
    if result.exit_code:
        return result.exit_code, result.stderr
    document = json.loads(result.stdout)
    return document["episodes"], document["warnings"], document["incidents"]


def main() -> None:
    seed, seconds = int(sys.argv[1]), float(sys.argv[2])
    out = Path(sys.argv[3] if len(sys.argv) > 3 else f"diff-paths-{seed}")
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    path = out / "input.log"
    tried = differ = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        text = mutated(rng)
        # Real heads are 100 lines; short ones put more of each input through the scan. (A head
        # of 1 or 2 prefix-less noise lines can leave a file's format unsettled: a refusal on one
        # path only is that, not a difference of the scan.)
        bigfile.HEAD_LINES = rng.choice([1, 2, 5])
        path.write_text(text)
        tried += 1
        if read(path, True) != read(path, False):
            differ += 1
            (out / f"differ-{differ}-head{bigfile.HEAD_LINES}.log").write_text(text)
    print(f"seed {seed}: {tried} inputs, {differ} read differently (kept in {out})")


if __name__ == "__main__":
    main()

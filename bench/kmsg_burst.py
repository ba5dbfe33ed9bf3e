"""Write kernel-log noise to /dev/kmsg at a steady rate (root): the watcher's burst load.

    python bench/kmsg_burst.py --rate 10000 --seconds 60 [--slice-ms 10]

One line in a thousand is an NVRM NV_ERR_NO_MEMORY (a warning, said once a minute and counted
between), the rest make_log.py's noise, of which one line in twenty is an NVRM Xid. These go
into this machine's real kernel log, so the lines oomtrace names as warnings carry the test
suite's tag (tests/kmsg_audit.py's TEST_TAG, as tests/test_watch_live.py's lines do) and say
they are this script's: the NV_ERR_NO_MEMORY line in the driver's own form with the tag where
the driver names its function, each Xid with the tag as its process name. The watcher parses
them as the lines they imitate. The other noise names no warning nor kill, and carries no tag:
the tag holds `oom`, an anchor, and a tagged line would no longer be noise to the watcher.
Prints how many lines it wrote and at what rate.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from make_log import _TEMPLATES
from tests.kmsg_audit import TEST_TAG

NVRM_OOM = (
    f"NVRM: {TEST_TAG}: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) returned from "
    f"oomtrace_bench_burst ({TEST_TAG}: written by bench/kmsg_burst.py, not by the NVIDIA driver)"
)
# make_log.py's Xid line names python3 as the process; here the process is the tag.
TEMPLATES = [template.replace("name=python3,", f"name={TEST_TAG},") for template in _TEMPLATES]
assert all(TEST_TAG in template for template in TEMPLATES if "NVRM" in template), "an untagged NVRM line"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=int, default=10_000, help="lines a second")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--slice-ms", type=float, default=10, help="write in slices this long (0.2: nearly evenly)"
    )
    options = parser.parse_args()
    rng = random.Random(16)
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    written = 0
    start = time.monotonic()
    tick = options.slice_ms / 1000
    while (now := time.monotonic()) - start < options.seconds:
        due = int((now - start) * options.rate)
        while written < due:
            if written % 1000 == 999:
                message = NVRM_OOM
            else:
                template = TEMPLATES[rng.randrange(len(TEMPLATES))]
                message = template.format(n=rng.randrange(1 << 20), p=rng.randrange(1, 9), t=int(now))
            os.write(fd, f"<6>{message}\n".encode())
            written += 1
        time.sleep(tick)
    elapsed = time.monotonic() - start
    print(f"{written} lines in {elapsed:.1f} s ({written / elapsed:,.0f}/s)")


if __name__ == "__main__":
    main()

"""Write kernel-log noise to /dev/kmsg at a steady rate (root): the watcher's burst load.

    python bench/kmsg_burst.py --rate 10000 --seconds 60

One line in a thousand is an NVRM NV_ERR_NO_MEMORY (a warning, said once a minute and counted
between), the rest make_log.py's noise. Prints how many lines it wrote and at what rate.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_log import _TEMPLATES, NVRM_OOM


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=int, default=10_000, help="lines a second")
    parser.add_argument("--seconds", type=float, default=60)
    options = parser.parse_args()
    rng = random.Random(16)
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    written = 0
    start = time.monotonic()
    tick = 0.01  # write in 10 ms slices
    while (now := time.monotonic()) - start < options.seconds:
        due = int((now - start) * options.rate)
        while written < due:
            if written % 1000 == 999:
                message = NVRM_OOM
            else:
                template = _TEMPLATES[rng.randrange(len(_TEMPLATES))]
                message = template.format(n=rng.randrange(1 << 20), p=rng.randrange(1, 9), t=int(now))
            os.write(fd, f"<6>{message}\n".encode())
            written += 1
        time.sleep(tick)
    elapsed = time.monotonic() - start
    print(f"{written} lines in {elapsed:.1f} s ({written / elapsed:,.0f}/s)")


if __name__ == "__main__":
    main()

"""Write a deterministic kernel log of a given size: realistic noise and ten complete OOM reports.

    python bench/make_log.py bench/out/kern-1g.log --mib 1024
    python bench/make_log.py bench/out/journalctl-1g.log --mib 1024 --style journalctl
    python bench/make_log.py bench/out/kills-20k.log --kills 20000
    python bench/make_log.py bench/out/loop-1000.log --kills 1000 --gap 37 --style journalctl
    python bench/make_log.py bench/out/reports-5000.log --mib 217 --reports 5000
    python bench/make_log.py bench/out/quiet-1g.log --mib 1024 --style kernlog --no-xid

The noise is what a GPU server's ring buffer holds (network, audit, USB, NVRM Xid chatter); the
reports are seed 000's, each preceded by NVRM allocation failures, spread evenly through the file.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "fixtures" / "seed000_llama_server_gb10" / "kernel.log"
# (weight, template): network and audit lines dominate a busy GPU server's ring buffer; the NVRM
# Xid chatter is 5% of lines, which is a noisy driver (one Xid every 20 lines).
NOISE = (
    (18, "IPv6: ADDRCONF(NETDEV_CHANGE): veth{n:x}: link becomes ready"),
    (14, "docker0: port {p}(veth{n:x}) entered forwarding state"),
    (
        25,
        'audit: type=1400 audit({t}:{n}): apparmor="DENIED" operation="open" class="file" '
        'profile="snap.firefox.firefox" name="/proc/{n}/cgroup" pid={n} comm="firefox"',
    ),
    (10, "usb 1-{p}: new high-speed USB device number {n} using xhci_hcd"),
    (8, "r8169 0000:01:00.0 enP7s7: Link is Up - 1Gbps/Full - flow control rx/tx"),
    (5, "NVRM: Xid (PCI:0000:01:00): 13, pid={n}, name=python3, Graphics Exception: ESR 0x404600=0x80000002"),
    (7, "EXT4-fs (nvme0n1p2): re-mounted {n:x}. Quota mode: none."),
    (7, "perf: interrupt took too long ({n} > {p}), lowering kernel.perf_event_max_sample_rate to 79750"),
    (6, "nvme nvme0: I/O tag {p} (1{p:03d}) opcode 0x2 (Read) QID 4 timeout, completion polled"),
)
_TEMPLATES = [template for weight, template in NOISE for _ in range(weight)]
# A quiet machine's log: the same noise without the driver's Xid chatter.
_QUIET = [template for template in _TEMPLATES if "Xid" not in template]
NVRM_OOM = (
    "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051) "
    "returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1359"
)


def report_lines() -> list[str]:
    """The seed 000 report, messages only (its journalctl prefixes cut off)."""
    lines = []
    for line in REPORT.read_text().splitlines():
        if "kernel: " in line:
            lines.append(line.split("kernel: ", 1)[1])
        elif line.startswith(" "):
            lines.append(line.strip())
    start = next(i for i, line in enumerate(lines) if "invoked oom-killer" in line)
    return lines[start:]


# Microseconds between a report's lines, in turn: what real dmesg reports show (1 to 200 µs).
LINE_STEP_S = (0.000001, 0.000004, 0.000002, 0.000092, 0.000011, 0.000003, 0.000187)

# `journalctl -k > file` prints wall-clock stamps and the host; dmesg prints uptimes; rsyslog's
# /var/log/kern.log prints both (its own stamp and host, then the kernel's uptime).
BOOTED = datetime(2026, 11, 28, 8, 0, 0)


def prefix(style: str, uptime: float) -> str:
    if style == "journalctl":
        return f"{(BOOTED + timedelta(seconds=uptime)):%b %d %H:%M:%S} gb10 kernel:"
    if style == "kernlog":
        return f"{(BOOTED + timedelta(seconds=uptime)):%b %d %H:%M:%S} gb10 kernel: [{uptime:12.6f}]"
    return f"[{uptime:12.6f}]"


def write(
    path: Path, mib: int, reports: int = 10, seed: int = 1, style: str = "dmesg", xid: bool = True
) -> None:
    rng = random.Random(seed)
    templates = _TEMPLATES if xid else _QUIET
    target = mib * 1024 * 1024
    body = report_lines()
    every = target // (reports + 1)
    # Noise is written in blocks with at most one report after each: small blocks when the
    # reports are dense (a noise line is about 130 bytes), so they stay spread out.
    per_block = min(2000, max(20, every // 400))
    written = 0
    uptime = 100.0
    next_report = every
    done = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            block = []
            for _ in range(per_block):
                uptime += rng.random() * 0.01
                block.append(noise_line(rng, style, uptime, templates))
            while done < reports and written >= next_report:
                uptime = report_block(block, body, style, uptime, 1_000_000 + done)
                done += 1
                next_report += every
            chunk = "".join(block)
            out.write(chunk)
            written += len(chunk)


def write_kills(path: Path, kills: int, style: str = "dmesg", gap: float | None = None) -> None:
    """A crash loop: `kills` complete reports a minute apart, each after three NVRM failures
    and a little noise (the shape of a server restarted by systemd until someone notices).
    With `gap`, the kills are that many seconds apart (37: a loop joined into one incident)."""
    rng = random.Random(kills)
    body = report_lines()
    uptime = 100.0
    lead = 60.0 if gap is None else max(gap - 5.0, 0.0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for done in range(kills):
            block = []
            for _ in range(5):
                uptime += rng.random() * (1.0 if gap is None else 0.1)
                block.append(noise_line(rng, style, uptime))
            uptime = report_block(block, body, style, uptime, 1_000_000 + done, lead)
            out.write("".join(block))


def noise_line(
    rng: random.Random, style: str, uptime: float, templates: list[str] = _TEMPLATES
) -> str:
    template = templates[rng.randrange(len(templates))]
    message = template.format(n=rng.randrange(1 << 20), p=rng.randrange(1, 9), t=int(uptime))
    return f"{prefix(style, uptime)} {message}\n"


def report_block(
    block: list[str], body: list[str], style: str, uptime: float, pid: int, lead: float = 60.0
) -> float:
    """Three NVRM allocation failures, then `lead` seconds later the report, its victim `pid`:
    the lines go onto `block`; returns the uptime after them."""
    for _ in range(3):
        uptime += 1.5
        block.append(f"{prefix(style, uptime)} {NVRM_OOM}\n")
    uptime += lead
    for number, line in enumerate(body):
        # A real kernel stamps each line of a report apart, a few microseconds after the one
        # before (one stamp for the whole report flattered the splitter's learnt prefix).
        uptime += LINE_STEP_S[number % len(LINE_STEP_S)]
        block.append(f"{prefix(style, uptime)} {line.replace('1966928', str(pid))}\n")
    return uptime


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument(
        "--style",
        choices=("dmesg", "journalctl", "kernlog"),
        default="dmesg",
        help="dmesg: [uptime] stamps; journalctl: `journalctl -k` text with a date and the host; "
        "kernlog: rsyslog's kern.log, a date, the host and the uptime",
    )
    parser.add_argument("--reports", type=int, default=10, help="complete OOM reports in --mib")
    parser.add_argument("--no-xid", action="store_true", help="no NVRM Xid chatter in the noise")
    parser.add_argument(
        "--kills", type=int, help="instead of --mib: a crash loop of this many complete reports"
    )
    parser.add_argument(
        "--gap", type=float, help="with --kills: seconds between kills (default about a minute)"
    )
    args = parser.parse_args()
    if args.kills:
        write_kills(args.path, args.kills, style=args.style, gap=args.gap)
    else:
        write(args.path, args.mib, reports=args.reports, style=args.style, xid=not args.no_xid)


if __name__ == "__main__":
    main()

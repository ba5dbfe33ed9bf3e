#!/usr/bin/env bash
# The watcher's own cost (issue 14): idle, and under a burst of 10,000 kernel lines a second,
# beside `dmesg --follow` reading the same /dev/kmsg in the same run; its RSS over the burst;
# and the time from a real OOM kill's line to the printed story. Root (writes /dev/kmsg, makes
# a 64 MiB memory cgroup).
#
#   sudo bash bench/watch.sh                   # 60 s idle, 120 s burst
#   IDLE_S=600 BURST_S=3600 sudo bash bench/watch.sh
source "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || { echo "bench/watch.sh: needs root (/dev/kmsg, a memory cgroup)" >&2; exit 2; }
# Writes to /dev/kmsg are rate-limited (10 per 5 s) unless printk_devkmsg is on: on for the run.
devkmsg=$(cat /proc/sys/kernel/printk_devkmsg)
echo on >/proc/sys/kernel/printk_devkmsg
trap 'echo "$devkmsg" >/proc/sys/kernel/printk_devkmsg' EXIT
IDLE_S=${IDLE_S:-60}
BURST_S=${BURST_S:-120}
RATE=${RATE:-10000}

cpu_per_min() {  # "<user+sys CPU-s per minute> <peak MB>" from a GNU time file and the seconds run
    awk -v s="$2" '{cpu = $1 + $2; mb = $3 / 1024} END {printf "%.3f %d\n", cpu * 60 / s, mb}' "$1"
}

measure() {  # label, seconds, then the load command (or "" for idle)
    local label=$1 seconds=$2 load=$3
    /usr/bin/time -o "$OUT/.watch.time" -f "%U %S %M" \
        "$OOMTRACE" watch --source kmsg --warn kernel=on --duration "$seconds" >"$OUT/.watch.out" 2>/dev/null &
    local watcher=$!
    /usr/bin/time -o "$OUT/.dmesg.time" -f "%U %S %M" timeout "$seconds" dmesg --follow >/dev/null 2>&1 &
    local baseline=$!
    sleep 1
    local pid
    pid=$(pgrep -n -f "oomtrace watch --source kmsg" || true)
    : >"$OUT/.rss"
    # Every 5 s: seconds since start, RSS (kB), CPU ticks so far; steady-state cost leaves the start-up out.
    ( while kill -0 "$pid" 2>/dev/null; do
        echo "$(date +%s.%N) $(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null)" >>"$OUT/.rss"
        sleep 5
    done ) &
    local sampler=$!
    if [ -n "$load" ]; then $load >"$OUT/.load" 2>&1; fi
    wait "$watcher" "$baseline" 2>/dev/null || true
    kill "$sampler" 2>/dev/null || true
    read -r ours ours_mb < <(cpu_per_min "$OUT/.watch.time" "$seconds")
    read -r base base_mb < <(cpu_per_min "$OUT/.dmesg.time" "$seconds")
    # Steady state: from the second sample (5 s in, start-up done) to the last.
    local steady
    steady=$(awk -v hz="$(getconf CLK_TCK)" 'NR == 2 {t0 = $1; r0 = $2; c0 = $3} NF == 3 {t = $1; r = $2; c = $3}
        END {if (t > t0) printf "%.3f %d %d", (c - c0) / hz * 60 / (t - t0), r0 / 1024, r / 1024; else print "0 0 0"}' "$OUT/.rss")
    read -r steady_cpu rss_first rss_last <<<"$steady"
    awk -v n="$label" -v o="$ours" -v s="$steady_cpu" -v b="$base" -v m="$ours_mb" -v bm="$base_mb" -v f="$rss_first" -v l="$rss_last" \
        'BEGIN{printf "%-30s oomtrace %6.2f CPU-s/min with start-up, %6.3f steady (%5.2f%% of a core), peak %3d MB, RSS %d -> %d MB | dmesg -w %6.3f CPU-s/min, %d MB | ratio %5.1fx\n",
               n, o, s, s / 60 * 100, m, f, l, b, bm, (b > 0 ? o / b : 0)}'
    if [ -n "$load" ]; then
        echo "    load: $(cat "$OUT/.load"); the watcher said $(grep -c ' warning ' "$OUT/.watch.out" || true) warning(s), $(grep -c ' gap ' "$OUT/.watch.out" || true) gap(s): $(grep ' gap ' "$OUT/.watch.out" | head -1)"
    fi
    return 0
}

echo "oomtrace watch, $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r)"
measure "idle, ${IDLE_S} s" "$IDLE_S" ""
measure "burst, ${RATE}/s for ${BURST_S} s" "$BURST_S" "$PYTHON bench/kmsg_burst.py --rate $RATE --seconds $((BURST_S - 3))"

# From a real kill's line to its story: five kills in a 64 MiB cgroup.
"$PYTHON" - "$OOMTRACE" <<'PY'
import json, os, secrets, statistics, subprocess, sys, time
from datetime import datetime
from pathlib import Path
CHILD = "import ctypes,sys\nctypes.CDLL(None).prctl(15,sys.argv[1].encode(),0,0,0)\nh=[]\nwhile True: h.append(b'x'*(1<<20))\n"
root = Path("/sys/fs/cgroup/memory") if Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() else Path("/sys/fs/cgroup")
watch = subprocess.Popen([sys.argv[1], "watch", "--source", "kmsg", "--format", "jsonl", "--warn", "psi-some=off,psi-full=off,memavail=off,zero-in=off"], stdout=subprocess.PIPE, text=True)
assert watch.stdout is not None
watch.stdout.readline()  # started
gaps = []
for _ in range(5):
    # The test suite's tag (tests/kmsg_audit.py) in the process's name and its cgroup's: the five
    # real kills this leaves in the kernel log can never be taken for a real incident later.
    name = f"oomtrace-test{secrets.token_hex(1)}"
    cgroup = root / f"oomtrace-test-bench-{secrets.token_hex(3)}"
    cgroup.mkdir()
    (cgroup / ("memory.limit_in_bytes" if root.name == "memory" else "memory.max")).write_text(str(64 << 20))
    child = subprocess.Popen([sys.executable, "-c", CHILD, name], preexec_fn=lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid())))
    child.wait()
    while True:
        event = json.loads(watch.stdout.readline())
        if event["event"] == "kill":
            break
    killed = datetime.fromisoformat(event["story"]["episode"]["time"])
    gaps.append((datetime.fromisoformat(event["time"]) - killed).total_seconds())
    for _ in range(50):
        try:
            cgroup.rmdir()
            break
        except OSError:
            time.sleep(0.1)
watch.terminate()
watch.wait()
print(f"kill line to story (5 real kills): median {statistics.median(gaps):.2f} s, max {max(gaps):.2f} s")
PY

#!/usr/bin/env bash
# Speed and memory of oomtrace against the tools it must keep up with, on the same inputs: the
# rows of the speed targets (issues 16 and 25), each a ratio to a baseline run in the same loop.
#
#   bash bench/run.sh            # makes bench/out/ inputs on first use (about 6 GiB of disk)
#   PAIRS=7 bash bench/run.sh    # more pairs per row (default 5; 2 or 3 for the rows over 10 s)
#   ROWS=startup,stdin bash bench/run.sh   # only these rows (names below), only their inputs made
#   ROWS=fleet ENTRIES=30000 bash bench/run.sh   # the fleet row on a smaller store
#
# Each row runs oomtrace and its baseline alternately, PAIRS times, and prints the median of
# the wall-time ratios and of the CPU-time ratios (user + system) over the pairs, oomtrace's
# median wall and CPU seconds, and its largest peak RSS. Interleaving matters: this machine's
# speed drifts from hour to hour by more than the differences measured, and a pair sees the same
# machine. Needs GNU time (Debian package "time") and, for the journal rows,
# systemd-journal-remote. OOMTRACE is the command measured (default: .venv/bin/oomtrace).
source "$(dirname "$0")/common.sh"
PAIRS=${PAIRS:-5}
ROWS=${ROWS:-text,quiet,journalctl-text,gz,reports,loop,startup,journal,fleet,stdin,rss}
# The fleet row's store: 20 hosts of ENTRIES journal entries each (350,000: about 2 GiB).
ENTRIES=${ENTRIES:-350000}
FLEET="$OUT/fleet-$ENTRIES"
want() { [[ ",$ROWS," == *",$1,"* ]]; }

# A make_log.py file, made on first use: log_input NAME MAKE_LOG_ARGS...
log_input() {
    local file="$OUT/$1"
    shift
    [ -f "$file" ] || "$PYTHON" bench/make_log.py "$file" "$@"
}

# The inputs of the rows asked for, made on first use (the big files take minutes each).
make_inputs() {
    if want text || want gz || want rss; then log_input kern-1g.log --mib 1024; fi
    if want rss; then
        log_input kern-100m.log --mib 100
        log_input kern-3g.log --mib 3072
    fi
    if want stdin; then log_input kern-650m.log --mib 650; fi
    if want quiet; then log_input quiet-1g.log --mib 1024 --style kernlog --no-xid; fi
    if want journalctl-text; then log_input journalctl-1g.log --mib 1024 --style journalctl; fi
    if want reports; then
        log_input reports-5000.log --mib 217 --reports 5000
        log_input reports-10000.log --mib 434 --reports 10000
    fi
    if want loop; then log_input loop-1000-journalctl.log --kills 1000 --style journalctl; fi
    # A rotated log, compressed as logrotate does (gzip's default level).
    if want gz && [ ! -f "$OUT/kern-1g.log.gz" ]; then gzip -c "$OUT/kern-1g.log" >"$OUT/kern-1g.log.gz"; fi
    if want journal && [ ! -f "$OUT/journal/bench.journal" ]; then
        "$PYTHON" bench/make_journal.py "$OUT/journal/bench.journal" --entries 1000000
    fi
    if want fleet && [ ! -d "$FLEET" ]; then
        mkdir -p "$FLEET.tmp"
        for n in $(seq -w 1 20); do
            "$PYTHON" bench/make_journal.py "$FLEET.tmp/remote-gpu-$n.journal" --entries "$ENTRIES" \
                --host "gpu-$n" --seed "$n"
        done
        mv "$FLEET.tmp" "$FLEET"
    fi
}

# One run: "<wall s> <cpu s> <peak kB>". Output goes to a real file (unless the command sends it
# elsewhere itself): GNU grep stops early when its output is /dev/null, which would flatter it.
once() {
    local stats="$OUT/.time" start end
    start=$(date +%s%N)  # GNU time's %e has two decimals: too coarse for `python -c pass`
    /usr/bin/time -o "$stats" -f "%U %S %M" sh -c "$1" >"$OUT/.stdout" 2>/dev/null || true
    end=$(date +%s%N)
    read -r user sys peak < <(tail -n 1 "$stats")
    awk -v a="$start" -v b="$end" -v u="$user" -v s="$sys" -v m="$peak" \
        'BEGIN{printf "%.4f %.3f %d\n", (b - a) / 1e9, u + s, m}'
}

median() { sort -g | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# row NAME TARGET OURS BASELINE_NAME BASELINE [PAIRS]
row() {
    local name=$1 target=$2 ours=$3 base_name=$4 base=$5 pairs=${6:-$PAIRS}
    local runs="$OUT/.pairs" i
    : >"$runs"
    if ((pairs >= 5)); then  # the fast rows: warm the page cache for both, untimed
        sh -c "$ours" >/dev/null 2>&1 || true
        sh -c "$base" >/dev/null 2>&1 || true
    fi
    for ((i = 0; i < pairs; i++)); do
        echo "$(once "$ours") $(once "$base")" >>"$runs"
    done
    local wall cpu ratio cpu_ratio rss bwall bcpu
    wall=$(awk '{print $1}' "$runs" | median)
    cpu=$(awk '{print $2}' "$runs" | median)
    bwall=$(awk '{print $4}' "$runs" | median)
    bcpu=$(awk '{print $5}' "$runs" | median)
    ratio=$(awk '{print ($4 > 0 ? $1 / $4 : 0)}' "$runs" | median)
    cpu_ratio=$(awk '{print ($5 > 0 ? $2 / $5 : 0)}' "$runs" | median)
    rss=$(awk 'BEGIN{m=0} {if ($3 > m) m = $3} END{print m}' "$runs")
    awk -v n="$name" -v t="$target" -v w="$wall" -v c="$cpu" -v bn="$base_name" -v bw="$bwall" \
        -v bc="$bcpu" -v r="$ratio" -v cr="$cpu_ratio" -v m="$rss" -v p="$pairs" 'BEGIN{
        printf "%-44s | %7.3f s %6.2f cpu | %-36s %7.3f s %6.2f cpu | wall %6.2fx cpu %6.2fx | %4d MB | %s (%d pairs)\n",
            n, w, c, bn, bw, bc, r, cr, m / 1024, t, p}'
}

make_inputs
# The installed package's bytecode, as pip leaves it: a user's first run compiles nothing.
"$PYTHON" -m compileall -q "$("$PYTHON" -c 'import oomtrace, os; print(os.path.dirname(oomtrace.__file__))')" >/dev/null
unset PYTHONDONTWRITEBYTECODE

echo "bench/run.sh $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -r), $("$PYTHON" --version)"
printf '%-44s | %-26s | %-57s | %-26s | %-7s | %s\n' case oomtrace baseline ratios "peak" target
GREP_NAME="grep -c -E (3 patterns)"
if want text; then
    row "1 GiB dmesg text with Xid chatter: list" "<=1.3x wall, <=2.2x cpu" \
        "$OOMTRACE list -k $OUT/kern-1g.log" "$GREP_NAME" "$GREP $OUT/kern-1g.log"
fi
if want quiet; then
    row "1 GiB quiet kern.log (no Xid): list" "<=1.2x wall, <=1.8x cpu" \
        "$OOMTRACE list -k $OUT/quiet-1g.log" "$GREP_NAME" "$GREP $OUT/quiet-1g.log"
fi
if want journalctl-text; then
    row "1 GiB journalctl -k text: list" "<=1.3x wall" \
        "$OOMTRACE list -k $OUT/journalctl-1g.log" "$GREP_NAME" "$GREP $OUT/journalctl-1g.log"
fi
if want gz; then
    row "the 1 GiB dmesg text gzipped: list" "(no target)" \
        "$OOMTRACE list -k $OUT/kern-1g.log.gz" "zcat | $GREP_NAME" "zcat $OUT/kern-1g.log.gz | $GREP"
fi
if want reports; then
    for n in 5000 10000; do
        log="$OUT/reports-$n.log"
        size=$(( $(stat -c %s "$log") >> 20 ))
        # Issue 25's targets: list <=20x grep, the stories <=60x; time x2.1 at most a doubling.
        for command in "list" "why --all llama-server" "report -f markdown"; do
            target="<=60x wall, <=200 MB, x2.1/doubling"
            [ "$command" = list ] && target="<=20x wall, <=200 MB, x2.1/doubling"
            row "$n reports in $size MiB: ${command%% llama-server}" "$target" \
                "$OOMTRACE $command -k $log" "$GREP_NAME" "$GREP $log" 2
        done
    done
fi
if want loop; then
    # A service killed every minute or so, as `journalctl -k > file` saves it: nearly every line is
    # a report's, read through the chunk scan as line by line.
    log="$OUT/loop-1000-journalctl.log"
    row "1,000 kills in $(( $(stat -c %s "$log") >> 20 )) MiB of journalctl -k text: list" "<=20x wall" \
        "$OOMTRACE list -k $log" "$GREP_NAME" "$GREP $log" 3
fi
if want startup; then
    row "why NAME on a 77-line log" "<=10x" \
        "$OOMTRACE why llama-server -k fixtures/seed000_llama_server_gb10/kernel.log" \
        "python -c pass" "$PYTHON -c pass" 9
fi
if want journal; then
    row "journal, 1M entries: why NAME" "<=1.0x" "$OOMTRACE why llama-server -D $OUT/journal" \
        "journalctl -k | grep -i oom-kill" "journalctl -D $OUT/journal -k | grep -i oom-kill" 3
    for reader in python journalctl; do
        row "journal, 1M entries: list ($reader reader)" "(no target)" \
            "$OOMTRACE list -D $OUT/journal --journal-reader $reader" \
            "journalctl -k -o json" "journalctl -D $OUT/journal -k -o json" 3
    done
fi
if want fleet; then
    # A journal-remote store of many hosts (issue 15), read one host's files at a time.
    for reader in python journalctl; do
        row "20-host store, $ENTRIES entries a host: list --by-host ($reader reader)" "<=1.0x" \
            "$OOMTRACE list --by-host -D $FLEET --journal-reader $reader -f json" \
            "journalctl -k -o json" "journalctl -D $FLEET -k -o json" "${FLEET_PAIRS:-3}"
    done
fi
if want stdin; then
    row "650 MiB on standard input: list -k -" "<=1.5x" "$OOMTRACE list -k - < $OUT/kern-650m.log" \
        "the same file by path" "$OOMTRACE list -k $OUT/kern-650m.log"
fi
if want rss; then
    for log in kern-100m kern-1g kern-3g; do
        row "$log.log: list (peak RSS flat)" "<=100 MB" \
            "$OOMTRACE list -k $OUT/$log.log" "$GREP_NAME" "$GREP $OUT/$log.log" 3
    done
fi

#!/usr/bin/env bash
# Speed and memory of oomtrace against the tools it must keep up with, on the same inputs.
# One line per case: oomtrace's wall time, the baseline's, the ratio, and oomtrace's peak RSS.
#
#   bash bench/run.sh            # makes bench/out/ inputs on first use (about 1.3 GiB of disk)
#
# Needs GNU time (/usr/bin/time, Debian package "time") and, for the journal case,
# systemd-journal-remote. Set OOMTRACE to the command to measure (default: .venv/bin/oomtrace).
source "$(dirname "$0")/common.sh"

[ -f "$OUT/kern-100m.log" ] || "$PYTHON" bench/make_log.py "$OUT/kern-100m.log" --mib 100
[ -f "$OUT/kern-1g.log" ] || "$PYTHON" bench/make_log.py "$OUT/kern-1g.log" --mib 1024
[ -f "$OUT/journalctl-1g.log" ] || "$PYTHON" bench/make_log.py "$OUT/journalctl-1g.log" --mib 1024 --style journalctl
# A rotated log, compressed as logrotate does (gzip's default level).
[ -f "$OUT/kern-1g.log.gz" ] || gzip -c "$OUT/kern-1g.log" > "$OUT/kern-1g.log.gz"
if [ ! -f "$OUT/journal/bench.journal" ]; then
    "$PYTHON" bench/make_journal.py "$OUT/journal/bench.journal" --entries 1000000
fi

# best of three: "<seconds> <peak kB>". Output goes to a real file (unless the command sends it
# elsewhere itself, as the cat baseline does): GNU grep stops early when it
# sees its output is /dev/null, which would flatter the baseline.
measure() {
    local best="" rss="" stats="$OUT/.time" sink="$OUT/.stdout"
    for _ in 1 2 3; do
        local start end seconds
        start=$(date +%s%N)  # GNU time's %e has only two decimals: too coarse for cat
        /usr/bin/time -o "$stats" -f "%M" sh -c "$1" >"$sink" 2>/dev/null
        end=$(date +%s%N)
        seconds=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.3f", (b - a) / 1e9}')
        if [ -z "$best" ] || awk "BEGIN{exit !($seconds < $best)}"; then
            best=$seconds
            rss=$(tail -n 1 "$stats")
        fi
    done
    echo "$best $rss"
}

report() {  # name, oomtrace command, baseline name, baseline command
    read -r ours rss < <(measure "$2")
    read -r base _ < <(measure "$4")
    awk -v n="$1" -v o="$ours" -v b="$base" -v bn="$3" -v r="$rss" \
        'BEGIN{printf "%-34s oomtrace %6.3f s  %-28s %6.3f s  ratio %6.2fx  peak RSS %4d MB\n", n, o, bn, b, (b>0?o/b:0), r/1024}'
}

for log in "$OUT/kern-100m.log" "$OUT/kern-1g.log" "$OUT/journalctl-1g.log"; do
    name=$(basename "$log" .log)
    report "$name: list vs grep" "$OOMTRACE list -k $log" "grep -c -E (3 patterns)" "$GREP $log"
    # The read itself, as the target names it: cat to /dev/null (page cache to nowhere).
    report "$name: list vs cat" "$OOMTRACE list -k $log" "cat file > /dev/null" "cat $log > /dev/null"
done
report "kern-1g.log.gz: list vs zcat|grep" "$OOMTRACE list -k $OUT/kern-1g.log.gz" "zcat | grep -c -E (3 patterns)" \
    "zcat $OUT/kern-1g.log.gz | $GREP"
for reader in python journalctl; do
    report "journal 1M entries ($reader)" "$OOMTRACE list -D $OUT/journal --journal-reader $reader" \
        "journalctl -k -o json" "journalctl -D $OUT/journal -k -o json"
done

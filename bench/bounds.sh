#!/usr/bin/env bash
# Memory bounds: peak RSS and time of oomtrace on inputs built to make memory grow (issue 12),
# beside `grep -c` over the same file. Each case runs once (the 200,000-kill log takes minutes).
#
#   bash bench/bounds.sh            # makes bench/out/ inputs on first use (about 2 GiB of disk)
#
# Flat means: peak RSS does not grow with the number of kills or the length of a line.
source "$(dirname "$0")/common.sh"

for kills in 1000 20000 200000; do
    [ -f "$OUT/kills-$kills.log" ] || "$PYTHON" bench/make_log.py "$OUT/kills-$kills.log" --kills "$kills"
done
# One 1 GiB line between the lines of a real report.
if [ ! -f "$OUT/line-1g.log" ]; then
    report=fixtures/real_memcg_v1_6.18/kernel.log
    { head -n 4 "$report"; printf '[   10.000000] '; head -c 1073741824 /dev/zero | tr '\0' A; echo; tail -n +5 "$report"; } \
        > "$OUT/line-1g.log"
fi

once() {  # "<seconds> <peak MB>" of one run, its output to a file (not /dev/null: see run.sh)
    local start end
    start=$(date +%s%N)
    /usr/bin/time -o "$OUT/.time" -f "%M" sh -c "$1" >"$OUT/.stdout" 2>/dev/null || true
    end=$(date +%s%N)
    awk -v a="$start" -v b="$end" -v k="$(tail -n 1 "$OUT/.time")" 'BEGIN{printf "%.2f %d\n", (b - a) / 1e9, k / 1024}'
}

row() {  # name, oomtrace command, baseline command
    read -r ours rss < <(once "$2")
    read -r base _ < <(once "$3")
    awk -v n="$1" -v o="$ours" -v b="$base" -v r="$rss" \
        'BEGIN{printf "%-40s oomtrace %8.2f s  grep -c %6.2f s  ratio %6.1fx  peak RSS %4d MB\n", n, o, b, (b>0?o/b:0), r}'
}

for kills in 1000 20000 200000; do
    log="$OUT/kills-$kills.log"
    row "list, $kills kills" "$OOMTRACE list -k $log" "$GREP $log"
    row "report --format json, $kills kills" "$OOMTRACE report -k $log --format json" "$GREP $log"
done
row "list, one 1 GiB line" "$OOMTRACE list -k $OUT/line-1g.log" "$GREP $OUT/line-1g.log"
row "list < stdin, one 1 GiB line" "$OOMTRACE list < $OUT/line-1g.log" "$GREP $OUT/line-1g.log"

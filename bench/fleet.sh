#!/usr/bin/env bash
# A 20-host systemd-journal-remote store (one file per host, about 2 GiB in all, ten kills a
# host): `oomtrace list --by-host` beside `journalctl -D DIR -k -o json > /dev/null` on the same
# store, one run each (issue 15).
#
#   bash bench/fleet.sh                 # makes bench/out/fleet/ on first use (minutes)
#   ENTRIES=100000 bash bench/fleet.sh  # a smaller store
source "$(dirname "$0")/common.sh"
ENTRIES=${ENTRIES:-350000}
STORE="$OUT/fleet-$ENTRIES"
if [ ! -d "$STORE" ]; then
    mkdir -p "$STORE.tmp"
    for n in $(seq -w 1 20); do
        "$PYTHON" bench/make_journal.py "$STORE.tmp/remote-gpu-$n.journal" --entries "$ENTRIES" --host "gpu-$n" --seed "$n"
    done
    mv "$STORE.tmp" "$STORE"
fi
size=$(du -sh "$STORE" | cut -f1)

once() {  # "<seconds> <CPU-s> <peak MB>"
    local start end
    start=$(date +%s%N)
    /usr/bin/time -o "$OUT/.time" -f "%U %S %M" sh -c "$1" >"$OUT/.stdout" 2>/dev/null || true
    end=$(date +%s%N)
    awk -v a="$start" -v b="$end" '{printf "%.2f %.2f %d\n", (b - a) / 1e9, $1 + $2, $3 / 1024}' "$OUT/.time"
}

echo "fleet store: 20 hosts, $ENTRIES entries each, $size; $(date -u +%Y-%m-%d), $(nproc) cores"
for reader in python journalctl; do
    read -r ours cpu rss < <(once "$OOMTRACE list --by-host -D $STORE --journal-reader $reader -f json")
    hosts=$("$PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["hosts"]))' "$OUT/.stdout" 2>/dev/null || echo 0)
    read -r base base_cpu base_rss < <(once "journalctl -D $STORE -k -o json")
    awk -v r="$reader" -v o="$ours" -v c="$cpu" -v m="$rss" -v b="$base" -v bc="$base_cpu" -v bm="$base_rss" -v h="$hosts" \
        'BEGIN{printf "list --by-host (%s reader): %7.1f s, %6.1f CPU-s, peak %4d MB | journalctl -k -o json %6.1f s, %d MB | ratio %4.2fx wall, %d host rows\n", r, o, c, m, b, bm, (b > 0 ? o / b : 0), h}'
done

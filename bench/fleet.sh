#!/usr/bin/env bash
# The fleet row of bench/run.sh alone: a 20-host systemd-journal-remote store (one file per host,
# ten kills a host), `oomtrace list --by-host` with each journal reader beside
# `journalctl -D DIR -k -o json` on the same store (issue 15).
#
#   bash bench/fleet.sh                 # makes bench/out/fleet-350000/ on first use (minutes)
#   ENTRIES=100000 bash bench/fleet.sh  # a smaller store
#   FLEET_PAIRS=1 bash bench/fleet.sh   # one pair a reader (default 3)
ROWS=fleet exec bash "$(dirname "$0")/run.sh"

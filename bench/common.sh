# What every bench script starts with (sourced): the repository as working directory, the
# commands to measure, the output folder, GNU time, and the grep that is the baseline.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OOMTRACE=${OOMTRACE:-.venv/bin/oomtrace}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=bench/out
mkdir -p "$OUT"
[ -x /usr/bin/time ] || { echo "bench: needs GNU time: apt-get install time" >&2; exit 2; }
# shellcheck disable=SC2034 # used by the scripts that source this
GREP="grep -c -E 'invoked oom-killer|Killed process|NVRM'"

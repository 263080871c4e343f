#!/usr/bin/env bash
# Runs one phase of `make test` and says how long it took (wall clock, whole seconds):
#   tools/timed.sh NAME COMMAND [ARG ...]
# With TEST_TIMES set, the line is also appended to that file, which `make test` prints at the end.
set -uo pipefail
name=$1
shift
start=$(date +%s)
"$@"
status=$?
line="$name: $(($(date +%s) - start)) s"
if [ "$status" -ne 0 ]; then line="$line (failed, exit $status)"; fi
echo "[make test] $line"
if [ -n "${TEST_TIMES:-}" ]; then echo "$line" >> "$TEST_TIMES"; fi
exit "$status"

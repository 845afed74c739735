#!/bin/sh
# Runs the ext4 image fuzzer for a bounded time. The inputs that once
# crashed it (REGRESSIONS) run first, then the seed images and what earlier
# runs added to the work corpus (kept in the build tree, so coverage found
# by one run seeds the next). Crash inputs land in WORK_DIR/artifacts.
# usage: run_ext4_fuzz.sh FUZZER SEED_DIR REGRESSIONS_DIR WORK_DIR SECONDS
set -eu
fuzzer=$1 seeds=$2 regressions=$3 work=$4 secs=$5

if [ ! -x "$fuzzer" ]; then
  echo "SKIP: $fuzzer was not built (needs clang++ with libFuzzer)"
  exit 77
fi
if [ -z "$(ls "$seeds"/*.img 2>/dev/null)" ]; then
  echo "no seed images in $seeds (build the flatux_ext4_fuzz target)"
  exit 1
fi
mkdir -p "$work/corpus" "$work/artifacts"
if [ -n "$(ls -A "$regressions" 2>/dev/null)" ]; then
  "$fuzzer" -rss_limit_mb=2048 -timeout=10 "$regressions"/*.img
fi
cp "$seeds"/*.img "$work/corpus/"
exec "$fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=2097152 -len_control=0 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus"

#!/bin/sh
# Runs the ELF fuzzer for a bounded time over a writable copy of the seed
# corpus. The copy persists in the build tree so coverage found by one run
# seeds the next; crash inputs land in WORK_DIR/artifacts.
# usage: run_elf_fuzz.sh FUZZER SEED_DIR WORK_DIR SECONDS
set -eu
fuzzer=$1 seeds=$2 work=$3 secs=$4

if [ ! -x "$fuzzer" ]; then
  echo "SKIP: $fuzzer was not built (needs clang++ with libFuzzer)"
  exit 77
fi
if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
  echo "no seed corpus in $seeds (build the flatux_elf_corpus target)"
  exit 1
fi
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
exec "$fuzzer" -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus"

#!/bin/sh
# Fails unless every argument is a self-contained static PIE: ELF type DYN,
# no PT_INTERP (nothing for the loader to fetch from the host) and no
# DT_NEEDED.
set -u
status=0
for f in "$@"; do
  bad=0
  hdr=$(readelf -h "$f") || { echo "FAIL $f: not an ELF file"; status=1; continue; }
  if ! printf '%s\n' "$hdr" | grep -q 'Type:[[:space:]]*DYN'; then
    echo "FAIL $f: ELF type is not DYN"; bad=1
  fi
  if readelf -lW "$f" | grep -q 'INTERP'; then
    echo "FAIL $f: has a PT_INTERP"; bad=1
  fi
  if readelf -dW "$f" | grep -q '(NEEDED)'; then
    echo "FAIL $f: has DT_NEEDED entries"; bad=1
  fi
  if [ $bad -eq 0 ]; then echo "ok   $f: static PIE"; else status=1; fi
done
exit $status

#!/bin/sh
# Runs COMMAND... with a fresh scratch folder appended to its arguments,
# and removes the folder afterwards (guests that make sockets and files).
d=$(mktemp -d "${TMPDIR:-/tmp}/flatux-guest.XXXXXX") || exit 1
"$@" "$d"
rc=$?
rm -rf "$d"
exit $rc

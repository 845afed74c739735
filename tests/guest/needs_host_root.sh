#!/bin/sh
# Runs COMMAND... only when the host user is root; otherwise the test is
# skipped (exit 77). For flatux runs whose checks need the host to let
# flatux act as any user (hostfs can give a file to a guest user only when
# the host lets it chown).
if [ "$(id -u)" != 0 ]; then
  echo "skipped: needs the host's root"
  exit 77
fi
exec "$@"

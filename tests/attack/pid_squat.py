#!/usr/bin/env python3
"""A host process that binds every abstract name flatux reserves guest pids
with ("flatux-pids-<block>", anyone on the host may) must not stall a run:
the run still forks, and its pids are handed out unreserved once a few
blocks were found taken.

    pid_squat.py FLATUX

Before the bound, each fork tried every block (512 binds at pid_max 32768)
and, with all of them taken, failed: the shell said "Cannot fork" (with
some left free, forks stalled for seconds; the timeout catches that)."""
import socket
import subprocess
import sys
import time

flatux = sys.argv[1]
squatted = []
for block in range(4194304 // 64):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind(f"\0flatux-pids-{block}")
    except OSError:
        s.close()
        if block >= 32768 // 64:
            break  # past the guest's pid_max: enough
        continue
    squatted.append(s)
    if len(squatted) >= 1024:
        break
print(f"squatting {len(squatted)} pid blocks")
script = 'for i in $(seq 100); do /bin/true; done; echo $$; /bin/sh -c "echo \\$\\$"'
start = time.monotonic()
try:
    r = subprocess.run([flatux, "run", "--", "/bin/sh", "-c", script], capture_output=True, text=True, timeout=100)
except subprocess.TimeoutExpired:
    sys.exit("FAIL: 100 forks did not finish in 100 s with every pid block squatted")
took = time.monotonic() - start
print(r.stdout, r.stderr, f"status {r.returncode}, {took:.2f} s", sep="\n")
pids = r.stdout.split()
if r.returncode != 0 or len(pids) != 2 or pids[0] != "1" or pids[1] == "1":
    sys.exit("FAIL: the run did not print its init's pid 1 and another pid")
print("ok")

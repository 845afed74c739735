#!/usr/bin/env python3
"""Concurrent `flatux run` instances over the host root hand out different
guest pids (a program naming files after its pid must not meet another
instance's), and an instance's pids stay apart while it runs -- except pid 1,
which every instance's first process is, as init is in each pid namespace
(guests expect a pid 1: `taskset -p 1` in busybox's suite failed when another
instance held the first block of numbers)."""
import subprocess
import sys

flatux = sys.argv[1]
script = 'echo $$; /bin/sh -c "echo \\$\\$"; read x'
procs = [subprocess.Popen([flatux, "run", "--", "/bin/sh", "-c", script], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) for _ in range(4)]
# Every instance prints its two pids, then waits: all run at once.
pids = []
for p in procs:
    mine = [int(p.stdout.readline()), int(p.stdout.readline())]
    pids.append(mine)
for p in procs:
    p.communicate("\n")
    if p.returncode != 0:
        sys.exit(f"flatux exited with {p.returncode}")
print("pids:", pids)
firsts = [pair[0] for pair in pids]
if firsts != [1] * len(pids):
    sys.exit(f"FAIL: an instance's first process is not pid 1: {pids}")
others = [pair[1] for pair in pids]
if len(set(others)) != len(others) or 1 in others:
    sys.exit(f"FAIL: instances running at once share pids: {pids}")
print("ok: every first process is 1, all others distinct")

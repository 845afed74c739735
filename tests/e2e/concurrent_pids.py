#!/usr/bin/env python3
"""Concurrent `flatux run` instances over the host root hand out different
guest pids (a program naming files after its pid must not meet another
instance's), and an instance's pids stay apart while it runs."""
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
flat = [x for pair in pids for x in pair]
print("pids:", pids)
if len(set(flat)) != len(flat):
    sys.exit(f"FAIL: instances running at once share pids: {pids}")
print("ok: all distinct")

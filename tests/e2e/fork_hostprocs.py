#!/usr/bin/env python3
"""Forked guests live in host processes of their own; seen from the host:

  kill_launcher  SIGKILL of the launcher leaves no host process behind
  many_forks     1,000 sequential forks leave the host's process count,
                 flatux's descriptors and its memory flat
  rss            100 forked children that each write 1 MiB make flatux's
                 total memory (PSS over its host processes) grow by about
                 100 MiB, not by 100 copies of the parent

usage: fork_hostprocs.py --flatux PATH CASE
"""
import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_procs import kernel_process  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36


def descendants(root):
    """Host pids below `root` (any depth), from /proc."""
    parent = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            parent[int(name)] = int(fields[1])
    out = set()
    frontier = {root}
    while frontier:
        nxt = {p for p, pp in parent.items() if pp in frontier and p not in out}
        out |= nxt
        frontier = nxt
    return out


def smaps_kib(pids, fields):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.split(":")[0] in fields:
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def pss_kib(pids):
    return smaps_kib(pids, ("Pss",))


# Memory flatux wrote: its clean file pages (the binary, shared with any
# other flatux running at the time) would move its PSS with theirs.
def dirty_kib(pids):
    return smaps_kib(pids, ("Private_Dirty", "Shared_Dirty"))


def wait_for_line(proc, want, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.strip() == want:
            return True
    return False


def fail(msg):
    print("FAIL:", msg)
    return 1


def kernel_of(proc):
    """The kernel's host process below the launcher `proc` (run_procs.py)."""
    k = kernel_process(proc.pid)
    if k is None:
        raise SystemExit(fail(f"no kernel process below the launcher {proc.pid}"))
    return k


def case_kill_launcher(flatux):
    # Orphaned host processes come to us, so we can see every one end.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    proc = subprocess.Popen([flatux, "run", "--", "/bin/sh", "-c",
                             "sleep 100 & sleep 100 & (sleep 100; echo no) & echo up; wait"],
                            stdout=subprocess.PIPE, text=True)
    if not wait_for_line(proc, "up"):
        return fail("the guest did not start")
    time.sleep(0.5)
    kernel = kernel_of(proc)
    hosts = descendants(kernel)
    run = descendants(proc.pid)  # with the run's init and the kernel's process
    print(f"launcher {proc.pid}, kernel {kernel}, other host processes: {sorted(hosts)}")
    if len(hosts) < 3:
        return fail("expected the forked guests in host processes of their own")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    left = run
    while time.time() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        left = {p for p in run if os.path.exists(f"/proc/{p}")}
        if not left:
            break
        time.sleep(0.05)
    if left:
        return fail(f"host processes survived SIGKILL of the launcher: {sorted(left)}")
    print("every host process ended")
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def case_many_forks(flatux, rounds=900):
    script = ("i=0; while [ $i -lt $1 ]; do (exit 0); i=$((i+1)); done; echo done; read x; "
              "i=0; while [ $i -lt $2 ]; do (exit 0); i=$((i+1)); done; echo done; read x")
    proc = subprocess.Popen([flatux, "run", "--", "/bin/sh", "-c", script, "sh", "100", str(rounds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    samples = []
    for _ in range(2):
        if not wait_for_line(proc, "done", timeout=240):
            return fail("the loop did not finish")
        time.sleep(0.3)
        kernel = kernel_of(proc)
        # Memory: every host process of the run, the launcher's too.
        samples.append((len(descendants(kernel)), fd_count(kernel), dirty_kib({proc.pid} | descendants(proc.pid))))
        proc.stdin.write("\n")
        proc.stdin.flush()
    proc.wait(timeout=30)
    print("after 100 forks: %d other host processes, %d fds, %d KiB; after 1000: %d, %d, %d KiB"
          % (samples[0] + samples[1]))
    (h0, f0, m0), (h1, f1, m1) = samples
    if h1 != 0 or h0 != 0:
        return fail("forked host processes are left over")
    # One host process's record (its pidfd) may wait for the next fork to
    # be reaped at either sample; a leak per fork would show hundreds.
    # Memory: when each fork leaked its thread's FPU state, 900 grew 0.9 MiB.
    if f1 > f0 + 1:
        return fail(f"descriptors grew from {f0} to {f1}")
    if m1 - m0 > 512:
        return fail(f"memory grew by {m1 - m0} KiB over 900 forks")
    return 0


def case_rss(flatux):
    code = r"""
import os, sys
pids = []
r, w = os.pipe()
for i in range(100):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        b = bytearray(1 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        os.write(1, b"")
        os.read(r, 1)
        os._exit(0)
    pids.append(pid)
print("ready", flush=True)
sys.stdin.readline()
os.close(w)
for p in pids:
    os.waitpid(p, 0)
"""
    proc = subprocess.Popen([flatux, "run", "--", "/usr/bin/python3", "-c",
                             "import sys; print('base', flush=True); sys.stdin.readline(); exec(sys.stdin.readline().encode().decode('unicode_escape'))"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if not wait_for_line(proc, "base"):
        return fail("python did not start")
    time.sleep(0.3)
    base = pss_kib({proc.pid} | descendants(proc.pid))
    proc.stdin.write("\n" + code.encode("unicode_escape").decode() + "\n")
    proc.stdin.flush()
    if not wait_for_line(proc, "ready", timeout=120):
        return fail("the children did not start")
    time.sleep(1.0)
    hosts = descendants(kernel_of(proc))
    after = pss_kib({proc.pid} | descendants(proc.pid))
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(timeout=60)
    grew = (after - base) / 1024
    print(f"{len(hosts)} host processes; PSS {base // 1024} MiB -> {after // 1024} MiB (+{grew:.0f} MiB)")
    if len(hosts) < 100:
        return fail("expected a host process per child")
    if not 90 <= grew <= 250:
        return fail(f"PSS grew by {grew:.0f} MiB for 100 MiB written")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("case", choices=["kill_launcher", "many_forks", "rss"])
    a = ap.parse_args()
    return {"kill_launcher": case_kill_launcher, "many_forks": case_many_forks,
            "rss": case_rss}[a.case](a.flatux)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs a soak workload under flatux and checks that the kernel gives back
what the work took.

The guest (soak.c, or a shell script speaking the same protocol) prints
  checkpoint NAME DONE slab_kb=N kstack_kb=N
and waits for a byte on stdin. At each checkpoint this driver looks at the
kernel's host process (below the launcher and the run's init, see
tests/run_procs.py) from the host -- resident memory (VmRSS, and its peak
VmHWM), open descriptors, mappings, threads -- and then lets it go on.
Between the "warm" checkpoint (after the first 1% of the work, when caches
and first-use allocations exist) and the "end" one, each of them must stay
within a small constant:

  kernel heap   (/proc/meminfo Slab, the heap's bytes in use)  --heap-kb
  kernel stacks (KernelStack)                                   --kstack-kb
  host RSS      (VmRSS)                      --rss-kb plus --rss-pct percent
  host fds      (/proc/PID/fd)                                  --fds
  host mappings (/proc/PID/maps lines)                          --maps

--peak-within PCT additionally compares the peak RSS at the end with the
peak at the first mark (soak.c's MARK arguments): the leak check of
"10^5 vfork+execve vs 10^4".

An argument @N=<count> is replaced by count times FLATUX_SOAK_SCALE
(default 1): `FLATUX_SOAK_SCALE=10 ctest -L soak` is the long local mode.

usage: soak.py [limits] [--script FILE] --label NAME -- FLATUX-COMMAND...
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_procs import kernel_process  # noqa: E402


def host_view(pid):
    v = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads", "RssAnon", "RssFile", "RssShmem"):
                v[key] = int(rest.split()[0])
    v["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/maps") as f:
        v["maps"] = sum(1 for _ in f)
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--heap-kb", type=int, default=64)
    ap.add_argument("--kstack-kb", type=int, default=512)
    ap.add_argument("--rss-kb", type=int, default=2048)
    ap.add_argument("--rss-pct", type=float, default=5.0)
    ap.add_argument("--fds", type=int, default=2)
    ap.add_argument("--maps", type=int, default=8)
    ap.add_argument("--peak-within", type=float, default=None)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--script", help="a file whose text replaces the argument @SCRIPT@")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    scale = float(os.environ.get("FLATUX_SOAK_SCALE", "1"))
    cmd = [str(int(int(w[3:]) * scale)) if w.startswith("@N=") else w for w in cmd]
    if a.script:
        with open(a.script) as f:
            text = f.read()
        cmd = [text if w == "@SCRIPT@" else w for w in cmd]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    points = []
    kernel = None
    for line in p.stdout:
        if not line.startswith("checkpoint "):
            sys.stdout.write(line)
            continue
        words = line.split()
        fields = dict(w.split("=", 1) for w in words[3:] if "=" in w)
        kernel = kernel or kernel_process(p.pid)
        if kernel is None:
            p.kill()
            print(f"{a.label}: FAIL: no kernel process below the launcher {p.pid}", file=sys.stderr)
            return 1
        v = host_view(kernel)
        v.update(name=words[1], done=int(words[2]), slab=int(fields.get("slab_kb", -1)),
                 kstack=int(fields.get("kstack_kb", -1)), t=time.monotonic() - start)
        points.append(v)
        print(f"{a.label}: {v['name']:>6} after {v['done']:>7}: heap {v['slab']} kB, "
              f"kernel stacks {v['kstack']} kB, RSS {v['VmRSS']} kB (peak {v['VmHWM']}; "
              f"anon {v['RssAnon']}, file {v['RssFile']}, shmem {v['RssShmem']}), "
              f"fds {v['fds']}, mappings {v['maps']}, threads {v['Threads']}, "
              f"{v['t']:.1f} s", flush=True)
        p.stdin.write("\n")
        p.stdin.flush()
        if time.monotonic() - start > a.timeout:
            p.kill()
            print(f"{a.label}: FAIL: over {a.timeout} s", file=sys.stderr)
            return 1
    status = p.wait()
    if status == 77:
        print(f"{a.label}: skipped")
        return 77
    if status != 0:
        print(f"{a.label}: FAIL: exit status {status}", file=sys.stderr)
        return 1
    by_name = {v["name"]: v for v in points}
    if "warm" not in by_name or "end" not in by_name:
        print(f"{a.label}: FAIL: no warm/end checkpoints", file=sys.stderr)
        return 1
    w, e = by_name["warm"], by_name["end"]
    failures = []

    def within(what, before, after, slack):
        grew = after - before
        ok = grew <= slack
        print(f"{a.label}: {what}: {before} -> {after} ({grew:+}, limit +{slack:g})"
              f"{'' if ok else '  <-- FAIL'}")
        if not ok:
            failures.append(what)

    if e["slab"] >= 0:
        within("kernel heap kB", w["slab"], e["slab"], a.heap_kb)
        within("kernel stacks kB", w["kstack"], e["kstack"], a.kstack_kb)
    within("host RSS kB", w["VmRSS"], e["VmRSS"], a.rss_kb + w["VmRSS"] * a.rss_pct / 100)
    within("host fds", w["fds"], e["fds"], a.fds)
    within("host mappings", w["maps"], e["maps"], a.maps)
    if a.peak_within is not None:
        m = by_name.get("mark0")
        if not m:
            failures.append("no mark0 checkpoint")
        else:
            ratio = e["VmHWM"] / m["VmHWM"]
            ok = ratio <= 1 + a.peak_within / 100
            print(f"{a.label}: peak RSS after {m['done']}: {m['VmHWM']} kB, after {e['done']}: "
                  f"{e['VmHWM']} kB (x{ratio:.3f}, limit x{1 + a.peak_within / 100:.2f})"
                  f"{'' if ok else '  <-- FAIL'}")
            if not ok:
                failures.append("peak RSS")
    if failures:
        print(f"{a.label}: FAIL: {', '.join(failures)}", file=sys.stderr)
        return 1
    print(f"{a.label}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The syscall fuzzer's host side: runs syscall_fuzz.c as the first process
of `flatux run` over a throw-away root folder (read-only, with tmpfs
scratch space mounted by the guest, no IPv4/IPv6) and fails on what the
host sees: flatux dying of a signal, a kernel oops or panic, any exit
status but 0, no end within the time given (a hang), or a process that
SIGKILL could not end (the guest supervisor's exit status 3).

  syscall_fuzz.py --flatux F --fuzzer BIN --seconds 60 --seed 1
      a fixed-seed run (CI)
  syscall_fuzz.py --flatux F --fuzzer BIN --replay FILE
      the round seeds listed in FILE (regressions: one per line, # comments)
  syscall_fuzz.py --flatux F --fuzzer BIN --forever [--seconds 600]
      open-ended: runs of --seconds each with fresh seeds until one fails;
      prints the total number of calls made

On a failure the last round seeds are printed: add the failing one to
tests/fuzz/syscall-regressions.txt.
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_procs import kernel_process  # noqa: E402


def make_root(fuzzer):
    root = tempfile.mkdtemp(prefix="flatux-fuzz-")
    for d in ("proc", "dev", "scratch", "tmp"):
        os.mkdir(os.path.join(root, d))
    shutil.copy(fuzzer, os.path.join(root, "fuzz"))
    os.chmod(os.path.join(root, "fuzz"), 0o755)
    return root


def run_once(a, root, seconds, seed, replay_seeds=()):
    cmd = [a.flatux, "run", "--root", root, "--ro", "--net=none"]
    if a.mem:
        cmd.append(f"--mem={a.mem}")
    cmd += ["--", "/fuzz", "supervise", str(seconds), str(seed), str(a.threads)]
    cmd += [str(s) for s in replay_seeds]
    limit = (seconds if not replay_seeds else 3 * len(replay_seeds)) + 120
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, errors="replace",
                         start_new_session=True)
    # Streamed, so that when the guest reports a process that outlived
    # SIGKILL (and waits), the host threads can be looked at before it ends.
    lines, host_view = [], []

    def read_stdout():
        for line in p.stdout:
            lines.append(line)
            if line.startswith("FAIL: a process outlived SIGKILL"):
                host_view.append(describe_threads(kernel_process(p.pid, timeout=0) or p.pid))

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    err_chunks = []
    err_reader = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()), daemon=True)
    err_reader.start()
    try:
        p.wait(timeout=limit)
        hung = False
    except subprocess.TimeoutExpired:
        host_view.append(describe_threads(kernel_process(p.pid, timeout=0) or p.pid))
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        hung = True
    reader.join(10)
    err_reader.join(10)
    out = "".join(lines)
    err = "".join(err_chunks) + "\n" + "\n".join(host_view)
    elapsed = time.monotonic() - start
    status = p.returncode
    rounds = re.findall(r"^round \d+ seed (\d+)$", out, re.M)
    done = re.search(r"^done: (\d+) rounds, (\d+) calls", out, re.M)
    calls = int(done.group(2)) if done else 0
    problem = None
    if hung:
        problem = f"no end after {limit} s (a hang)"
    elif status < 0:
        problem = f"flatux died of signal {-status} ({signal.Signals(-status).name})"
    elif "kernel oops" in err or "kernel panic" in err:
        problem = "kernel oops/panic"
    elif status == 3:
        problem = "a process outlived SIGKILL"
    elif status != 0 or not done:
        problem = f"exit status {status}"
    elif calls == 0 and seconds > 0:
        problem = "no calls made (every worker ended before its first call)"
    return problem, rounds, calls, elapsed, out, err


def describe_threads(pid):
    lines = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task")) if os.path.isdir(f"/proc/{pid}/task") else []:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().split()[2]
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read()
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                sc = f.read().split()[:2]
            lines.append(f"  host thread {tid}: {state} wchan={wchan} syscall={' '.join(sc)}")
        except OSError:
            pass
    text = "host threads at the hang:\n" + "\n".join(lines)
    if shutil.which("gdb"):  # where each thread is, when gdb is there to say
        try:
            bt = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 20"],
                                capture_output=True, text=True, timeout=60).stdout
            text += "\n" + "\n".join(l for l in bt.splitlines() if l.startswith(("#", "Thread")))
        except (OSError, subprocess.TimeoutExpired):
            pass
    return text


def report(problem, rounds, out, err):
    print(f"FAIL: {problem}")
    print("last rounds (the failing one is usually the last):")
    for s in rounds[-3:]:
        print(f"  {s}")
    tail = "\n".join(out.splitlines()[-40:])
    print("guest output (end):\n" + tail)
    print("flatux stderr (end):\n" + "\n".join(err.splitlines()[-40:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--fuzzer", required=True)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--mem", default="512m")
    ap.add_argument("--replay", help="file of round seeds to run")
    ap.add_argument("--forever", action="store_true")
    a = ap.parse_args()
    root = make_root(a.fuzzer)
    try:
        if a.replay:
            with open(a.replay) as f:
                seeds = [w.split()[0] for w in f if w.strip() and not w.startswith("#")]
            if not seeds:
                print("no regression seeds")
                return 0
            problem, rounds, calls, elapsed, out, err = run_once(a, root, 0, 0, seeds)
            print(f"replayed {len(seeds)} round seeds: {calls} calls in {elapsed:.0f} s")
            if problem:
                report(problem, rounds, out, err)
                return 1
            return 0
        total_calls, total_time, runs = 0, 0.0, 0
        while True:
            seed = a.seed if a.seed is not None and runs == 0 else random.randrange(1, 1 << 31)
            problem, rounds, calls, elapsed, out, err = run_once(a, root, a.seconds, seed)
            runs += 1
            total_calls += calls
            total_time += elapsed
            print(f"run {runs}: seed {seed}, {len(rounds)} rounds, {calls} calls, {elapsed:.0f} s"
                  f"{'' if not problem else ' -- ' + problem}", flush=True)
            if problem:
                report(problem, rounds, out, err)
                print(f"total: {total_calls} calls in {total_time:.0f} s over {runs} runs")
                return 1
            if not a.forever:
                break
        print(f"total: {total_calls} calls in {total_time:.0f} s over {runs} runs, no failure")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

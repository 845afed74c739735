#!/usr/bin/env python3
"""--strace says the same whichever way guest syscalls enter the kernel.

    strace_modes.py --flatux FLATUX -- PROG [ARG...]

Runs PROG under `flatux run --strace=FILE` twice, with --syscall-entry=trap
(every call a SIGSYS) and --syscall-entry=rewrite (sites rewritten at their
first call, later calls through the fast entry), and compares the two
traces, each task's lines in order (tasks run concurrently, so how their
lines interleave may differ). What may differ from run to run anyway is
left out: addresses (the host places mappings anew each run; hex numbers of
0x10000 and up become ADDR), getrandom's bytes, and where an asynchronous
signal's handler returned (an rt_sigreturn line, and a call it interrupted
and restarted: SIGCHLD may come before or after the parent's wait4). As a
run's timing can still change what it does, up to three runs of each are
tried; one pair must match. stdout and the exit status must match too.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC", "HOME": "/",
       "TERM": "dumb", "PYTHONDONTWRITEBYTECODE": "1"}
ADDRESS = re.compile(r"0x[0-9a-f]{5,}")
RANDOM = re.compile(r'^(.*getrandom\()"[^"]*"')
TASK = re.compile(r"^\[pid (\d+)\] ")


ASYNC = re.compile(r"rt_sigreturn\(|= \? ERESTART|ERESTART(SYS|NOINTR|NOHAND|_RESTARTBLOCK)")


def per_task(lines):
    tasks = {}
    for line in lines:
        if ASYNC.search(line):
            continue
        m = TASK.match(line)
        tasks.setdefault(m.group(1) if m else "first", []).append(line)
    return [line for tid in sorted(tasks) for line in tasks[tid]]


def traced_run(flatux, mode, argv, workdir):
    trace = os.path.join(workdir, f"strace.{mode}")
    proc = subprocess.run([flatux, "run", f"--syscall-entry={mode}", f"--strace={trace}", "--"] + argv,
                          env=ENV, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    with open(trace, errors="replace") as f:
        lines = [RANDOM.sub(r"\1BYTES", ADDRESS.sub("ADDR", line.rstrip("\n"))) for line in f]
    return proc.returncode, proc.stdout, per_task(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flatux", required=True)
    ap.add_argument("argv", nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="strace-modes.") as work:
        for attempt in range(3):
            runs = {m: traced_run(args.flatux, m, args.argv, work) for m in ("trap", "rewrite")}
            if runs["trap"] == runs["rewrite"]:
                break
            print(f"attempt {attempt + 1}: the runs differ; once more")
    (t_status, t_out, t_lines), (r_status, r_out, r_lines) = runs["trap"], runs["rewrite"]
    ok = True
    if t_status != r_status or t_out != r_out:
        print(f"FAIL: exit status {t_status} vs {r_status}, stdout equal: {t_out == r_out}")
        ok = False
    if t_lines != r_lines:
        print("FAIL: the traces differ (trap: -, rewrite: +):")
        sys.stdout.writelines(line + "\n" for line in difflib.unified_diff(
            t_lines, r_lines, "trap", "rewrite", n=2, lineterm=""))
        ok = False
    if not t_lines:
        print("FAIL: empty trace")
        ok = False
    print(f"{len(t_lines)} trace lines, {'identical' if ok else 'NOT identical'} in both modes")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The guest's command line belongs to the guest.

    cli_args.py FLATUX WORKDIR

`flatux run --strace -- PROG -c x` once let the option parser take PROG as
the --strace output file (truncating it) and swallow -c. Checks that every
spelling passes the arguments through untouched and leaves PROG intact.
"""
import os
import shutil
import subprocess
import sys


def main():
    flatux, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, "echo-copy")
    shutil.copy2("/bin/echo", prog)
    size = os.path.getsize(prog)
    trace = os.path.join(work, "trace.txt")
    cases = [
        ([flatux, "run", "--strace", "--", prog, "-c", "x"], "-c x\n"),
        ([flatux, "run", "--strace=" + trace, "--", prog, "-c", "x"], "-c x\n"),
        ([flatux, "run", prog, "-c", "--strace", "x"], "-c --strace x\n"),
        ([flatux, "run", "--root", "/", "--", prog, "--root", "y"], "--root y\n"),
    ]
    failed = 0
    for argv, want in cases:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
        got = r.stdout.decode()
        ok = r.returncode == 0 and got == want and os.path.getsize(prog) == size
        print(("ok  " if ok else "FAIL"), " ".join(argv[1:]), "->", repr(got), "status", r.returncode)
        failed += not ok
    if not os.path.exists(trace) or "exit_group" not in open(trace).read():
        print("FAIL --strace=FILE wrote no trace")
        failed += 1
    print(f"{len(cases) + 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

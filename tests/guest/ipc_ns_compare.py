#!/usr/bin/env python3
"""Runs PROG natively in a fresh IPC namespace (`unshare --ipc`, as root
in a new user namespace, so no other System V object of the host shows)
and under `flatux run` (a fresh kernel has no others either), and compares:
stdout byte for byte, and both exit statuses must be 0. Skips (77) when
the host allows no new namespace.

    ipc_ns_compare.py --flatux FLATUX -- PROG [ARG...]
"""
import argparse
import difflib
import subprocess
import sys

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC", "HOME": "/"}


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("prog", nargs="+")
    args = ap.parse_args()
    if run(["unshare", "--ipc", "--user", "--map-root-user", "true"])[0] != 0:
        print("SKIP: no new IPC namespace here (unshare --ipc --user)")
        return 77
    nrc, nout, nerr = run(["unshare", "--ipc", "--user", "--map-root-user"] + args.prog)
    frc, fout, ferr = run([args.flatux, "run", "--"] + args.prog)
    sys.stdout.write(fout)
    ok = True
    if nrc != 0:
        print(f"FAIL: the native run exited {nrc}:\n{nerr}")
        ok = False
    if frc != 0:
        print(f"FAIL: the flatux run exited {frc}:\n{ferr}")
        ok = False
    if nout != fout:
        print("FAIL: stdout differs (native, flatux):")
        sys.stdout.writelines(difflib.unified_diff(nout.splitlines(True), fout.splitlines(True), "native", "flatux"))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Python's multiprocessing under flatux (mp_smoke.py, every start method):
natively first (the script is right), then under `flatux run` on the
host's root, then under `flatux run --root` of the Debian 12 tree the
Debian image is made from (its own python3, /dev/shm a tmpfs of the
kernel's). Each run must print "METHOD ok" for every method.

usage: py_multiprocessing.py --flatux PATH [--debian-root DIR]
Exit status 77 (skipped) when the Debian tree is named but missing.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mp_smoke.py")
METHODS = ["fork", "spawn", "forkserver"]
TIMEOUT_S = 180


def check(what, cmd, stdin=None):
    r = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    lines = r.stdout.split("\n")
    missing = [m for m in METHODS if f"{m} ok" not in lines]
    print(f"{what}: status {r.returncode}, {len(METHODS) - len(missing)}/{len(METHODS)} methods ok")
    if r.returncode != 0 or missing:
        print(f"  missing: {missing}\n  stdout: {r.stdout[-2000:]}\n  stderr: {r.stderr[-3000:]}")
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--debian-root")
    a = ap.parse_args()
    if a.debian_root and not os.path.isfile(os.path.join(a.debian_root, "usr/bin/python3")):
        print(f"no Debian tree at {a.debian_root}: skipped")
        return 77
    ok = check("native", [sys.executable, SCRIPT] + METHODS)
    ok &= check("flatux run", [a.flatux, "run", "--", sys.executable, SCRIPT] + METHODS)
    if a.debian_root:
        # The script goes into a private /tmp of the run (the tree is not written).
        with open(SCRIPT) as f:
            ok &= check("flatux run --root DEBIAN", [
                a.flatux, "run", "--root", a.debian_root, "--tmpfs", "/tmp", "--", "/bin/sh", "-c",
                "cat > /tmp/mp_smoke.py && exec python3 /tmp/mp_smoke.py " + " ".join(METHODS)], stdin=f)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

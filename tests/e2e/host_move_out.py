#!/usr/bin/env python3
"""Moves a folder out of a guest's --root while the guest works in it.

    host_move_out.py ROOT -- COMMAND...

Runs COMMAND... (escape_probe's host_move_out case under `flatux run
--root ROOT`) with pipes on stdin and stdout. When the guest prints
"ready", ROOT/mv goes to a folder next to ROOT (outside it), gets files
holding the escape marker's contents, and the guest is told "go"; it then
tries to read them. Exit status: the guest's.
"""
import os
import shutil
import subprocess
import sys

MARKER = "flatux hostfs escape marker: this file lies outside the guest root\n"


def main():
    sep = sys.argv.index("--")
    root, cmd = os.path.abspath(sys.argv[1]), sys.argv[sep + 1:]
    outside = os.path.join(os.path.dirname(root), "moved-out-%d" % os.getpid())
    shutil.rmtree(outside, ignore_errors=True)
    os.makedirs(outside)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = False
    try:
        for line in p.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if not ready and line.strip() == "ready":
                moved = os.path.join(outside, "mv")
                os.rename(os.path.join(root, "mv"), moved)
                for name in ("sub/secret", "secret2"):
                    with open(os.path.join(moved, name), "w") as f:
                        f.write(MARKER)
                p.stdin.write("go\n")
                p.stdin.flush()
                ready = True
        rc = p.wait()
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    if not ready and rc == 0:
        print("host_move_out.py: the guest never said ready")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Changes a guest's folder from the host while the guest uses it.

    host_changes.py COMMAND... DIR

Runs COMMAND... DIR (dentry's host_rename case, natively or under flatux)
with pipes on stdin and stdout. When the guest prints "ready PATH" (PATH:
its folder, as it sees it, inside DIR), this process renames DIR/REL/d to
DIR/REL/moved, makes a new DIR/REL/d/sub/new and answers "go"; the guest
then checks that it finds the new folder. Exit status: the guest's.
"""
import os
import subprocess
import sys


def main():
    cmd, scratch = sys.argv[1:-1], sys.argv[-1]
    p = subprocess.Popen(cmd + [scratch], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = False
    for line in p.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if not ready and line.startswith("ready "):
            # The guest's folder is a subfolder of scratch named after its case.
            case_dir = os.path.join(scratch, os.path.basename(line.split(" ", 1)[1].strip()))
            os.rename(os.path.join(case_dir, "d"), os.path.join(case_dir, "moved"))
            os.makedirs(os.path.join(case_dir, "d", "sub"))
            open(os.path.join(case_dir, "d", "sub", "new"), "w").close()
            p.stdin.write("go\n")
            p.stdin.flush()
            ready = True
    rc = p.wait()
    if not ready and rc == 0:
        print("host_changes.py: the guest never said ready")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())

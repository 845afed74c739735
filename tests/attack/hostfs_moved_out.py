#!/usr/bin/env python3
"""A folder hostfs has cached, moved out of the guest root by the host.

    hostfs_moved_out.py --flatux FLATUX --busybox BUSYBOX --work DIR [--native]

The guest (busybox sh, root folder JAIL) stats /d/x, so hostfs caches /d's
descriptor, and says so; the host then moves JAIL/d to a folder outside the
root and makes x in it. The guest's next look at /d/x must not find it: a
cached descriptor follows its folder out of the root, so the cache must be
dropped. --native runs the same script chrooted into the jail on the host
kernel, which proves the script right.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

from verdict import finish

SCRIPT = """
[ -e /d/x ] && exit 3
[ -e /d/x ] && exit 3
: > /ready
n=0
while [ ! -e /moved ]; do n=$((n+1)); [ $n -gt 2000000 ] && exit 4; done
if [ -e /d/x ]; then echo ESCAPED; exit 1; fi
if [ -d /d ]; then echo STALE; exit 2; fi
echo SAFE
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--busybox", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--native", action="store_true")
    a = ap.parse_args()
    if a.native and os.geteuid() != 0:
        print("skipped: chroot needs root")
        return 77
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    jail, outside = os.path.join(work, "jail"), os.path.join(work, "outside")
    os.makedirs(os.path.join(jail, "d"))
    os.makedirs(os.path.join(jail, "bin"))
    os.makedirs(outside)
    shutil.copy2(a.busybox, os.path.join(jail, "bin", "busybox"))
    sh = ["/bin/busybox", "sh", "-c", SCRIPT]
    argv = ["chroot", jail] + sh if a.native else [a.flatux, "run", "--root", jail, "--"] + sh
    print("$", " ".join(argv), flush=True)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    failures = []
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(jail, "ready")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.rename(os.path.join(jail, "d"), os.path.join(outside, "d"))
    with open(os.path.join(outside, "d", "x"), "w") as f:
        f.write("outside the guest root\n")
    open(os.path.join(jail, "moved"), "w").close()
    try:
        out, _ = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        failures.append("the guest did not finish")
    out = out.decode(errors="replace")
    print(out, end="")
    if p.returncode != 0 or "SAFE" not in out:
        failures.append(f"the guest saw the moved folder (status {p.returncode})")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

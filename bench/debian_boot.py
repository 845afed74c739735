#!/usr/bin/env python3
"""Boot time of the Debian 12 image (tools/build-debian-image) to
multi-user.target: flatux against UML (Debian's user-mode-linux), the
VM-less reference that runs here (systemd-nspawn does not boot it in this
kind of container: no system bus, no host systemd).

    bench/debian_boot.py --flatux build/flatux --image build/debian-systemd.ext4 [--rounds 5]

Each round boots a fresh sparse copy of the image with each system in turn
(the order alternates), timing wall-clock from the start of the process
to the console line "Reached target ... multi-user.target", then ends it.
Prints each time and the medians; needs linux.uml (user-mode-linux).
"""
import argparse
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

DONE = re.compile(rb"Reached target.{0,40}multi-user\.target")


def boot(argv, timeout=120):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    out = b""
    try:
        while time.monotonic() - t0 < timeout:
            r, _, _ = select.select([p.stdout], [], [], 0.2)
            if r:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk:
                    break
                out += chunk
                if DONE.search(out):
                    return time.monotonic() - t0
        return None
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    uml = shutil.which("linux.uml")
    if not uml:
        print("linux.uml not found (apt-get install user-mode-linux)")
        return 1
    work = tempfile.mkdtemp()
    img = os.path.join(work, "img")
    systems = {
        "flatux": [a.flatux, f"ubd0={img}", "rw", "mem=1024m", "init=/lib/systemd/systemd",
                   "systemd.log_target=kmsg"],
        "uml": [uml, f"ubd0={img}", "root=/dev/ubda", "rw", "mem=1024M", "init=/lib/systemd/systemd",
                "con0=null,fd:1", "con=null"],
    }
    times = {k: [] for k in systems}
    for r in range(a.rounds):
        order = list(systems) if r % 2 == 0 else list(reversed(systems))
        for name in order:
            subprocess.run(["cp", "--sparse=always", a.image, img], check=True)
            t = boot(systems[name])
            times[name].append(t)
            print(f"round {r + 1} {name}: {'timeout' if t is None else f'{t:.2f} s'}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    for name, ts in times.items():
        ok = [t for t in ts if t is not None]
        print(f"{name}: median {statistics.median(ok):.2f} s over {len(ok)} boots" if ok else f"{name}: no boot")
    return 0


if __name__ == "__main__":
    sys.exit(main())

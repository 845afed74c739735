#!/usr/bin/env python3
"""Boots flatux with one static program as init, stdin not a terminal.

    run_as_init.py --flatux FLATUX --prog PROG --work DIR [--expect-status N]
                   [--expect-output TEXT]... [--image [--needs-recovery]] -- PARAM...

The hostfs root is a fresh folder holding only PROG as /init-prog (with
--image: an ext4 image of that folder, booted as ubd0=IMAGE rw; with
--needs-recovery its journal is marked as needing recovery); the kernel
parameters follow `--` (init=/init-prog is added); each {free_port} in them
becomes one host TCP port that was free a moment ago (a fixed port would
be in the ephemeral range and taken, now and then, by another test's
connection). Checks flatux's exit status and that each TEXT appears in
its output.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--expect-status", type=int, default=0)
    ap.add_argument("--expect-output", action="append", default=[])
    ap.add_argument("--image", action="store_true")
    ap.add_argument("--needs-recovery", action="store_true")
    ap.add_argument("params", nargs="*")
    a = ap.parse_args()
    if any("{free_port}" in p for p in a.params):
        port = str(free_port())
        a.params = [p.replace("{free_port}", port) for p in a.params]
    root = os.path.join(a.work, "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    shutil.copy2(a.prog, os.path.join(root, "init-prog"))
    if a.image:
        image = os.path.join(a.work, "root.ext4")
        if os.path.exists(image):
            os.unlink(image)
        subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-d", root, image, "16M"], check=True)
        if a.needs_recovery:
            subprocess.run(["debugfs", "-w", "-R", "feature needs_recovery", image], check=True,
                           capture_output=True)
        argv = [a.flatux, f"ubd0={image}", "rw", "init=/init-prog"] + a.params
    else:
        argv = [a.flatux, f"hostfs={root}", "init=/init-prog"] + a.params
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    out = r.stdout.decode(errors="replace")
    print(out)
    ok = True
    if r.returncode != a.expect_status:
        print(f"FAIL: exit status {r.returncode}, want {a.expect_status}")
        ok = False
    for text in a.expect_output:
        if text not in out:
            print(f"FAIL: no {text!r} in the output")
            ok = False
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs a guest program on a fresh, small ext4 image: PROG gets the mount
point as its last argument. Under flatux the image is /dev/ubda mounted at
/mnt; natively it is loop-mounted (a tmpfs of the same size where loop
devices are missing, so the program's own checks still run natively; skip
when neither can be mounted). Afterwards `e2fsck -fn` must find the image
clean, and flatux must have logged no ext4 error.

    on_ext4_image.py --size 4M [--flatux FLATUX] -- PROG [ARG...]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77


def run(argv):
    print("+", " ".join(argv), flush=True)
    p = subprocess.run(argv, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    return p


def e2fsck_clean(image):
    p = run(["e2fsck", "-fn", image])
    if p.returncode != 0:
        sys.exit(f"FAIL: e2fsck -fn found problems in the image (exit {p.returncode})")


def loop_released(image, seconds=10.0):
    """Waits until no loop device is backed by `image`: umount returns
    before the loop device it set up is released and has written its last
    blocks (e2fsck once found the journal still needing recovery)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        p = subprocess.run(["losetup", "-j", image], capture_output=True, text=True)
        if p.returncode != 0 or not p.stdout.strip():
            return
        time.sleep(0.05)
    print(f"note: a loop device still holds {image} after {seconds:.0f} s")


def native(image, size, work, prog):
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    kind = "ext4"
    if run(["mount", "-o", "loop", image, mnt]).returncode != 0:
        kind = "tmpfs"
        if run(["mount", "-t", "tmpfs", "-o", "size=" + size, "none", mnt]).returncode != 0:
            print("SKIP: neither a loop mount nor a tmpfs mount is allowed here")
            return SKIP
    try:
        rc = run(prog + [mnt]).returncode
    finally:
        run(["umount", mnt])
    if kind == "ext4":
        loop_released(image)
    if rc == 0 and kind == "ext4":
        e2fsck_clean(image)
    return rc


def under_flatux(flatux, image, prog):
    p = run([flatux, "run", "--ubd", "0=" + image, "--mount-ext4", "/dev/ubda:/mnt", "--"] + prog + ["/mnt"])
    if "EXT4-fs error" in p.stdout + p.stderr:
        sys.exit("FAIL: the kernel logged an ext4 error")
    if p.returncode != 0:
        return p.returncode
    e2fsck_clean(image)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", required=True)
    ap.add_argument("--flatux")
    ap.add_argument("prog", nargs="+")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="flatux-ext4-")
    try:
        image = os.path.join(work, "fs.img")
        if run(["mke2fs", "-q", "-t", "ext4", "-F", image, a.size]).returncode != 0:
            sys.exit("FAIL: mke2fs")
        if a.flatux:
            return under_flatux(a.flatux, image, a.prog)
        return native(image, a.size, work, a.prog)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

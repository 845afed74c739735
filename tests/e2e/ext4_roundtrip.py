#!/usr/bin/env python3
"""ext4 round trip: an image made by `flatux mkimage` from a fixture tree,
changed by a guest (ext4_workload.c) through /dev/ubda mounted at /mnt, then
checked from the host with e2fsck and debugfs, and mounted again by a second
guest that checks the same tree.

    ext4_roundtrip.py --flatux FLATUX --workload PROG --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys


def run(argv, **kw):
    print("+", " ".join(argv), flush=True)
    return subprocess.run(argv, capture_output=True, text=kw.pop("text", True), **kw)


def must(proc, what):
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout if isinstance(proc.stdout, str) else "")
        sys.stderr.write(proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode())
        sys.exit(f"FAIL: {what} (exit {proc.returncode})")
    return proc


def make_fixture(tree):
    os.makedirs(os.path.join(tree, "sub"))
    with open(os.path.join(tree, "a.txt"), "w") as f:
        f.write("alpha\n")
    with open(os.path.join(tree, "sub", "b.txt"), "w") as f:
        f.write("beta\n")
    os.symlink("a.txt", os.path.join(tree, "link"))


def debugfs(image, request):
    p = run(["debugfs", "-R", request, image], text=False)
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()

    shutil.rmtree(a.work, ignore_errors=True)
    tree = os.path.join(a.work, "tree")
    make_fixture(tree)

    # Natively first: the workload's own checks hold on the host's filesystem.
    native = os.path.join(a.work, "native")
    shutil.copytree(tree, native, symlinks=True)
    must(run([a.workload, "write", native]), "native workload")

    image = os.path.join(a.work, "fs.img")
    must(run([a.flatux, "mkimage", tree, "-o", image, "--size", "512M"]), "mkimage")
    guest = [a.flatux, "run", "--ubd", "0=" + image, "--mount-ext4", "/dev/ubda:/mnt", "--"]
    must(run(guest + [a.workload, "write", "/mnt"]), "workload under flatux")
    must(run(["e2fsck", "-fn", image]), "e2fsck after the guest")

    expected = {
        "/new.txt": b"one\ntwo\n",
        "/sub2/hard.txt": b"one\ntwo\n",
        "/renamed.txt": b"alpha\n",
        "/left": b"R",
        "/right": b"L",
        "/many/f00000": b"f00000",
        "/many/f09998": b"f09998",
        "/trunc.bin": bytes((ord("a") + i % 26) for i in range(1000)) + bytes(4000),
    }
    for path, want in expected.items():
        got = debugfs(image, "cat " + path)
        if got != want:
            sys.exit(f"FAIL: debugfs cat {path}: {got[:80]!r}, want {want[:80]!r}")
    listing = debugfs(image, "ls -p /many").decode().split("\n")
    files = [l for l in listing if "/f" in l and "/100644/" in l]
    if len(files) != 5000:
        sys.exit(f"FAIL: /many holds {len(files)} files, want 5000")
    for gone in ("/a.txt", "/sub", "/many/f00001"):
        if b"File not found" not in run(["debugfs", "-R", "stat " + gone, image], text=False).stderr:
            sys.exit(f"FAIL: {gone} still exists")
    stat_fast = debugfs(image, "stat /fast").decode()
    stat_slow = debugfs(image, "stat /slow").decode()
    if 'Fast link dest: "new.txt"' not in stat_fast or "Fast link dest" in stat_slow:
        sys.exit("FAIL: fast/slow symlinks not stored as such:\n" + stat_fast + stat_slow)

    # Mounted again: the second guest sees the same tree.
    must(run(guest + [a.workload, "verify", "/mnt"]), "verify under flatux")
    must(run(["e2fsck", "-fn", image]), "e2fsck after the second mount")
    # The device node in a folder root's /dev, read-only (ubd0r=).
    root = os.path.join(a.work, "root")
    os.makedirs(root)
    shutil.copy(a.workload, os.path.join(root, "prog"))
    must(run([a.flatux, "run", "--root", root, "--ubd", "0r=" + image, "--",
              "/prog", "blockdev", "/dev/ubda", str(os.path.getsize(image))]), "/dev/ubda")
    print("ext4 round trip: ok")


if __name__ == "__main__":
    main()

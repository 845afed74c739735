#!/usr/bin/env python3
"""inotify in a guest sees what host programs do to a host folder: `tail -f`
of a file a host program appends to, and node's fs.watch of a folder a
host program makes a file in. Each run natively first (which proves the
case right), then under flatux.

usage: inotify_host.py --flatux FLATUX
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def wait_for(path, text, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with open(path, errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.05)
    return False


def tail_follows(prefix, work):
    log = os.path.join(work, "log")
    out = os.path.join(work, "tail.out")
    with open(log, "w") as f:
        f.write("first\n")
    with open(out, "w") as o:
        p = subprocess.Popen(prefix + ["/usr/bin/tail", "-f", log], stdout=o, stderr=subprocess.STDOUT)
    try:
        if not wait_for(out, "first", 20):
            return "tail never printed the first line"
        with open(log, "a") as f:
            f.write("second\n")
        return None if wait_for(out, "second", 10) else "tail -f did not print a line the host appended"
    finally:
        p.kill()
        p.wait()


WATCH = """
const fs = require('fs');
fs.watch(process.argv[1], (ev, name) => { console.log('event ' + ev + ' ' + name); process.exit(0); });
console.log('watching');
"""


def node_watches(prefix, work, node):
    folder = os.path.join(work, "watched")
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(work, "node.out")
    with open(out, "w") as o:
        p = subprocess.Popen(prefix + [node, "-e", WATCH, folder], stdout=o, stderr=subprocess.STDOUT)
    try:
        if not wait_for(out, "watching", 20):
            return "node did not start watching"
        with open(os.path.join(folder, "made-by-host"), "w") as f:
            f.write("x")
        return None if wait_for(out, "made-by-host", 10) else "fs.watch missed a file the host made"
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    a = ap.parse_args()
    node = shutil.which("node") or shutil.which("nodejs")
    failures = []
    for name, prefix in (("native", []), ("flatux", [a.flatux, "run", "--"])):
        cases = [("tail -f", tail_follows, ())]
        if node:
            cases.append(("node fs.watch", node_watches, (node,)))
        for what, case, extra in cases:
            work = tempfile.mkdtemp(prefix="flatux-inotify-")
            try:
                why = case(prefix, work, *extra)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(f"{name}: {what}: {why or 'ok'}")
            if why:
                failures.append(f"{name}: {what}: {why}")
    if not node:
        failures.append("no node on this machine (tools/install-deps installs nodejs)")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Builds the guest root for the hostfs escape tests.

    make_escape_root.py ROOT MARKER PROBE

ROOT is recreated from scratch; MARKER, which must lie outside ROOT, gets
contents escape_probe.c recognises. The symlinks are made here, at test
time, rather than committed, because some of them hold absolute host paths.
"""
import os
import shutil
import sys

MARKER = "flatux hostfs escape marker: this file lies outside the guest root\n"
INSIDE = "inside the guest root\n"


def main():
    root, marker, probe = (os.path.abspath(p) for p in sys.argv[1:4])
    if os.path.commonpath([root, marker]) == root:
        sys.exit(f"{marker} must lie outside {root}")
    if os.path.islink(root) or os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "d1", "d2", "d3"))
    os.makedirs(os.path.join(root, "loop"))
    os.makedirs(os.path.join(root, "chain"))
    with open(marker, "w") as f:
        f.write(MARKER)
    with open(os.path.join(root, "inside"), "w") as f:
        f.write(INSIDE)
    shutil.copyfile(probe, os.path.join(root, "prog"))
    os.chmod(os.path.join(root, "prog"), 0o755)

    links = {
        "link-to-root": "/",
        "up": "..",
        "d1/rootlink": "/",
        "d1/d2/d3/up4": "../../../..",
        "d1/esc": "../../" + os.path.basename(marker),
        "abs-marker": marker,
        "abs-parent": os.path.dirname(marker),
        "loop/a": "b",
        "loop/b": "a",
    }
    # /chain/l1 -> l2 -> ... -> l41 -> ../inside: 41 links from l1.
    for i in range(1, 41):
        links[f"chain/l{i}"] = f"l{i + 1}"
    links["chain/l41"] = "../inside"
    for name, target in links.items():
        os.symlink(target, os.path.join(root, name))
    print(f"guest root {root} ready, marker at {marker}")


if __name__ == "__main__":
    main()

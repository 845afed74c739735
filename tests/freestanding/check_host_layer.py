#!/usr/bin/env python3
"""The host layer stands under the kernel, never on it: no file under
src/host may include a kernel header. The host layer knows tasks and the
kernel only as opaque pointers and the C symbols its assembly calls
(kernel/entry/); code that dispatches into the kernel lives on the
kernel's side.

    check_host_layer.py DIR...

Exits 1 naming each offending #include (a path starting with kernel/, or
reaching src/kernel through ..).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".c", ".S", ".inc")


def kernel_header(path):
    parts = [p for p in path.split("/") if p not in ("", ".")]
    while parts and parts[0] == "..":
        parts.pop(0)
    return bool(parts) and parts[0] == "kernel"


def main(dirs):
    bad = []
    files = 0
    for top in dirs:
        for root, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                files += 1
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and kernel_header(m.group(1)):
                            bad.append(f"{path}:{n}: includes {m.group(1)}")
    for b in bad:
        print("FAIL:", b)
    if not files:
        print("FAIL: no sources found in", " ".join(dirs))
        return 1
    print(f"{files} files checked, {len(bad)} kernel includes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Host device nodes under the whole host as root, attacked with ordinary calls.

    host_devices.py --flatux FLATUX

A character device node (1:3, as /dev/null) made on the host in a fresh
folder, owned by the user the run is started as: the guest tries chown,
chmod and utimes on it, by path and through an open descriptor, in a run
started by root and in one started by another user (setpriv), with the
host root writable and with --ro. Checked from the host: the node keeps
its owner, mode and times.
"""
import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile

from verdict import finish

PYTHON = "/usr/bin/python3"  # not one under root's home, which the other user cannot reach

GUEST = r"""
import os, sys
node = sys.argv[1]
said = []
def attempt(name, fn):
    try:
        fn()
        said.append(name + ":done")
    except OSError as e:
        said.append(name + ":" + e.strerror)
attempt("chown", lambda: os.chown(node, 12345, 12345))
attempt("chmod", lambda: os.chmod(node, 0o600))
attempt("utime", lambda: os.utime(node, (1, 1)))
fd = os.open(node, os.O_RDONLY)
attempt("fchown", lambda: os.fchown(fd, 12345, 12345))
attempt("fchmod", lambda: os.fchmod(fd, 0o600))
attempt("futime", lambda: os.utime(fd, (2, 2)))
print(" ".join(said), file=sys.stderr)
print("GUEST_DONE", file=sys.stderr)
"""


def state(path):
    st = os.lstat(path)
    return (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_rdev)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("host_devices: needs root (to make a device node on the host)")
        return 77
    work = tempfile.mkdtemp(prefix="flatux-host-devices-")
    os.chmod(work, 0o755)
    failures = []
    try:
        flatux = os.path.join(work, "flatux")
        shutil.copy2(a.flatux, flatux)
        for who, uid in (("root", 0), ("user", 65534)):
            for ro in (False, True):
                tag = f"{who}{'-ro' if ro else ''}"
                node = os.path.join(work, f"{tag}.node")
                os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
                os.chown(node, uid, uid)
                os.chmod(node, 0o666)
                before = state(node)
                argv = [flatux, "run"] + (["--ro"] if ro else []) + ["--", PYTHON, "-c", GUEST, node]
                if uid:
                    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] + argv
                r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
                said = r.stderr.decode(errors="replace")
                print(f"[{tag}] exit {r.returncode}: {said.strip()}")
                if "GUEST_DONE" not in said:
                    failures.append(f"{tag}: the guest did not run to its end (exit {r.returncode})")
                now = state(node)
                if now != before:
                    failures.append(f"{tag}: the host's device node changed: mode {before[0]:o} -> {now[0]:o}, "
                                    f"owner {before[1]}:{before[2]} -> {now[1]}:{now[2]}, "
                                    f"mtime {before[3]} -> {now[3]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""AF_UNIX names under a folder root: a guest reaches no host socket outside
its root (through absolute or relative symlinks or ".."), binds only inside
it, and its abstract names are not the host's.

usage: unix_escape.py FLATUX PROBE SCRATCH
"""
import os
import shutil
import socket
import subprocess
import sys


def main():
    flatux, probe, scratch = sys.argv[1:4]
    scratch = os.path.abspath(scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    root = os.path.join(scratch, "root")
    os.makedirs(root)
    shutil.copyfile(probe, os.path.join(root, "prog"))
    os.chmod(os.path.join(root, "prog"), 0o755)
    outside = os.path.join(scratch, "outside.sock")
    host_sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    host_sock.bind(outside)
    host_sock.listen(8)
    host_sock.setblocking(False)
    host_dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram_path = os.path.join(scratch, "outside-dgram.sock")
    host_dgram.bind(dgram_path)
    host_dgram.setblocking(False)
    os.symlink(outside, os.path.join(root, "link-abs"))
    os.symlink("../outside.sock", os.path.join(root, "link-rel"))
    os.symlink("..", os.path.join(root, "up"))
    os.symlink(dgram_path, os.path.join(root, "link-dgram"))
    tag = f"flatux-escape-{os.getpid()}"
    host_abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    host_abstract.bind("\0" + tag + "-host")
    host_abstract.listen(8)
    host_abstract.setblocking(False)
    guest_name = tag + "-guest"

    proc = subprocess.Popen([flatux, "run", "--root", root, "--", "/prog", tag + "-host", guest_name],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    failures = []
    out = []
    for line in proc.stdout:
        out.append(line.decode(errors="replace"))
        if line.strip() == b"ready":
            break
    with open("/proc/net/unix") as f:
        names = [l.split()[-1] for l in f.read().splitlines()[1:] if len(l.split()) >= 8]
    if "@" + guest_name in names:
        failures.append("the guest's abstract name is bound on the host as it is")
    if not any(n.startswith("@") and n.endswith(guest_name) for n in names):
        failures.append("the guest's abstract name is not bound on the host at all")
    proc.stdin.close()
    out.append(proc.stdout.read().decode(errors="replace"))
    status = proc.wait(timeout=60)
    if status != 0:
        failures.append(f"probe status {status}")
    for s, what in ((host_sock, "outside.sock"), (host_abstract, "host abstract name")):
        try:
            s.accept()
            failures.append(f"a guest connection reached {what}")
        except BlockingIOError:
            pass
    try:
        host_dgram.recv(16)
        failures.append("a guest datagram reached outside-dgram.sock")
    except BlockingIOError:
        pass
    if os.path.exists(os.path.join(scratch, "made.sock")):
        failures.append("bind through /up created a socket outside the root")
    if not os.path.exists(os.path.join(root, "made.sock")):
        failures.append("bind through /up did not create root/made.sock")
    print("".join(out))
    for f in failures:
        print("FAIL: " + f)
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Boots a Debian image with systemd as init and watches it start.

    boot_systemd.py --flatux FLATUX --image IMAGE [--seconds N]

Boots IMAGE (tools/build-debian-image) as the seed boots its image
(ubd0=IMAGE rw mem=1024m) with init=/lib/systemd/systemd, and
systemd.log_target=kmsg so that systemd's messages reach the console once
journald runs too; reads the console for N seconds, then ends flatux.
systemd must get past its early setup (API filesystems, cgroup2 on
/sys/fs/cgroup, its notify socket on /run) into its manager, start
journald (capabilities, peer credentials of its sockets), track mounts
(poll on mountinfo, inotify), reach sysinit.target and basic.target, start
D-Bus and logind (udev's netlink socket) and reach multi-user.target, and
never freeze. Units that need mount namespaces (logind's sandbox, the
credentials of sysusers and tmpfiles) must start too, and sshd, whose port
22 is a free host port (hostfwd=). No unit may fail (EXPECTED_FAILURES
would say which may, and why).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time

MUST = [
    "Queued start job for default target",
    "Reached target local-fs.target",
    "Listening on systemd-journald.socket",
    "Started systemd-journald.service",
    "Reached target sysinit.target",
    "Reached target basic.target",
    "Started dbus.service",
    "Started systemd-logind.service",
    "Finished systemd-sysusers.service",
    "Finished systemd-tmpfiles-setup.service",
    "Started ssh.service",
    "Reached target multi-user.target",
]
# Units that fail here and why; any other failed unit fails the test.
EXPECTED_FAILURES = {}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
NEVER = ["Freezing execution", "Kernel panic"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    if not os.path.exists(a.image):
        print(f"SKIP: no image {a.image} (Debian's archive could not be reached)")
        return 77
    argv = [a.flatux, f"ubd0={a.image}", "rw", "mem=1024m", "init=/lib/systemd/systemd",
            "systemd.log_target=kmsg", f"hostfwd=tcp::{free_port()}-:22"]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    os.set_blocking(p.stdout.fileno(), False)
    out = b""
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)
        out += p.stdout.read() or b""
    if p.poll() is None:
        # A power-off request (systemd takes SIGTERM as "re-execute", so
        # flatux powers off when it does not in time), then SIGKILL.
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
    p.wait()
    os.set_blocking(p.stdout.fileno(), True)
    out += p.stdout.read() or b""
    text = out.decode(errors="replace")
    print(text)
    ok = True
    for m in MUST:
        if m not in text:
            print(f"FAIL: no {m!r} in the console")
            ok = False
    for m in NEVER:
        if m in text:
            print(f"FAIL: {m!r} in the console")
            ok = False
    failed = sorted({line.split("Failed to start ", 1)[1] for line in text.splitlines() if "Failed to start " in line})
    for unit in failed:
        name = unit.split(" ", 1)[0]
        if name in EXPECTED_FAILURES:
            print(f"expected: {name} failed ({EXPECTED_FAILURES[name]})")
        else:
            print(f"FAIL: {unit} failed to start")
            ok = False
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

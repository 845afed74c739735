#!/usr/bin/env python3
"""Boots the Debian image with systemd on a terminal and logs in at its getty.

    boot_systemd_login.py --flatux FLATUX --image IMAGE --work DIR

Boots a copy of IMAGE (tools/build-debian-image; root's password is
"flatux") with the seed's command line and init=/lib/systemd/systemd inside
a fresh pty, as a user at a console would: systemd starts getty@tty1 on the
console's virtual terminal, and the script waits for "login:", logs in as
root, checks `tty` (/dev/tty1), `systemctl is-system-running` (running,
nothing in `systemctl --failed`), `systemctl status` of logind,
`journalctl -b` (the login is in it); then logs in from the host with ssh
(a key put in the copy's /root/.ssh) to the guest's sshd, whose port 22 is
a free host port (hostfwd=), checks that journald runs under its seccomp
filter and sshd's sandbox said nothing, and runs Python's multiprocessing there
(tests/e2e/mp_smoke.py, put in the copy's /root: every start method); then
`systemctl poweroff`, which must end
flatux with status 0. The pty's settings must be the same before and after.
"""
import argparse
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import sys
import termios
import time

PROMPT = b"flatux-login$ "
STEP_S = 60.0  # generous: a loaded CI box boots systemd in a few seconds
EXPECTED_FAILURES = set()  # units allowed to fail (none)
MP_SMOKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "mp_smoke.py")
MP_METHODS = ["fork", "spawn", "forkserver"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_ssh_key(image, work):
    """A new key pair in work; its public half as root's authorized key in
    the image (debugfs writes the ext4 image offline)."""
    key = os.path.join(work, "key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    for req in ["mkdir /root/.ssh", f"write {key}.pub /root/.ssh/authorized_keys",
                "set_inode_field /root/.ssh mode 040700", "set_inode_field /root/.ssh/authorized_keys mode 0100600",
                f"write {MP_SMOKE} /root/mp_smoke.py"]:
        subprocess.run(["debugfs", "-w", image, "-R", req], check=True, capture_output=True)
    return key


def ssh(key, port, command):
    return subprocess.run(["ssh", "-p", str(port), "-i", key, "-o", "StrictHostKeyChecking=no", "-o",
                           "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "ConnectTimeout=30",
                           "-o", "LogLevel=ERROR", "root@127.0.0.1", command],
                          capture_output=True, text=True, timeout=90)


class Console:
    def __init__(self, master):
        self.master = master
        self.log = b""

    def expect(self, marker, timeout=STEP_S):
        """Waits for `marker`; returns the text before it and consumes both."""
        deadline = time.monotonic() + timeout
        while marker not in self.log:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {marker!r} in {timeout:.0f} s; the console ends with:\n"
                                   + self.log[-3000:].decode(errors="replace"))
            r, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise EOFError("the console closed; it ends with:\n" + self.log[-3000:].decode(errors="replace"))
                self.log += chunk
        before, _, self.log = self.log.partition(marker)
        return before

    def run(self, command, n):
        """Runs a shell command (the terminal does not echo: setup()) and
        returns its output; the prompt is PROMPT."""
        os.write(self.master, command.encode() + f"; echo END$((0+{n}))\r".encode())
        out = self.expect(f"END{n}\r\n".encode())
        self.expect(PROMPT)
        return out.decode(errors="replace").replace("\x1b[?2004l", "").replace("\x1b[?2004h", "").strip()

    def setup(self):
        """A plain prompt, no echo and no bracketed paste: output alone."""
        # (Quoted in two pieces: the echo of this line is not the prompt.)
        os.write(self.master, b"bind 'set enable-bracketed-paste off'; stty -echo; PS1='flatux-''login$ '\r")
        self.expect(PROMPT)

    def drain(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.master], [], [], 0.2)
            if not r:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.log += chunk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.image):
        print(f"SKIP: no image {a.image} (Debian's archive could not be reached)")
        return 77
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    image = os.path.join(a.work, "debian.ext4")
    subprocess.run(["cp", "--sparse=always", a.image, image], check=True)
    key = add_ssh_key(image, a.work)
    port = free_port()

    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    argv = [a.flatux, f"ubd0={image}", "rw", "mem=1024m", "init=/lib/systemd/systemd", f"hostfwd=tcp::{port}-:22"]
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    con = Console(master)
    failures = []
    try:
        con.expect(b"login: ")
        os.write(master, b"root\r")
        con.expect(b"Password: ")
        os.write(master, b"flatux\r")
        con.expect(b"# ")
        con.setup()
        tty = con.run("tty", 1)
        if tty != "/dev/tty1":
            failures.append(f"tty says {tty!r}, want /dev/tty1")
        state = con.run("systemctl is-system-running", 2)
        failed = con.run("systemctl --failed --no-legend --plain | cat", 3)
        units = {line.split()[0] for line in failed.splitlines() if line.split()}
        print(f"system state: {state}; failed units: {sorted(units) or 'none'}")
        if state != "running" and (state != "degraded" or not units):
            failures.append(f"systemctl is-system-running says {state!r}")
        if units - EXPECTED_FAILURES:
            failures.append(f"failed units: {sorted(units - EXPECTED_FAILURES)}")
        status = con.run("systemctl status systemd-logind --no-pager | cat", 4)
        if "Active: active (running)" not in status:
            failures.append("logind is not active (running):\n" + status)
        journal = con.run("journalctl -b --no-pager | grep -c 'ROOT LOGIN'", 5)
        if journal.strip().splitlines()[-1:] != ["1"]:
            failures.append(f"journalctl -b does not show the login once: {journal!r}")
        r = ssh(key, port, "echo over-ssh; systemctl is-system-running; journalctl -b --no-pager | grep -c 'Accepted publickey'")
        print(f"ssh: status {r.returncode}: {r.stdout.split()}")
        if r.returncode != 0 or r.stdout.split()[:2] != ["over-ssh", "running"] or r.stdout.split()[-1:] != ["1"]:
            failures.append(f"ssh to the guest's sshd on host port {port}: status {r.returncode}, "
                            f"out {r.stdout!r}, err {r.stderr[-1000:]!r}")
        # systemd confines its services with seccomp filters (journald's
        # SystemCallFilter=), and sshd its pre-authentication child (the
        # login above went through it): the kernel runs them.
        r = ssh(key, port, "grep '^Seccomp' /proc/$(pidof systemd-journald)/status; "
                           "journalctl -b --no-pager -u ssh | grep -ci 'seccomp\\|sandbox' || true")
        print(f"seccomp in the booted system: {r.stdout.split()}")
        if r.returncode != 0 or r.stdout.split()[:2] != ["Seccomp:", "2"] or r.stdout.split()[-1:] != ["0"]:
            failures.append(f"journald not under a seccomp filter, or sshd's sandbox complained: {r.stdout!r}")
        r = ssh(key, port, "python3 /root/mp_smoke.py " + " ".join(MP_METHODS))
        ok = [m for m in MP_METHODS if f"{m} ok" in r.stdout.split("\n")]
        print(f"multiprocessing over ssh: status {r.returncode}, ok: {ok}")
        if r.returncode != 0 or ok != MP_METHODS:
            failures.append(f"multiprocessing in the booted system: status {r.returncode}, "
                            f"out {r.stdout[-1000:]!r}, err {r.stderr[-2000:]!r}")
        os.write(master, b"systemctl poweroff\r")
        try:
            status = p.wait(timeout=150)
        except subprocess.TimeoutExpired:
            status = None
            failures.append("systemctl poweroff did not end flatux in 150 s")
        con.drain(1)
        if status is not None and status != 0:
            failures.append(f"flatux exited with status {status} after poweroff, want 0")
    except (TimeoutError, EOFError) as e:
        failures.append(str(e))
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    after = termios.tcgetattr(slave)
    if before != after:
        failures.append("the terminal's settings changed")
    os.close(slave)
    os.close(master)
    shutil.rmtree(a.work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

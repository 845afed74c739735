#!/usr/bin/env python3
"""Booting the busybox root on a terminal, driven like a user would.

    boot_console.py --flatux FLATUX --root BUSYBOX_ROOT --work DIR
    boot_console.py --flatux FLATUX --image ROOTFS_EXT4 --work DIR

flatux boots a copy of the no-MMU busybox root (hostfs=), or of the root
image with the original system's command line (ubd0=IMAGE rw mem=1024m
loglevel=8 init=/sbin/init; afterwards `e2fsck -fn` must find the image
clean), with busybox init
and an inittab that starts a login shell on the console, inside a fresh
pty. The script then types: ls /, a pipe, /proc/meminfo, ps, dmesg, ^C on
`sleep 100`, a background job with jobs and kill %1, ^Z and fg, vi (raw
mode) and finally poweroff, which must end flatux with status 0. The pty's
settings (`stty -g`) must be the same before and after.

Exits 77 (skipped) when the busybox root has not been built.
"""
import argparse
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

PROMPT = b"bbx# "
# Generous: the CI box is loaded; a lost wakeup or a missing signal
# shows up as a 100 s sleep or a hang, far beyond these.
STEP_S = 20.0
SIGNAL_S = 5.0
SKIP = 77
IMAGE_MODE = False


class Console:
    def __init__(self, master):
        self.master = master
        self.log = b""
        self.seen = 0  # what expect() has consumed

    def read_some(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            raise EOFError
        self.log += chunk
        return True

    def expect(self, marker, timeout=STEP_S):
        """Waits for `marker` after what was consumed; returns the text before it."""
        deadline = time.monotonic() + timeout
        while True:
            i = self.log.find(marker, self.seen)
            if i >= 0:
                before = self.log[self.seen:i]
                self.seen = i + len(marker)
                return before
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {marker!r} within {timeout} s")
            self.read_some(left)

    def send(self, data):
        os.write(self.master, data)

    def run(self, line, timeout=STEP_S):
        """Types a command line and returns its output (up to the next prompt)."""
        self.send(line.encode() + b"\r")
        out = self.expect(PROMPT, timeout)
        # The echo of the line comes first.
        return out.split(b"\r\n", 1)[1] if b"\r\n" in out else out


def make_root(src, work):
    root = os.path.join(work, "root")
    if os.path.exists(root):
        shutil.rmtree(root)
    # Not /dev's nodes: copying would read them (the kernel's devtmpfs is
    # mounted there anyway).
    shutil.copytree(src, root, symlinks=True,
                    ignore=lambda d, names: names if os.path.basename(d) == "dev" else [])
    os.makedirs(os.path.join(root, "etc"), exist_ok=True)
    with open(os.path.join(root, "etc/inittab"), "w") as f:
        f.write("::sysinit:/bin/echo sysinit ran\n"
                "::askfirst:-/bin/sh\n"
                "::shutdown:/bin/echo shutdown ran\n")
    with open(os.path.join(root, "etc/profile"), "w") as f:
        f.write("export PS1='bbx# '\n")
    with open(os.path.join(root, "tmp/file.txt"), "w") as f:
        f.write("line one\nline two\n")
    return root


def stty_g(fd):
    return subprocess.run(["stty", "-g"], stdin=fd, capture_output=True, text=True).stdout.strip()


def check(cond, what, failures):
    print(("ok  " if cond else "FAIL"), what, flush=True)
    if not cond:
        failures.append(what)


def session(con, failures):
    con.expect(PROMPT, 60)
    boot = con.log
    check(b"Linux version 6.1.0-flatux" in boot and b"Run /sbin/init as init process" in boot,
          "boot log on the console", failures)
    if not IMAGE_MODE:
        check(b"sysinit ran" in boot, "inittab sysinit action ran", failures)
    else:
        check(b"Mounted root (ext4 filesystem)" in boot, "root mounted from the ubd image", failures)
        con.run("printf 'line one\\nline two\\n' > /tmp/file.txt")

    out = con.run("ls /")
    check(all(d in out for d in (b"bin", b"etc", b"proc", b"tmp")), "ls /", failures)
    check(con.run("echo hi | cat").strip() == b"hi", "echo hi | cat", failures)
    out = con.run("cat /proc/meminfo | head -3")
    check(out.startswith(b"MemTotal:        1048576 kB") and out.count(b"\n") == 3,
          "cat /proc/meminfo | head -3 (MemTotal is mem=)", failures)
    out = con.run("ps")
    check(b"PID" in out and b"init" in out and b"sh" in out, "ps", failures)
    # init's descriptors are the console the kernel opened for it, by no
    # path: /proc names it as Linux does.
    out = con.run("readlink /proc/1/fd/0")
    check(out.strip() == b"/dev/console", f"readlink /proc/1/fd/0 is /dev/console ({out!r})", failures)
    out = con.run("dmesg | tail -3")
    check(b"Run /sbin/init as init process" in out or b"devtmpfs" in out or b"init" in out,
          "dmesg | tail -3", failures)

    # ^C on a foreground job: the prompt is back quickly, not after 100 s.
    con.send(b"sleep 100\r")
    con.expect(b"sleep 100\r\n")
    time.sleep(0.3)
    t0 = time.monotonic()
    con.send(b"\x03")
    try:
        con.expect(PROMPT, SIGNAL_S)
        check(True, f"^C ends sleep 100 ({time.monotonic() - t0:.2f} s)", failures)
    except TimeoutError:
        check(False, "^C ends sleep 100", failures)
        return

    # A background job, listed and killed.
    con.run("sleep 100 &")
    out = con.run("jobs")
    check(b"sleep 100" in out and b"Running" in out, "jobs lists the background sleep", failures)
    con.run("kill %1")
    out = con.run("jobs")
    check(b"Running" not in out, "kill %1 ended it", failures)

    # ^Z stops the foreground job; fg resumes it, ^C then ends it.
    con.send(b"sleep 100\r")
    con.expect(b"sleep 100\r\n")
    time.sleep(0.3)
    con.send(b"\x1a")
    try:
        out = con.expect(PROMPT, SIGNAL_S)
        check(b"[1]" in out, "^Z stops sleep 100", failures)
    except TimeoutError:
        check(False, "^Z stops sleep 100", failures)
        return
    out = con.run("jobs")
    check(b"Stopped" in out, "jobs shows it stopped", failures)
    con.send(b"fg\r")
    con.expect(b"fg\r\n", STEP_S)
    time.sleep(0.5)
    check(con.log.find(PROMPT, con.seen) < 0, "fg: the job holds the terminal", failures)
    con.send(b"\x03")
    try:
        con.expect(PROMPT, SIGNAL_S)
        check(True, "fg resumed it in the foreground (^C ended it)", failures)
    except TimeoutError:
        check(False, "fg resumed it in the foreground", failures)
        return

    # vi needs raw mode: open a file, quit without saving.
    con.send(b"vi /tmp/file.txt\r")
    con.expect(b"line two", STEP_S)
    time.sleep(0.3)
    con.send(b"\x1b")  # typed apart, as a person would: ESC then the command
    time.sleep(0.3)
    con.send(b":q!\r")
    try:
        con.expect(PROMPT, STEP_S)
        check(True, "vi opens the file and quits", failures)
    except TimeoutError:
        check(False, "vi opens the file and quits", failures)
        return
    check(con.run("echo back").strip() == b"back", "the shell works after vi", failures)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--root")
    ap.add_argument("--image")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    global PROMPT, IMAGE_MODE
    if a.image:
        IMAGE_MODE = True
        PROMPT = b"flatux:~# "  # the image's /etc/profile: PS1='\h:\w\$ '
        image = os.path.join(a.work, "rootfs.ext4")
        shutil.copyfile(a.image, image)
        params = [f"ubd0={image}", "rw", "mem=1024m", "loglevel=8", "init=/sbin/init"]
    else:
        if not os.path.exists(os.path.join(a.root, "bin/busybox")):
            print(f"SKIP: {a.root} has no busybox; build it with tools/build-busybox")
            return SKIP
        root = make_root(a.root, a.work)
        params = [f"hostfs={root}", "rw", "mem=1024m", "loglevel=8", "init=/sbin/init"]

    master, slave = pty.openpty()
    termios.tcsetwinsize(slave, (30, 100)) if hasattr(termios, "tcsetwinsize") else None
    before = stty_g(slave)
    t0 = time.monotonic()
    proc = subprocess.Popen([a.flatux] + params,
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            pass_fds=(), close_fds=True)
    con = Console(master)
    failures = []
    status = None
    try:
        con.expect(b"Linux version", 60)
        print(f"first console line after {time.monotonic() - t0:.3f} s")
        session(con, failures)
        if not failures:
            con.send(b"poweroff\r")
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                con.read_some(0.2)
            except EOFError:
                break
        status = proc.wait(timeout=max(1, deadline - time.monotonic()))
    except (TimeoutError, EOFError, subprocess.TimeoutExpired) as e:
        check(False, f"session: {e}", failures)
    finally:
        if proc.poll() is None:  # SIGTERM first: an orderly power-off restores the terminal
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if not failures:
        check(status == 0, f"poweroff: flatux exits 0 (got {status})", failures)
        check(b"reboot: Power down" in con.log, "power-off message", failures)
    if IMAGE_MODE and status == 0:
        fsck = subprocess.run(["e2fsck", "-fn", image], capture_output=True, text=True)
        check(fsck.returncode == 0, f"e2fsck -fn on the image after poweroff (status {fsck.returncode})",
              failures)
        if fsck.returncode:
            print(fsck.stdout[-2000:])
    after = stty_g(slave)
    check(before == after, "host terminal settings restored (stty -g)", failures)
    if failures:
        print("---- console log ----")
        print(con.log.decode(errors="replace")[-6000:])
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

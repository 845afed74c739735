#!/usr/bin/env python3
"""Stopping a shell under flatux the way a user would: ^C on its terminal,
or a signal from the host.

    proc_tty_signal.py --flatux FLATUX --how {ctrl-c,sigterm}

The command runs in a new session whose controlling terminal is a fresh
pty, so it is that terminal's foreground process group, as a command
started from an interactive shell is. Once it has printed "ready":

  ctrl-c   writes ^C to the pty master; the line discipline sends SIGINT
           to the foreground group. Want status 130.
  sigterm  sends SIGTERM to the flatux process alone (the launcher: it
           relays it through the run's init to the kernel's process, see
           tests/run_procs.py); flatux must pass it to the guest's group.
           Want status 143.

Either way the command must be gone within a second and never get to print
"never". The same scenario runs natively first (for sigterm the signal goes
to the whole group there, which is what flatux's forwarding stands for), to
prove the harness and the host behave as the test assumes.
"""
import argparse
import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time

SCRIPT = "echo ready; sleep 100; echo never"
# Promptness, with room for a loaded CI machine; a signal that is not
# forwarded at all leaves the 100 s sleep running.
LIMIT_S = 5.0
READY_TIMEOUT_S = 30.0


def status_of(returncode):
    return 128 - returncode if returncode < 0 else returncode


def read_until(master, marker, deadline):
    """Reads pty output until `marker` shows up, EOF, or the deadline."""
    out = b""
    while marker not in out:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([master], [], [], left)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every slave descriptor is closed
            break
        if not chunk:
            break
        out += chunk
    return out


def drain(master):
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if not r:
            return out
        try:
            chunk = os.read(master, 4096)
        except OSError:
            return out
        if not chunk:
            return out
        out += chunk


def scenario(label, argv, how, signal_whole_group):
    master, slave = os.openpty()

    def take_terminal():
        # start_new_session has already made us a session leader; an
        # inherited descriptor does not become the controlling terminal by
        # itself, so claim it.
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": "/", "TERM": "dumb"}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd="/",
                            start_new_session=True, preexec_fn=take_terminal)
    os.close(slave)
    ok = True
    try:
        out = read_until(master, b"ready", time.monotonic() + READY_TIMEOUT_S)
        if b"ready" not in out:
            print(f"{label}: FAIL: no 'ready' within {READY_TIMEOUT_S:.0f} s; output {out!r}")
            return False
        # Give the shell time to start `sleep`, so the signal finds it
        # waiting for a child rather than mid-vfork.
        time.sleep(0.3)
        if proc.poll() is not None:
            print(f"{label}: FAIL: exited early with status {status_of(proc.returncode)};"
                  f" output {out + drain(master)!r}")
            return False

        t0 = time.monotonic()
        if how == "ctrl-c":
            os.write(master, b"\x03")
            want = 128 + signal.SIGINT
        elif signal_whole_group:
            os.killpg(proc.pid, signal.SIGTERM)
            want = 128 + signal.SIGTERM
        else:
            os.kill(proc.pid, signal.SIGTERM)
            want = 128 + signal.SIGTERM
        try:
            proc.wait(timeout=LIMIT_S)
            took = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            took = None
        out += drain(master)

        if took is None:
            print(f"{label}: FAIL: still running {LIMIT_S} s after the signal")
            ok = False
        else:
            status = status_of(proc.returncode)
            print(f"{label}: exited {took * 1000:.1f} ms after the signal, status {status}")
            if status != want:
                print(f"{label}: FAIL: status {status}, want {want}")
                ok = False
        if b"never" in out:
            print(f"{label}: FAIL: the command went on after the signal")
            ok = False
        if not ok:
            print(f"{label}: terminal output {out!r}")
        return ok
    finally:
        # A failed run may have left something in the session; none of it
        # may outlive the test.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            print(f"{label}: could not reap pid {proc.pid}")
        os.close(master)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--how", choices=["ctrl-c", "sigterm"], required=True)
    a = ap.parse_args()

    cmd = ["/bin/sh", "-c", SCRIPT]
    if not scenario("native", cmd, a.how, signal_whole_group=True):
        print("FAIL: the native run did not behave as the test expects;"
              " the test or the host is broken")
        return 1
    flatux_argv = [a.flatux, "run", "--", *cmd]
    print("flatux:", " ".join(flatux_argv))
    return 0 if scenario("flatux", flatux_argv, a.how, signal_whole_group=False) else 1


if __name__ == "__main__":
    sys.exit(main())

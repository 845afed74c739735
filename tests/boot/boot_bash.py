#!/usr/bin/env python3
"""Booting bash as init from an image of the host's bash and coreutils
(tools/build-bash-image), on a pty, driven like a user would:

    boot_bash.py --flatux FLATUX --image BASH_IMAGE --work DIR

`flatux ubd0=IMAGE rw init=/bin/bash`: bash as PID 1 on the console has no
job control (as on Linux, the console is not a controlling terminal), so
the session first runs `setsid -c -w bash`, a login-like shell with the
console as its controlling terminal. Then: a pipeline, $( ), ^C of a
pipeline, ^Z of a job, jobs, fg and ^C, a background job and wait, and
finally exit, which ends init (a "Kernel panic", status 125, as Linux).
Every bash here forks (pipelines, substitutions, jobs).
"""
import argparse
import os
import pty
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import boot_console  # noqa: E402  (its Console drives the pty)
from boot_console import Console, check  # noqa: E402

PROMPT = b"bash# "
boot_console.PROMPT = PROMPT
STEP_S = 30.0
SIGNAL_S = 5.0


def interrupt(con, keys, what, failures):
    """Sends keys (^C, ^Z) to a running foreground job; the prompt must return soon."""
    time.sleep(0.5)
    t0 = time.monotonic()
    con.send(keys)
    try:
        out = con.expect(PROMPT, SIGNAL_S)
        check(True, f"{what} ({time.monotonic() - t0:.2f} s)", failures)
        return out
    except TimeoutError:
        check(False, what, failures)
        raise


def session(con, failures):
    con.expect(b"no job control in this shell", 60)
    con.expect(b"# ")
    con.send(b"exec setsid -c -w /bin/bash --norc -i\r")
    con.expect(b"-i\r\n")
    con.expect(b"# ")
    # Quoted apart, so that the prompt never shows in the echo of a line.
    con.run("PS1='ba''sh# '")
    out = con.run("echo one two three | tr a-z A-Z | wc -w")
    check(out.strip() == b"3", "pipeline: echo | tr | wc", failures)
    out = con.run("echo \"sub: $(echo inner | tr a-z A-Z) $(( $(seq 1 10 | wc -l) * 2 ))\"")
    check(b"sub: INNER 20" in out, "$( ) and arithmetic", failures)
    out = con.run("ls / | sort | head -3")
    check(b"bin" in out, "ls / | sort | head", failures)

    con.send(b"sleep 100 | cat\r")
    con.expect(b"sleep 100 | cat\r\n")
    interrupt(con, b"\x03", "^C ends the pipeline sleep 100 | cat", failures)

    con.send(b"sleep 100\r")
    con.expect(b"sleep 100\r\n")
    out = interrupt(con, b"\x1a", "^Z stops sleep 100", failures)
    check(b"Stopped" in out, "the shell reports the job stopped", failures)
    out = con.run("jobs")
    check(b"Stopped" in out and b"sleep 100" in out, "jobs lists it", failures)
    con.send(b"fg\r")
    con.expect(b"sleep 100\r\n")
    interrupt(con, b"\x03", "fg, then ^C ends it", failures)

    out = con.run("(sleep 0.2; echo from the background) & wait; echo waited", timeout=STEP_S)
    check(b"from the background" in out and b"waited" in out, "& and wait", failures)
    out = con.run("stty -a | head -1")
    check(b"speed" in out or b"rows" in out, "stty on the console", failures)
    con.send(b"exit\r")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.image):
        print("no image:", a.image)
        return 77
    os.makedirs(a.work, exist_ok=True)
    image = os.path.join(a.work, "bash.ext4")
    shutil.copyfile(a.image, image)
    pid, master = pty.fork()
    if pid == 0:
        os.execv(a.flatux, [a.flatux, f"ubd0={image}", "rw", "init=/bin/bash", "quiet"])
    con = Console(master)
    failures = []
    try:
        session(con, failures)
        deadline = time.monotonic() + STEP_S
        while time.monotonic() < deadline:
            try:
                con.read_some(0.5)
            except EOFError:
                break
    except (TimeoutError, EOFError) as e:
        failures.append(str(e))
        print("FAIL", e)
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if not failures:
        check(code == 125 and b"Attempted to kill init" in con.log,
              f"exit ends init: kernel panic, status {code}", failures)
    with open(os.path.join(a.work, "console.log"), "wb") as f:
        f.write(con.log)
    if failures:
        print("console log:", os.path.join(a.work, "console.log"))
        sys.stdout.write(con.log.decode(errors="replace")[-3000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

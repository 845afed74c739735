#!/usr/bin/env python3
"""Process, thread and signal use by an ordinary python3 program.

    proc_py_cases.py CASE

host_compare.py runs this natively and under flatux; each case prints
only what every correct kernel makes identical, so the two outputs can be
compared byte for byte.
"""
import os
import signal
import subprocess
import sys
import threading
import time


def posix_spawn():
    pid = os.posix_spawn("/bin/echo", ["/bin/echo", "spawned"], {})
    got, status = os.waitpid(pid, 0)
    print("waitpid returned the child:", got == pid)
    print("exited:", os.WIFEXITED(status), "status:", os.waitstatus_to_exitcode(status))


def threads():
    count = 0
    lock = threading.Lock()

    def work():
        nonlocal count
        for _ in range(10_000):
            with lock:
                count += 1

    ts = [threading.Thread(target=work) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(count)


def alarm():
    handled = []
    signal.signal(signal.SIGALRM, lambda sig, frame: handled.append(sig))
    signal.alarm(1)
    start = time.monotonic()
    # PEP 475: the sleep resumes after the handler, so it lasts the full 2 s.
    time.sleep(2)
    took = time.monotonic() - start
    print("handled:", [int(s) for s in handled])
    print("slept at least 2 s:", took >= 2.0)


def sh_exit():
    print(subprocess.run(["/bin/sh", "-c", "exit 3"]).returncode)


CASES = {f.__name__: f for f in (posix_spawn, threads, alarm, sh_exit)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(CASES)}}}")
    CASES[sys.argv[1]]()

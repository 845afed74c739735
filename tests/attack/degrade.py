#!/usr/bin/env python3
"""A host kernel without a layer: flatux says so once, runs, and refuses
with --require-sandbox.

    degrade.py FLATUX OLD_KERNEL PROG

OLD_KERNEL (old_kernel.c) runs flatux as if the host had no Landlock
(and with --no-userns no user namespaces either); PROG is
tests/guest/hello.c's static build. Each case checks the exit status, that
the guest ran (or did not), and how often each "missing" line was said.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from verdict import finish

HELLO_ARGS = ["5", "FLATUX_GREETING=x", "a", "a"]
HELLO_ENV = {"FLATUX_GREETING": "x"}


def run(argv):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=HELLO_ENV)
    print("$", " ".join(argv))
    print(r.stdout + r.stderr, end="")
    print(f"(exit status {r.returncode})")
    return r


def main():
    flatux, old_kernel, prog = sys.argv[1:4]
    root = os.geteuid() == 0
    failures = []
    jail = tempfile.mkdtemp(prefix="flatux-degrade-")
    try:
        shutil.copy2(prog, os.path.join(jail, "hello"))
        cases = [
            # (wrapper args, flatux args, guest path, lines that must be said once, must it run)
            ([], ["--security"], prog, ["missing landlock (not in this kernel)"], True),
            ([], ["--require-sandbox"], prog, ["missing landlock (not in this kernel)",
                                                "refusing to run (--require-sandbox)"], False),
            ([], ["--root", jail, "--ro", "--net=none", "--require-sandbox"], "/hello",
             ["missing landlock (not in this kernel)", "refusing to run"], False),
        ]
        if root:
            cases += [
                (["--no-userns"], ["--security", "--root", jail], "/hello",
                 ["missing user namespace (unshare: Operation not permitted)",
                  "missing landlock (not in this kernel)",
                  # root makes its private mounts before giving up the capability to
                  "mounts: a private namespace showing only"], True),
                (["--no-userns"], ["--require-sandbox", "--root", jail], "/hello",
                 ["missing user namespace", "refusing to run"], False),
            ]
        # A layer left out on purpose counts as missing too.
        cases.append(([], ["--require-sandbox", "--sandbox-without=allowlist"], prog,
                       ["missing allowlist (left out: --sandbox-without=allowlist)", "refusing to run"], False))
        for wrap, args, guest, once, runs in cases:
            argv = ([old_kernel] + wrap if "--sandbox-without=allowlist" not in args else []) + \
                   [flatux, "run"] + args + ["--", guest] + HELLO_ARGS
            r = run(argv)
            out = r.stdout + r.stderr
            name = " ".join(wrap + args)
            ran = "hello from" in r.stdout
            if runs and (r.returncode != 0 or not ran):
                failures.append(f"{name}: the guest should run (status {r.returncode})")
            if not runs and (r.returncode == 0 or ran):
                failures.append(f"{name}: flatux should refuse before the guest runs (status {r.returncode})")
            for line in once:
                n = out.count(line)
                if n != 1:
                    failures.append(f"{name}: {line!r} said {n} times, want once")
    finally:
        shutil.rmtree(jail, ignore_errors=True)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

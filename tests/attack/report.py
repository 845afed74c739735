#!/usr/bin/env python3
"""Checks what `flatux run --security` says it applied.

    report.py FLATUX PROG

PROG is tests/guest/hello.c's static build.

Started by root (as CI is), flatux enters a user namespace, and with
--keep-root it keeps root; an ordinary user gets neither line (skipped,
77). --require-sandbox must run here: this kernel has every layer.
"""
import os
import subprocess
import sys


# hello.c's contract: its argc, its one environment variable, its arguments.
HELLO_ARGS = ["5", "FLATUX_GREETING=x", "a", "a"]
HELLO_ENV = {"FLATUX_GREETING": "x"}


def run(flatux, args, prog):
    r = subprocess.run([flatux, "run", "--security", "--require-sandbox"] + args + ["--", prog] + HELLO_ARGS,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=HELLO_ENV)
    print("$ flatux run --security --require-sandbox", " ".join(args), "--", prog)
    print(r.stderr, end="")
    return r.returncode, r.stderr


def main():
    flatux, prog = sys.argv[1:3]
    if os.geteuid() != 0:
        print("skipped: the identity lines need root")
        return 77
    failures = []
    cases = [
        ([], ["identity: a user namespace mapping every host id to itself", "files: the whole host read-write",
              "signals and abstract sockets kept inside", "the kernel's own host calls are held to an allowlist",
              "no_new_privs"]),
        (["--ro", "--net=none"], ["files beneath / (read-only)", "TCP bind and connect refused"]),
        (["--keep-root"], ["identity: root, as asked"]),
        (["--root", os.path.dirname(prog)], ["mounts: a private namespace showing only"]),
    ]
    for args, want in cases:
        status, err = run(flatux, args, prog if "--root" not in args else "/" + os.path.basename(prog))
        if status != 0:
            failures.append(f"{args}: exit status {status}")
        for w in want:
            if w not in err:
                failures.append(f"{args}: no {w!r}")
        if "missing" in err:
            failures.append(f"{args}: a layer is missing")
    r = subprocess.run([flatux, "run", "--no-sandbox", "--security", "--", prog] + HELLO_ARGS,
                       capture_output=True, text=True, env=HELLO_ENV)
    if "off (--no-sandbox)" not in r.stderr:
        failures.append("--no-sandbox does not say the sandbox is off")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

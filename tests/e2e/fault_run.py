#!/usr/bin/env python3
"""Runs a program that dies by a signal natively and under `flatux run`.

    fault_run.py --flatux FLATUX --status N --message TEXT -- PROG [ARG...]

Natively PROG runs through `sh -c`, whose exit status must be N (128 plus
the signal): that proves the program dies the way the test says. Under
flatux the status must be N too and stderr must carry TEXT, the report a
shell prints for that signal. Both runs must print the same stdout, so the
program got as far as the fault in each.
"""
import argparse
import resource
import subprocess
import sys


def no_core():
    # The deaths are on purpose; a core file of each would only be litter.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def status_of(returncode):
    return 128 - returncode if returncode < 0 else returncode


def run(argv, timeout):
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, preexec_fn=no_core)
    except subprocess.TimeoutExpired as e:
        return e.stdout or b"", e.stderr or b"", None
    return p.stdout, p.stderr, status_of(p.returncode)


def text(b):
    return b.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--status", type=int, required=True)
    ap.add_argument("--message", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        ap.error("no program given")

    ok = True
    n_out, n_err, n_status = run(["sh", "-c", '"$0" "$@"'] + argv, args.timeout)
    print(f"native: status {n_status}, stdout {text(n_out)!r}")
    if n_status != args.status:
        print(f"FAIL: native status {n_status}, want {args.status}: the test "
              f"or the host is broken (stderr {text(n_err)!r})")
        ok = False

    f_out, f_err, f_status = run([args.flatux, "run", "--"] + argv, args.timeout)
    print(f"flatux: status {f_status}, stdout {text(f_out)!r}, stderr {text(f_err)!r}")
    if f_status is None:
        print("FAIL: flatux timed out")
        ok = False
    elif f_status != args.status:
        print(f"FAIL: flatux status {f_status}, want {args.status}")
        ok = False
    if "oops" in text(f_err).lower():
        print("FAIL: flatux reported a kernel oops")
        ok = False
    if args.message not in text(f_err):
        print(f"FAIL: flatux stderr lacks {args.message!r}")
        ok = False
    if f_out != n_out:
        print("FAIL: stdout differs between the native and the flatux run")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

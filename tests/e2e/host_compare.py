#!/usr/bin/env python3
"""Runs a host program natively and under `flatux run`, and compares.

    host_compare.py --flatux FLATUX [options] -- PROG [ARG...]

stdout must match byte for byte and so must the exit status (a death by
signal N counts as 128+N, which is how flatux reports it). stderr is shown
on failure but not compared: the two runs may word diagnostics differently
without either being wrong.

Both runs get the same fixed environment, working directory and stdin, so
nothing but the kernel underneath differs.

--expect-status also checks the native run, to catch a broken test or host.
With --flatux-only, PROG runs only under flatux and its stdout, stderr and
status are checked against --expect-* instead.
"""
import argparse
import difflib
import os
import signal
import subprocess
import sys

# What a deterministic run of a coreutils-style program needs: no locale,
# no timezone surprises, no colour, nothing inherited from the caller.
BASE_ENV = {
    "PATH": "/usr/bin:/bin",
    "LC_ALL": "C",
    "LANG": "C",
    "TZ": "UTC",
    "HOME": "/",
    "TERM": "dumb",
    # Keeps the python3 run from writing .pyc files into /usr.
    "PYTHONDONTWRITEBYTECODE": "1",
}


def status_of(returncode):
    return 128 - returncode if returncode < 0 else returncode


def describe(status):
    if status > 128 and status - 128 < signal.NSIG:
        try:
            return f"{status} ({signal.Signals(status - 128).name})"
        except ValueError:
            pass
    return str(status)


def run(argv, env, stdin_path, cwd, timeout):
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        p = subprocess.run(argv, env=env, stdin=stdin, cwd=cwd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        return p.stdout, p.stderr, status_of(p.returncode), False
    except subprocess.TimeoutExpired as e:
        return e.stdout or b"", e.stderr or b"", None, True
    finally:
        if stdin_path:
            stdin.close()


def show(label, data, limit=4000):
    text = data.decode("utf-8", "replace")
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(data)} bytes in all)"
    print(f"--- {label} ({len(data)} bytes) ---")
    print(text, end="" if text.endswith("\n") or not text else "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--flatux-arg", action="append", default=[],
                    help="extra argument for `flatux run`, before --")
    ap.add_argument("--clear-env", action="store_true",
                    help="start from an empty environment, not BASE_ENV")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--stdin", help="file fed to both runs as stdin")
    ap.add_argument("--cwd", default="/")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--flatux-only", action="store_true")
    ap.add_argument("--expect-status", type=int)
    ap.add_argument("--expect-stdout")
    ap.add_argument("--expect-stderr")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no program given")

    env = {} if a.clear_env else dict(BASE_ENV)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    flatux_argv = [a.flatux, "run", *a.flatux_arg, "--", *cmd]
    print("environment:", " ".join(f"{k}={v}" for k, v in env.items()) or "(empty)")
    print("flatux:", " ".join(flatux_argv))

    f_out, f_err, f_status, f_timeout = run(flatux_argv, env, a.stdin, a.cwd, a.timeout)
    ok = True
    if f_timeout:
        print(f"FAIL: flatux run timed out after {a.timeout} s")
        ok = False

    if a.flatux_only:
        checks = [("stdout", a.expect_stdout, f_out), ("stderr", a.expect_stderr, f_err)]
        for label, want, got in checks:
            if want is not None and got != want.encode():
                print(f"FAIL: {label} is {got!r}, want {want.encode()!r}")
                ok = False
        if a.expect_status is not None and f_status != a.expect_status:
            print(f"FAIL: exit status {describe(f_status) if f_status is not None else 'none'},"
                  f" want {a.expect_status}")
            ok = False
        if not ok:
            show("flatux stdout", f_out)
            show("flatux stderr", f_err)
        else:
            print(f"ok: status {f_status}, stderr {f_err!r}")
        return 0 if ok else 1

    print("native:", " ".join(cmd))
    n_out, n_err, n_status, n_timeout = run(cmd, env, a.stdin, a.cwd, a.timeout)
    if n_timeout:
        print(f"FAIL: the native run timed out after {a.timeout} s; the test is broken")
        return 1
    if a.expect_status is not None and n_status != a.expect_status:
        show("native stdout", n_out)
        show("native stderr", n_err)
        print(f"FAIL: the native run exited {describe(n_status)}, the test expects"
              f" {a.expect_status}; the test or the host is broken")
        return 1

    if f_status != n_status:
        print(f"FAIL: exit status under flatux {describe(f_status) if f_status is not None else 'none'},"
              f" natively {describe(n_status)}")
        ok = False
    if f_out != n_out:
        print("FAIL: stdout differs (- native, + flatux):")
        diff = difflib.unified_diff(
            n_out.decode("utf-8", "replace").splitlines(keepends=True),
            f_out.decode("utf-8", "replace").splitlines(keepends=True),
            "native", "flatux")
        sys.stdout.writelines(list(diff)[:200])
        if n_out.decode("utf-8", "replace") == f_out.decode("utf-8", "replace"):
            print("(the difference is in bytes that are not valid UTF-8)")
        ok = False
    if not ok:
        show("native stderr", n_err)
        show("flatux stderr", f_err)
    else:
        show("stdout (identical)", n_out)
        print(f"ok: status {n_status} in both")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks what `flatux run --security` says it applied.

    report.py FLATUX PROG

PROG is tests/guest/hello.c's static build.

Started by root (as CI is), flatux enters a user namespace, and with
--keep-root it keeps root; an ordinary user gets neither line (skipped,
77). --require-sandbox must run here: this kernel has every layer. Then
the host's own view of a running flatux: the kernel's host process's
/proc/PID/status and user namespace must show what the report says (the
kernel's process, not the launcher Python started: tests/run_procs.py).
"""
import os
import subprocess
import sys
import tempfile
import time

from verdict import finish

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_procs import kernel_process  # noqa: E402


# hello.c's contract: its argc, its one environment variable, its arguments.
HELLO_ARGS = ["5", "FLATUX_GREETING=x", "a", "a"]
HELLO_ENV = {"FLATUX_GREETING": "x"}


def cgroups_available():
    """Whether this host lets root make cgroups (v1's pids hierarchy, or v2
    with its pids controller): the task and memory bounds need them."""
    if os.access("/sys/fs/cgroup/pids", os.W_OK):
        return True
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            return "pids" in f.read().split() and os.access("/sys/fs/cgroup", os.W_OK)
    except OSError:
        return False


def run(flatux, args, prog):
    r = subprocess.run([flatux, "run", "--security", "--require-sandbox"] + args + ["--", prog] + HELLO_ARGS,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=HELLO_ENV)
    print("$ flatux run --security --require-sandbox", " ".join(args), "--", prog)
    print(r.stderr, end="")
    return r.returncode, r.stderr


def status_fields(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def host_view(flatux):
    """What the host sees of a running, confined flatux: what --security
    says must be so (no_new_privs, the filter, a user namespace of its own
    holding only the file server's capabilities)."""
    failures = []
    p = subprocess.Popen([flatux, "run", "--", "/bin/sleep", "5"], stdin=subprocess.DEVNULL)
    try:
        fields, kernel = {}, p.pid
        for _ in range(100):  # until the filter is in (sealed before the guest runs)
            # Asked again each time: until the launcher has made the run's
            # pid namespace, it looks like a run without one.
            kernel = kernel_process(p.pid, timeout=0) or p.pid
            try:
                fields = status_fields(kernel)
            except OSError:
                fields = {}
            if fields.get("Seccomp") == "2":
                break
            time.sleep(0.05)
        print("host view:", {k: fields.get(k) for k in ("NoNewPrivs", "Seccomp", "CapEff", "CapPrm", "CapBnd",
                                                        "NSpid")})
        if fields.get("Seccomp") != "2":
            failures.append(f"host view: Seccomp {fields.get('Seccomp')}, want 2 (filter)")
        if fields.get("NoNewPrivs") != "1":
            failures.append(f"host view: NoNewPrivs {fields.get('NoNewPrivs')}, want 1")
        # chown, dac_override, dac_read_search, fowner, fsetid
        if int(fields.get("CapEff", "ff"), 16) & ~0x1f or int(fields.get("CapPrm", "ff"), 16) & ~0x1f:
            failures.append(f"host view: capabilities beyond the file server's: {fields.get('CapEff')}")
        if fields.get("NSpid", "").split()[-1:] != ["2"]:
            failures.append(f"host view: the kernel's process is not pid 2 of a namespace (NSpid {fields.get('NSpid')})")
        if os.readlink(f"/proc/{kernel}/ns/user") == os.readlink("/proc/self/ns/user"):
            failures.append("host view: flatux is in the host's own user namespace")
    finally:
        p.kill()
        p.wait()
    return failures


def main():
    flatux, prog = sys.argv[1:3]
    if os.geteuid() != 0:
        print("skipped: the identity lines need root")
        return 77
    failures = []
    cases = [
        ([], ["identity: a user namespace mapping every host id to itself", "files: the whole host read-write",
              "processes: a pid namespace of the run's own", "tasks: at most",
              "mounts: a private namespace of the whole host, every mount without set-id",
              "signals and abstract sockets kept inside", "the kernel's own host calls are held to an allowlist",
              "no set-id mode or device node", "no_new_privs"]),
        (["--ro", "--net=none"], ["files beneath / (read-only)", "TCP bind and connect refused",
                                  "network: an empty namespace of the run's own", "read-only but for an empty /dev/shm"]),
        (["--keep-root"], ["identity: root, as asked"]),
        (["--root", os.path.dirname(prog)], ["mounts: a private namespace showing only"]),
    ]
    bounds = cgroups_available()
    if not bounds:
        print("note: this host gives root no cgroups: the task and memory bounds are said missing")
    for args, want in cases:
        if not bounds:
            want = [w for w in want if not w.startswith("tasks:")]
        status, err = run(flatux, args, prog if "--root" not in args else "/" + os.path.basename(prog))
        if status != 0:
            failures.append(f"{args}: exit status {status}")
        for w in want:
            if w not in err:
                failures.append(f"{args}: no {w!r}")
        missing = [l for l in err.splitlines() if "missing" in l and (bounds or "a bound on host" not in l)]
        if missing:
            failures.append(f"{args}: a layer is missing: {missing}")
    r = subprocess.run([flatux, "run", "--no-sandbox", "--security", "--", prog] + HELLO_ARGS,
                       capture_output=True, text=True, env=HELLO_ENV)
    if "off (--no-sandbox)" not in r.stderr:
        failures.append("--no-sandbox does not say the sandbox is off")
    # --strace's output starts with the same lines.
    with tempfile.NamedTemporaryFile("r", prefix="flatux-strace-") as trace:
        subprocess.run([flatux, "run", f"--strace={trace.name}", "--net=none", "--", prog] + HELLO_ARGS,
                       capture_output=True, env=HELLO_ENV)
        head = trace.read().split("\n")[:6]
        if not any("TCP bind and connect refused" in l for l in head) or not head[0].startswith("flatux: sandbox:"):
            failures.append(f"--strace does not start with what was applied: {head[:2]}")
    failures += host_view(flatux)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

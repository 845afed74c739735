#!/usr/bin/env python3
"""Host files handed to a guest as descriptors, attacked with ordinary calls.

    handed_over.py --flatux FLATUX

The guest gets a host file as its stdout and another as its stdin, and a
third from a host program over an AF_UNIX socket (SCM_RIGHTS), which
arrives as a bare host descriptor. On each it
tries fchown to root and to a foreign user, and fchmod to set-uid and to
world-writable. Run started by root and by an ordinary user (setpriv),
with the host root writable and with --ro. Checked from the host: every
file keeps its owner and mode. Pipes and memfds, which no host folder
names, still take fchmod (the guest checks that too).
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

from verdict import finish

# Not a python3 under root's home, which the other user cannot reach.
PYTHON = "/usr/bin/python3"

GUEST = r"""
import os, socket, sys
peer = sys.argv[1]
tried = []
def attempt(name, fn):
    try:
        fn()
        tried.append(name + ":done")
    except OSError as e:
        tried.append(name + ":" + e.strerror)
s = socket.socket(socket.AF_UNIX)
s.connect(peer)
_, fds, _, _ = socket.recv_fds(s, 1, 1)
passed = fds[0]
for name, target in (("stdout", 1), ("stdin", 0), ("passed", passed)):
    attempt(name + "-chown-root", lambda: os.fchown(target, 0, 0))
    attempt(name + "-chown-other", lambda: os.fchown(target, 12345, 12345))
    attempt(name + "-chmod-setuid", lambda: os.fchmod(target, 0o4755))
    attempt(name + "-chmod-world", lambda: os.fchmod(target, 0o666))
r, w = os.pipe()
os.fchmod(r, 0o600)
m = os.memfd_create("m")
os.fchmod(m, 0o600)
ok = (os.fstat(r).st_mode & 0o777) == 0o600 and (os.fstat(m).st_mode & 0o777) == 0o600
print(" ".join(tried), file=sys.stderr)
print("ANON_FCHMOD=" + ("ok" if ok else "wrong"), file=sys.stderr)
"""


def make_file(path, uid, mode):
    with open(path, "w") as f:
        f.write("host data\n")
    os.chown(path, uid, uid)
    os.chmod(path, mode)


def state(path):
    st = os.lstat(path)
    return (st.st_mode, st.st_uid, st.st_gid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("handed_over: needs root (to start runs as root and as another user)")
        return 77
    # The other user must reach flatux and the files: a folder of the run's
    # own under /tmp (a checkout may lie where only root can look).
    work = tempfile.mkdtemp(prefix="flatux-handed-over-")
    os.chmod(work, 0o755)
    try:
        return attack(a, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def hand_over(listener, path):
    """Serves one connection: a read-only descriptor of `path`, as a host
    program hands a file to a guest."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    with conn:
        fd = os.open(path, os.O_RDONLY)
        try:
            socket.send_fds(conn, [b"x"], [fd])
        finally:
            os.close(fd)
        conn.recv(1)  # until the guest is done with its end


def attack(a, work):
    flatux = os.path.join(work, "flatux")
    shutil.copy2(a.flatux, flatux)
    failures = []
    for who, uid in (("root", 0), ("user", 65534)):
        for ro in (False, True):
            tag = f"{who}{'-ro' if ro else ''}"
            out, inp, victim = (os.path.join(work, f"{tag}.{n}") for n in ("out", "in", "victim"))
            make_file(out, uid, 0o600)
            make_file(inp, uid, 0o600)
            make_file(victim, 65534 if uid == 0 else uid, 0o644)
            before = {p: state(p) for p in (out, inp, victim)}
            peer = os.path.join(work, f"{tag}.sock")
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(peer)
            os.chmod(peer, 0o777)
            listener.listen(1)
            listener.settimeout(120)
            server = threading.Thread(target=hand_over, args=(listener, victim))
            server.start()
            argv = [flatux, "run"] + (["--ro"] if ro else []) + ["--", PYTHON, "-c", GUEST, peer]
            if uid:
                argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] + argv
            with open(inp, "rb") as fin, open(out, "ab") as fout:
                r = subprocess.run(argv, stdin=fin, stdout=fout, stderr=subprocess.PIPE, timeout=120)
            server.join()
            listener.close()
            said = r.stderr.decode(errors="replace")
            print(f"[{tag}] exit {r.returncode}: {said.strip()}")
            if r.returncode != 0 or "ANON_FCHMOD=ok" not in said:
                failures.append(f"{tag}: the guest did not run to its end (exit {r.returncode})")
            for p, was in before.items():
                now = state(p)
                if now != was:
                    failures.append(f"{tag}: {os.path.basename(p)} changed from mode {was[0]:o} "
                                    f"owner {was[1]}:{was[2]} to mode {now[0]:o} owner {now[1]}:{now[2]}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

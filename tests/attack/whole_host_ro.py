#!/usr/bin/env python3
"""`flatux run --ro` with the whole host as the root (the default --root /):
a guest that owns the kernel and calls the host through a gadget must not
change any host file, metadata included: no set-uid bit, no owner, no time,
no xattr, no byte. Run started by root and by an ordinary user (setpriv),
each checked from the host side.

    whole_host_ro.py --flatux FLATUX --attacker ATTACKER --work DIR
"""
import argparse
import os
import pwd
import shutil
import subprocess
import sys

from attack import snapshot
from verdict import finish


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--attacker", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skipped: needs root (the run as another user is started with setpriv)")
        return 77
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chmod(work, 0o755)
    attacker = os.path.join(work, "attacker")
    shutil.copy2(a.attacker, attacker)
    os.chmod(attacker, 0o755)
    failures = []
    user = pwd.getpwnam("nobody")
    for who in ("root", "user"):
        victim = os.path.join(work, f"victim-{who}")
        with open(victim, "w") as f:
            f.write("this host file must not change\n")
        if who == "user":
            os.chown(victim, user.pw_uid, user.pw_gid)
        os.chmod(victim, 0o644)
        before = snapshot(victim)
        env = dict(os.environ, ATTACK_WHOLE_HOST_RO="1", ATTACK_VICTIM=victim, ATTACK_MARKER=victim,
                   ATTACK_OUTSIDE=work, ATTACK_VICTIM_PID=str(os.getpid()))
        argv = [a.flatux, "run", "--ro", "--security", "--", attacker]
        if who == "user":
            argv = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"] + argv
        r = subprocess.run(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=120)
        print(f"$ {' '.join(argv)}  (as {who})\n{r.stdout}{r.stderr}exit status {r.returncode}")
        if "GADGET host_pid=" not in r.stdout:
            failures.append(f"{who}: the attacker found no gadget: the test proves nothing")
        if "ESCAPED" in r.stdout or r.returncode != 0:
            failures.append(f"{who}: a probe was not refused (exit status {r.returncode})")
        if snapshot(victim) != before:
            failures.append(f"{who}: the host file changed: {before[:4]} -> {snapshot(victim)[:4]}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

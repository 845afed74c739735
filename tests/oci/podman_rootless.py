#!/usr/bin/env python3
"""Rootless podman with `--runtime build/flatux-oci`: podman run by an
ordinary user (its own user namespace: uid 0 there is the user, 1..65536
its subordinate ids). run --rm (output, exit code), -e -w --user, a bind
mount of the user's folder, -d with exec and stop, --userns=keep-id (the
user's own files are the container user's), and no state left in the
user's runtime folder. runc is run first the same way: where it cannot run
rootless here, the test is skipped (77). As root, the test makes the user
(flatux-rootless) and its subordinate ids if they are missing."""
import argparse
import os
import pwd
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_common import check, engine_missing, failures, make_rootfs  # noqa: E402

USER = "flatux-rootless"
IMAGE = "localhost/flatux-oci-busybox:1"


def ensure_user():
    """The user, with subordinate ids and a runtime folder: (uid, gid, home, runtime dir)."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True)
        pw = pwd.getpwnam(USER)
    for f in ("/etc/subuid", "/etc/subgid"):
        text = open(f).read() if os.path.exists(f) else ""
        if not any(line.startswith(USER + ":") for line in text.splitlines()):
            with open(f, "a") as out:
                out.write(f"{USER}:300000:65536\n")
    run_dir = f"/run/user/{pw.pw_uid}"
    os.makedirs(run_dir, exist_ok=True)
    os.chown(run_dir, pw.pw_uid, pw.pw_gid)
    os.chmod(run_dir, 0o700)
    return pw.pw_uid, pw.pw_gid, pw.pw_dir, run_dir


class RootlessPodman:
    def __init__(self, work, runtime, home, run_dir):
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n'
                    'events_logger = "file"\n')
        os.chmod(conf, 0o644)
        self.runtime = runtime
        self.env = ["env", f"XDG_RUNTIME_DIR={run_dir}", f"HOME={home}", f"CONTAINERS_CONF={conf}", f"USER={USER}"]
        self.base = ["podman", "--root", os.path.join(work, "storage"), "--runroot", os.path.join(work, "run"),
                     "--storage-driver", "vfs", "--tmpdir", os.path.join(work, "tmp")]

    def __call__(self, *args, runtime=None, timeout=120):
        cmd = ["runuser", "-u", USER, "--", *self.env, *self.base, "--runtime", runtime or self.runtime, *args]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/")
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(cmd, -1, e.stdout or "", f"timed out: {e.stderr}")


def import_image(pm, work, uid, gid):
    root = os.path.join(work, "rootfs")
    make_rootfs(root)
    os.makedirs(os.path.join(root, "home", "u"), exist_ok=True)
    tar = os.path.join(work, "rootfs.tar")
    with tarfile.open(tar, "w") as t:
        t.add(root, arcname=".")
    os.chown(tar, uid, gid)
    return pm("import", tar, IMAGE)


def rootless(pm, work, uid, gid, run_dir):
    r = pm("run", "--rm", "--network", "none", IMAGE, "echo", "hello")
    check(r.returncode == 0 and r.stdout == "hello\n", f"rootless run --rm echo ({r.stdout!r} {r.stderr.strip()[-300:]})")
    check("sandbox: missing" not in r.stdout + r.stderr, "the sandbox's warnings stay out of the container's output")
    r = pm("run", "--rm", "--network", "none", IMAGE, "sh", "-c", "exit 7")
    check(r.returncode == 7, f"exit code 7 ({r.returncode})")
    r = pm("run", "--rm", "--network", "none", "-e", "FOO=bar", "-w", "/tmp", "--user", "1000:1000", IMAGE,
           "sh", "-c", "echo $FOO; pwd; id -u")
    check(r.stdout.split() == ["bar", "/tmp", "1000"], f"-e -w --user ({r.stdout!r} {r.stderr.strip()[-200:]})")
    vol = os.path.join(work, "vol")
    os.makedirs(vol)
    os.chown(vol, uid, gid)
    r = pm("run", "--rm", "--network", "none", "-v", f"{vol}:/data", IMAGE, "sh", "-c",
           "echo from-ctr > /data/out; stat -c %u /data/out")
    out = os.path.join(vol, "out")
    check(r.stdout.strip() == "0" and os.path.exists(out) and os.stat(out).st_uid == uid,
          f"-v: the container's root writes the user's folder as the user ({r.stdout!r} {r.stderr.strip()[-200:]})")
    r = pm("run", "--rm", "--network", "none", "--userns=keep-id", "-v", f"{vol}:/data", IMAGE, "sh", "-c",
           "id -u; stat -c %u /data/out; echo kept > /data/kept")
    kept = os.path.join(vol, "kept")
    check(r.stdout.split() == [str(uid), str(uid)] and os.path.exists(kept) and os.stat(kept).st_uid == uid,
          f"--userns=keep-id: the user is itself in the container ({r.stdout!r} {r.stderr.strip()[-200:]})")
    r = pm("run", "-d", "--network", "none", "--name", "rl", IMAGE, "sleep", "100")
    check(r.returncode == 0, f"run -d ({r.stderr.strip()[-200:]})")
    r = pm("exec", "rl", "sh", "-c", "echo in-exec; exit 3")
    check(r.returncode == 3 and r.stdout == "in-exec\n", f"exec ({r.returncode} {r.stderr.strip()[-200:]})")
    r = pm("stop", "-t", "1", "rl")
    r = pm("inspect", "--format", "{{.State.ExitCode}}", "rl")
    check(r.stdout.strip() == "137", f"stop: SIGKILL after 1 s ({r.stdout.strip()})")
    pm("rm", "-f", "rl")
    state = os.path.join(run_dir, "flatux-oci")
    left = os.listdir(state) if os.path.isdir(state) else []
    check(left == [], f"the state is kept in the user's runtime folder and removed ({left})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    args = ap.parse_args()
    skip = engine_missing(["podman", "runuser", "useradd", "newuidmap"],
                          "making the rootless user needs root")
    if skip:
        print("SKIP: " + skip)
        return 77
    uid, gid, home, run_dir = ensure_user()
    work = tempfile.mkdtemp(prefix="flatux-rootless-", dir="/tmp")
    os.chmod(work, 0o755)
    os.chown(work, uid, gid)
    runtime = os.path.abspath(args.runtime)
    pm = RootlessPodman(work, runtime, home, run_dir)
    try:
        r = import_image(pm, work, uid, gid)
        if r.returncode != 0:
            print(f"SKIP: rootless podman cannot import an image here: {r.stderr.strip()[-300:]}")
            return 77
        r = pm("run", "--rm", "--network", "none", IMAGE, "echo", "hello", runtime="/usr/bin/runc")
        if r.returncode != 0 or r.stdout != "hello\n":
            print(f"SKIP: rootless podman cannot run containers with runc here: {r.stderr.strip()[-300:]}")
            return 77
        rootless(pm, work, uid, gid, run_dir)
    finally:
        pm("rm", "-a", "-f")
        subprocess.run(["runuser", "-u", USER, "--", *pm.env, *pm.base, "system", "reset", "-f"],
                       capture_output=True, cwd="/")
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failures" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

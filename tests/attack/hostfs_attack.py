#!/usr/bin/env python3
"""hostfs attacked with ordinary system calls, checked from the host.

    hostfs_attack.py --flatux FLATUX --prog PROG --work DIR [--boot|--native] race mount|chmod|dotdot SECONDS
    hostfs_attack.py --flatux FLATUX --prog PROG --work DIR [--boot] plant [--host-owners]

--boot: the program is init of a booted ext4 image whose kernel has
hostfs=JAIL; it mounts the jail and makes it its root (boot_init.h).

race: race.c runs as root of a writable guest root (the jail) with a
folder next to it (outside) holding a secret and a file that must not
change. The host's own confinement is off (--no-sandbox), so only hostfs
stands between the guest and that folder. Afterwards nothing outside may
have changed and the guest must have seen nothing of it. --native runs the
same program chrooted into the jail on the host kernel, which proves the
program's own checks right.

plant: plant.c makes set-id programs, device nodes and another user's
files as guest root; from the host, every file of the jail must be the
invoking user's, never set-uid or set-gid, never a device node. With
--host-owners (flatux --hostfs-owners=host --keep-root: trusted use) they
go to the host as asked instead, which is checked too.
"""
import argparse
import os
import shutil
import stat
import subprocess
import sys

from verdict import finish


def snapshot(path):
    st = os.lstat(path)
    with open(path, "rb") as f:
        data = f.read()
    return (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_size, data, tuple(sorted(os.listxattr(path))))


def guest(a, work, jail, flatux_args, prog_args):
    """flatux's argv running the program in the jail, as `flatux run` or booted."""
    if a.native:
        return ["chroot", jail, "/prog"] + prog_args
    if not a.boot:
        return [a.flatux, "run"] + flatux_args + ["--root", jail, "--", "/prog"] + prog_args
    image_root = os.path.join(work, "image-root")
    os.makedirs(os.path.join(image_root, "mnt"), exist_ok=True)
    shutil.copy2(a.prog, os.path.join(image_root, "prog"))
    image = os.path.join(work, "root.ext4")
    subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-d", image_root, image, "32M"], check=True)
    return [a.flatux] + flatux_args + [f"ubd0={image}", "rw", f"hostfs={jail}", "init=/prog", "loglevel=3",
                                       "--", "--boot", jail] + prog_args


def guest_status(a, status, out):
    """The program's exit status: booted, what it said before powering off."""
    if not a.boot:
        return status
    said = [l for l in out.splitlines() if l.startswith("ATTACK_STATUS=")]
    return int(said[-1].split("=")[1]) if said and status == 0 else 100 + status


def run(argv, timeout):
    print("$", " ".join(argv), flush=True)
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout)
    out = r.stdout.decode(errors="replace")
    print(out, end="")
    return r.returncode, out


def race(a, work, jail, outside):
    kind, seconds = a.args[0], a.args[1]
    marker = os.path.join(outside, "marker")
    victim = os.path.join(outside, "victim")
    with open(marker, "w") as f:
        f.write("outside the guest root\n")
    with open(victim, "w") as f:
        f.write("must not change\n")
    os.chmod(victim, 0o644)
    before = {p: snapshot(p) for p in (marker, victim)}
    status, out = run(guest(a, work, jail, ["--no-sandbox"], [kind, seconds, jail, outside]),
                      timeout=float(seconds) + 120)
    status = guest_status(a, status, out)
    failures = []
    if status != 0 or "ESCAPED" in out:
        failures.append(f"the guest reached the folder outside (status {status})")
    if " race: " not in out:
        failures.append("the race did not run")
    for p, snap in before.items():
        if not os.path.lexists(p) or snapshot(p) != snap:
            failures.append(f"{p} changed: {snap[:5]} -> {snapshot(p)[:5] if os.path.lexists(p) else 'gone'}")
    if sorted(os.listdir(outside)) != ["marker", "victim"]:
        failures.append(f"the folder outside changed: {sorted(os.listdir(outside))}")
    return failures


def plant(a, work, jail):
    if not a.boot:
        shutil.copy2(a.prog, os.path.join(jail, "prog"))
    owners = ["--hostfs-owners=host", "--keep-root"] if a.host_owners else []
    status, out = run(guest(a, work, jail, owners, []), timeout=120)
    status = guest_status(a, status, out)
    failures = []
    if status != 0:
        failures.append(f"the guest did not see what it made (status {status})")
    me = os.geteuid()
    seen = {}
    for dirpath, dirnames, filenames in os.walk(jail):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            seen[os.path.relpath(path, jail)] = st
            if a.host_owners:
                continue
            if st.st_uid != me:
                failures.append(f"{path} belongs to uid {st.st_uid} on the host, not {me}")
            if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                failures.append(f"{path} is set-id on the host: {oct(st.st_mode)}")
            if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
                failures.append(f"{path} is a host device node")
    for name in ("suid", "sda", "mem", "pub/user-file"):
        if name not in seen:
            failures.append(f"/{name} was not made")
    if a.host_owners:
        # Trusted use: the host holds what the guest asked for.
        want = {"suid": lambda s: s.st_mode & stat.S_ISUID and s.st_uid == 0,
                "mem": lambda s: stat.S_ISCHR(s.st_mode),
                "pub/user-file": lambda s: s.st_uid == 1000 and s.st_gid == 100}
        for name, ok in want.items():
            if name in seen and not ok(seen[name]):
                st = seen[name]
                failures.append(f"--hostfs-owners=host: /{name} is {oct(st.st_mode)} {st.st_uid}:{st.st_gid} on the host")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--host-owners", action="store_true")
    ap.add_argument("--boot", action="store_true", help="init of a booted image with hostfs=JAIL")
    ap.add_argument("--native", action="store_true", help="chrooted into the jail on the host kernel")
    ap.add_argument("what", choices=["race", "plant"])
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skipped: the guest must be root on a root folder the invoking user owns; run as root")
        return 77
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    jail = os.path.join(work, "jail")
    outside = os.path.join(work, "outside")
    os.makedirs(jail)
    os.makedirs(outside)
    if a.what == "race":
        if not a.boot:
            shutil.copy2(a.prog, os.path.join(jail, "prog"))
        failures = race(a, work, jail, outside)
    else:
        failures = plant(a, work, jail)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())

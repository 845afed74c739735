#!/usr/bin/env python3
"""Runs attacker.c as a guest and checks, from the host, that it got nothing.

    attack.py --flatux FLATUX --attacker PROG --work DIR --mode gadget|heap
              --how run|boot [--ro] [--net-none] [--layout-file FILE] [--dynamic]

Around a fresh guest root (the jail) it sets up what a guest must not
reach: a secret file and a file that must not change in a folder next to
the jail, a host process that must not be signalled, a TCP and a UDP
listener on 127.0.0.1, an AF_UNIX listener by path and one by abstract
name. The attacker runs under `flatux run --root JAIL` (--how run) or as
init of a booted ext4 image with hostfs=JAIL (--how boot). Then the host
side is checked: the gadget really reached the host (its getpid is
flatux's pid), nothing outside changed, the victim process got no signal,
the listeners got nothing, nothing was mounted.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

SECRET = "flatux attack marker: outside the guest root\n"
UNTOUCHED = "this host file must not change\n"
VICTIM_CODE = r"""
import os, signal, sys, time
log = sys.argv[1]
def note(sig, frame):
    with open(log, "a") as f:
        f.write(f"signal {sig}\n")
for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, note)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def libs_of(prog):
    """The shared objects a glibc program loads, with the loader."""
    out = subprocess.run(["ldd", prog], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in out.splitlines():
        parts = line.split()
        for p in parts:
            if p.startswith("/") and os.path.exists(p):
                paths.append(p)
    return paths


def make_root(root, attacker, dynamic):
    os.makedirs(root)
    for d in ("tmp", "mnt", "dev", "proc", "sys"):
        os.makedirs(os.path.join(root, d))
    shutil.copy2(attacker, os.path.join(root, "attacker"))
    with open(os.path.join(root, "inside"), "w") as f:
        f.write("inside the guest root\n")
    if dynamic:
        for lib in libs_of(attacker):
            dest = os.path.join(root, lib.lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(lib, dest)


def snapshot(path):
    st = os.lstat(path)
    try:
        xattrs = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError:
        xattrs = []
    with open(path, "rb") as f:
        data = f.read()
    return (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_ino, data, tuple(xattrs))


def run_processes(flatux, jail):
    """Host processes of flatux's binary whose command line names the jail:
    once flatux has exited there must be none (a raw clone of the kernel's
    process is a copy of it, command line included)."""
    exe = os.path.realpath(flatux)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") != exe:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if jail.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def keep_connecting(name, stop, reached):
    """Connects to the abstract name the attacker listens on under
    --net=none, again and again while the run lasts; any success is noted."""
    while not stop.is_set():
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.connect("\0" + name)
            reached.append(name)
        except OSError:
            pass
        finally:
            c.close()
        stop.wait(0.05)


def mounted_under(path):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(path)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--attacker", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--mode", choices=["gadget", "heap"], required=True)
    ap.add_argument("--how", choices=["run", "boot"], required=True)
    ap.add_argument("--ro", action="store_true")
    ap.add_argument("--net-none", action="store_true")
    ap.add_argument("--layout-file", default="")
    ap.add_argument("--dynamic", action="store_true", help="the attacker is a glibc dynamic program")
    ap.add_argument("--fork", action="store_true", help="attack from a forked guest (a host process of its own)")
    ap.add_argument("--flatux-arg", action="append", default=[])
    ap.add_argument("--expect-escape", action="store_true",
                    help="the harness's own check: unconfined (--no-sandbox) the attacker must get through")
    ap.add_argument("--without", default="",
                    help="LAYER[,LAYER]: run with --sandbox-without=...; the probes named by --escapes "
                         "must then get through (what the layers left out hold alone)")
    ap.add_argument("--escapes", default="", help="probe names that must escape (with --without)")
    ap.add_argument("--stdin-file", action="store_true",
                    help="flatux's standard input is a host file outside the root (else /dev/null)")
    ap.add_argument("--held", default="",
                    help="probe names the layers left in must still refuse (with --without)")
    ap.add_argument("--clone-flood", type=int, default=0,
                    help="the attacker also makes up to N raw host processes; the host must refuse some")
    ap.add_argument("--mem-hog", type=int, default=0,
                    help="run with --mem=64M; the attacker also populates N MiB of raw host memory: the run "
                         "must be refused it or killed")
    ap.add_argument("--needs-root", action="store_true", help="skip (77) unless run by root")
    a = ap.parse_args()
    if a.needs_root and os.geteuid() != 0:
        print("skipped: what this run shows needs flatux started by root")
        return 77
    if a.without:
        a.flatux_arg.append("--sandbox-without=" + a.without)

    work = os.path.abspath(a.work)
    for m in mounted_under(work):
        subprocess.run(["umount", "-l", m])
    shutil.rmtree(work, ignore_errors=True)
    jail = os.path.join(work, "jail")
    outside = os.path.join(work, "outside")
    os.makedirs(os.path.join(outside, "mnt"))
    marker = os.path.join(outside, "marker")
    victim = os.path.join(outside, "victim")
    with open(marker, "w") as f:
        f.write(SECRET)
    os.chmod(marker, 0o600)
    with open(victim, "w") as f:
        f.write(UNTOUCHED)
    os.chmod(victim, 0o644)
    make_root(jail, a.attacker, a.dynamic)
    signals_log = os.path.join(work, "victim-signals")

    victim_proc = subprocess.Popen([sys.executable, "-c", VICTIM_CODE, signals_log],
                                   stdout=subprocess.PIPE, start_new_session=True)
    victim_proc.stdout.readline()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = os.path.join(outside, "sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(unix_path)
    unix.listen(8)
    unix.setblocking(False)
    abstract_name = f"flatux-attack-{os.getpid()}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen(8)
    abstract.setblocking(False)
    # An image granted read-only (ubd1r=), beside the folders.
    ro_image = os.path.join(work, "ro-image")
    with open(ro_image, "wb") as f:
        f.write(b"read-only image\n" * 4096)
    os.chmod(ro_image, 0o644)
    # flatux's standard input: a host file outside the root, handed over to
    # be read, never written.
    stdin_file = os.path.join(outside, "stdin")
    with open(stdin_file, "w") as f:
        f.write("standard input, read-only\n")
    os.chmod(stdin_file, 0o644)
    before = {name: snapshot(os.path.join(outside, name)) for name in ("marker", "victim", "stdin")}
    before_image = snapshot(ro_image)
    listing = sorted(os.listdir(outside))

    env = {
        "ATTACK_MODE": a.mode,
        "ATTACK_MARKER": marker,
        "ATTACK_VICTIM": victim,
        "ATTACK_OUTSIDE": outside,
        "ATTACK_JAIL": jail,
        "ATTACK_VICTIM_PID": str(victim_proc.pid),
        "ATTACK_UNIX": unix_path,
        "ATTACK_ABSTRACT": abstract_name,
        "ATTACK_TCP_PORT": str(tcp.getsockname()[1]),
        "ATTACK_UDP_PORT": str(udp.getsockname()[1]),
        "ATTACK_NET_NONE": "1" if a.net_none else "0",
        "ATTACK_LAYOUT": open(a.layout_file).read().strip() if a.layout_file else "",
        "ATTACK_FORK": "1" if a.fork else "0",
        "ATTACK_RO_IMAGE": ro_image,
        "ATTACK_STDIN_FILE": "1" if a.stdin_file else "0",
        "ATTACK_LISTEN": f"flatux-attack-listen-{os.getpid()}",
        "ATTACK_CLONE_FLOOD": str(a.clone_flood),
        "ATTACK_MEM_HOG": str(a.mem_hog),
    }
    net = ["--net=none"] if a.net_none else []
    if a.how == "run":
        argv = [a.flatux, "run", "--root", jail, "--ubd", f"1r={ro_image}"] + (["--ro"] if a.ro else []) + net
        argv += a.flatux_arg + ["--security"] + (["--mem=64M"] if a.mem_hog else [])
        argv += ["--", "/attacker"]
        run_env = dict(os.environ, **env)
    else:
        image_root = os.path.join(work, "image-root")
        make_root(image_root, a.attacker, a.dynamic)
        image = os.path.join(work, "root.ext4")
        subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-d", image_root, image, "64M"], check=True)
        env["ATTACK_HOSTFS_AT"] = "/mnt"
        env["ATTACK_POWEROFF"] = "1"
        argv = [a.flatux] + net + a.flatux_arg + ["--security", f"ubd0={image}", f"ubd1r={ro_image}", "rw", f"hostfs={jail}",
                                                   "init=/attacker", "loglevel=3"]
        argv += [f"{k}={v}" for k, v in env.items()]
        run_env = dict(os.environ)
    print("$", " ".join(argv), flush=True)
    start = time.monotonic()
    stop, reached = threading.Event(), []
    connector = threading.Thread(target=keep_connecting, args=(env["ATTACK_LISTEN"], stop, reached))
    connector.start()
    with open(stdin_file if a.stdin_file else os.devnull, "rb") as stdin:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=run_env)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    stop.set()
    connector.join()
    survivors = run_processes(a.flatux, jail)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    out = out.decode(errors="replace")
    print(out, end="")
    print(f"(flatux pid {proc.pid}, exit status {proc.returncode}, {time.monotonic() - start:.2f} s)")

    failures = []
    gadget = [l for l in out.splitlines() if l.startswith("GADGET host_pid=")]
    if not gadget:
        failures.append("the attacker found no host gadget: the test proves nothing")
    else:
        fields = dict(w.split("=") for w in gadget[0].split() if "=" in w)
        host_pid, host_ppid = int(fields["host_pid"]), int(fields["host_ppid"])
        # Forked, the attacker's host process is the kernel's process's
        # child. In the run's own pid namespace the kernel's process is pid 2
        # (below the run's init); the guest's init is pid 1 to itself.
        kernel = 2 if "sandbox: processes: a pid namespace" in out else proc.pid
        want = host_ppid if a.fork else host_pid
        if want != kernel or (a.fork and host_pid == kernel):
            failures.append(f"the gadget's getpid/getppid said {host_pid}/{host_ppid}, the kernel's process is "
                            f"{kernel}: not the host's")
    escaped = [l for l in out.splitlines() if l.startswith("ESCAPED")]
    if escaped:
        failures.append(f"{len(escaped)} probe(s) were not refused")
    if (a.mem_hog or a.clone_flood) and "missing a bound on host" in out:
        print("skipped: this host gives the run no cgroup of its own (said missing above)")
        os.killpg(victim_proc.pid, signal.SIGKILL)
        victim_proc.wait()
        return 77
    killed = a.mem_hog and proc.returncode == -signal.SIGKILL
    if killed:
        print("the run was killed (its memory cgroup's limit): the hog was held")
    if killed:
        pass
    elif a.how == "run":
        if proc.returncode != 0:
            failures.append(f"attacker exit status {proc.returncode}, want 0")
    elif "ATTACK_STATUS=0" not in out or proc.returncode != 0:
        failures.append(f"booted attacker did not finish cleanly (flatux status {proc.returncode})")
    if "probes," not in out and not killed:
        failures.append("the attacker did not run its probes")

    for name, snap in before.items():
        path = os.path.join(outside, name)
        if not os.path.lexists(path):
            failures.append(f"host file {path} is gone")
        elif snapshot(path) != snap:
            failures.append(f"host file {path} changed: {snap[:5]} -> {snapshot(path)[:5]}")
    if snapshot(ro_image) != before_image:
        failures.append(f"the read-only image {ro_image} changed: {before_image[:5]} -> {snapshot(ro_image)[:5]}")
    now = sorted(os.listdir(outside))
    if now != listing:
        failures.append(f"the folder outside the root changed: {listing} -> {now}")
    if os.listdir(os.path.join(outside, "mnt")) or mounted_under(os.path.join(outside, "mnt")):
        failures.append("something was mounted or made in the host folder")
        for m in mounted_under(outside):
            subprocess.run(["umount", "-l", m])
    # Nothing in the grant may carry a set-id bit (the host's own mount of
    # it is not nosuid).
    for d, dirs, files in os.walk(jail):
        for n in dirs + files:
            st = os.lstat(os.path.join(d, n))
            if st.st_mode & 0o6000:
                failures.append(f"{os.path.join(d, n)} in the grant: mode {st.st_mode:o}, owner {st.st_uid}:{st.st_gid}")
    outlived = bool(survivors)
    if outlived:
        failures.append(f"{len(survivors)} host process(es) of the run outlived it: {survivors[:10]}")
    if reached:
        failures.append(f"a host process connected to the run's abstract name @{reached[0]} under --net=none")
    if victim_proc.poll() is not None:
        failures.append("the host victim process died")
    if os.path.exists(signals_log):
        with open(signals_log) as f:
            failures.append(f"the host victim process was signalled: {f.read().strip()}")
    for name, s in (("tcp", tcp), ("unix", unix), ("abstract", abstract)):
        try:
            conn, _ = s.accept()
            conn.close()
            failures.append(f"the host {name} listener was connected to")
        except BlockingIOError:
            pass
    try:
        data = udp.recv(64)
        failures.append(f"the host UDP socket received {data!r}")
    except BlockingIOError:
        pass

    os.killpg(victim_proc.pid, signal.SIGKILL)
    victim_proc.wait()
    for f in failures:
        print("FAIL:", f)
    if a.without:
        # Each named probe must be seen getting through: without the layers
        # left out, nothing else refuses it.
        got = {l.split()[1].rstrip(":") for l in escaped}
        if outlived:
            got.add("outlive")
        if reached:
            got.add("abstract-listen-host")
        want = [n for n in a.escapes.split(",") if n]
        held = [n for n in want if n not in got]
        for n in held:
            print(f"FAILED: without {a.without}, probe {n} was still refused: that layer is not what holds it")
        denied = {l.split()[1].rstrip(":") for l in out.splitlines() if l.startswith("denied ")}
        lost = [n for n in a.held.split(",") if n and n not in denied]
        for n in lost:
            print(f"FAILED: without {a.without}, probe {n} was not refused: the other layers must hold it")
        held += lost
        if not gadget or not want:
            print("FAILED: no gadget, or no probe named")
            return 1
        print(f"ok: without {a.without}, {', '.join(want)} got through" if not held else "FAILED")
        return 1 if held else 0
    if a.expect_escape:
        # Unconfined, the probes must get through and the host side must see it.
        host_seen = [f for f in failures if f.startswith(("host ", "the "))]
        got_through = bool(escaped) and bool(host_seen) and bool(gadget)
        print("ok: the harness sees an unconfined attacker get through" if got_through
              else "FAILED: an unconfined attacker went unnoticed")
        return 0 if got_through else 1
    print("ok" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

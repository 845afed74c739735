#!/usr/bin/env python3
"""podman with `--runtime build/flatux-oci`, as a user runs containers:
an image imported offline from a busybox root, then run --rm (output and
exit codes), -e, -w, --user, --hostname, -v (rw and :ro), --tmpfs,
--read-only, --memory (memory.max, the OOM killer), --pids-limit, -d with logs, exec (-i, -d, -e, -w, --user), run -it and exec -it on a pty with ^C, kill -s, stop -t (SIGTERM, then
SIGKILL for an init without a handler), rm -f, --network none, and the
default bridge network with -p (a server in the container answers the
host through the port mapping). Skipped (77) where podman is missing or
cannot run containers here at all (checked with runc first)."""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_common import check, engine_missing, failures, make_rootfs  # noqa: E402

IMAGE = "localhost/flatux-oci-busybox:1"



class Podman:
    def __init__(self, work, runtime):
        self.runtime = runtime
        conf = os.path.join(work, "containers.conf")
        with open(conf, "w") as f:
            # This machine's hard RLIMIT_NOFILE is below podman's default
            # ulimit for containers; the journal is not there in CI.
            f.write('[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n'
                    'events_logger = "file"\n')
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        self.base = ["podman", "--root", os.path.join(work, "storage"), "--runroot", os.path.join(work, "run"),
                     "--storage-driver", "vfs", "--tmpdir", os.path.join(work, "tmp")]

    def __call__(self, *args, runtime=None, timeout=90, input=None):
        cmd = self.base + ["--runtime", runtime or self.runtime, *args]
        try:
            return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(cmd, -1, e.stdout or "", f"timed out: {e.stderr}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def import_image(pm, work):
    root = os.path.join(work, "rootfs")
    make_rootfs(root)
    tar = os.path.join(work, "rootfs.tar")
    with tarfile.open(tar, "w") as t:
        t.add(root, arcname=".")
    return pm("import", tar, IMAGE)


def basics(pm):
    r = pm("run", "--rm", IMAGE, "echo", "hello")
    check(r.returncode == 0 and r.stdout == "hello\n", f"run --rm echo ({r.stdout!r} {r.stderr.strip()})")
    r = pm("run", "--rm", IMAGE, "sh", "-c", "exit 7")
    check(r.returncode == 7, f"exit code 7 ({r.returncode})")
    r = pm("run", "--rm", "-e", "FOO=bar", "-w", "/tmp", "--user", "1000:1000", "--hostname", "hh", IMAGE,
           "sh", "-c", "echo $FOO; pwd; id -u; id -g; hostname")
    check(r.stdout.split() == ["bar", "/tmp", "1000", "1000", "hh"], f"-e -w --user --hostname ({r.stdout!r})")


def volumes(pm, work):
    vol = os.path.join(work, "vol")
    os.makedirs(vol)
    with open(os.path.join(vol, "in"), "w") as f:
        f.write("from-host\n")
    r = pm("run", "--rm", "-v", f"{vol}:/data", IMAGE, "sh", "-c", "cat /data/in; echo from-ctr > /data/out")
    check("from-host" in r.stdout and open(os.path.join(vol, "out")).read() == "from-ctr\n", f"-v rw ({r.stderr.strip()})")
    r = pm("run", "--rm", "-v", f"{vol}:/data:ro", IMAGE, "sh", "-c", "echo x > /data/no")
    check(r.returncode != 0 and not os.path.exists(os.path.join(vol, "no")), "-v :ro refuses writes")
    r = pm("run", "--rm", "--tmpfs", "/scratch", IMAGE, "sh", "-c", "echo x > /scratch/t && cat /scratch/t")
    check(r.returncode == 0 and r.stdout == "x\n", f"--tmpfs ({r.stderr.strip()})")
    r = pm("run", "--rm", "--read-only", IMAGE, "sh", "-c", "echo x > /x")
    check(r.returncode != 0 and "Read-only" in r.stderr, f"--read-only ({r.stderr.strip()})")


def memory(pm):
    r = pm("run", "--rm", "--memory", "64m", IMAGE, "sh", "-c",
           "head -1 /proc/meminfo; cat /sys/fs/cgroup/memory.max /proc/self/cgroup")
    lines = r.stdout.split("\n")
    kb = int(lines[0].split()[1]) if lines[0].startswith("MemTotal:") else 0
    check(kb == 65536, f"--memory 64m: /proc/meminfo shows 64 MiB ({r.stdout.strip()})")
    check(lines[1:3] == ["67108864", "0::/"], f"--memory 64m: the container's cgroup has memory.max ({lines[1:3]})")
    # Past memory.max the OOM killer ends the process, as Linux's memory
    # cgroup does (runc: 137 too); a mapping past it is not refused.
    r = pm("run", "--rm", "--memory", "64m", IMAGE, "sh", "-c",
           "x=$(head -c 150000000 /dev/zero | tr '\\0' a); echo survived ${#x}")
    check(r.returncode == 137 and "survived" not in r.stdout, f"past --memory: OOM-killed, 137 ({r.returncode})")
    r = pm("run", "--rm", "--pids-limit", "5", IMAGE, "sh", "-c",
           "cat /sys/fs/cgroup/pids.max; for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait")
    check(r.stdout.startswith("5\n") and "can't fork" in r.stderr, f"--pids-limit 5: pids.max, and fork fails past it ({r.stderr.strip()[-80:]})")


def detached(pm):
    r = pm("run", "-d", "--name", "trapper", IMAGE, "sh", "-c",
           "trap 'echo got-usr1' USR1; trap 'echo got-term; exit 5' TERM; echo up; while true; do sleep 0.1; done")
    check(r.returncode == 0, f"run -d ({r.stderr.strip()})")
    time.sleep(1)
    r = pm("ps", "--format", "{{.Names}} {{.Status}}")
    check("trapper Up" in r.stdout, f"ps shows it up ({r.stdout.strip()})")
    check(pm("kill", "-s", "USR1", "trapper").returncode == 0, "kill -s USR1")
    time.sleep(0.5)
    started = time.time()
    r = pm("stop", "-t", "5", "trapper")
    took = time.time() - started
    check(r.returncode == 0 and took < 4, f"stop: SIGTERM ends a program with a handler at once ({took:.1f} s)")
    r = pm("logs", "trapper")
    check(r.stdout.split() == ["up", "got-usr1", "got-term"], f"logs ({r.stdout!r})")
    r = pm("inspect", "--format", "{{.State.ExitCode}}", "trapper")
    check(r.stdout.strip() == "5", f"its exit code ({r.stdout.strip()})")
    check(pm("rm", "trapper").returncode == 0, "rm")
    r = pm("run", "-d", "--name", "execd", IMAGE, "sleep", "100")
    cid = r.stdout.strip()
    mine = [t for t in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup") if os.path.exists(f"{t}/libpod_parent/libpod-{cid}")]
    check(len(cid) == 64 and mine != [], "the container's host cgroup is podman's cgroupsPath (libpod_parent/libpod-ID)")
    r = pm("exec", "execd", "sh", "-c", "echo in-exec; exit 3")
    check(r.returncode == 3 and r.stdout == "in-exec\n", f"exec: output and exit code ({r.returncode} {r.stderr.strip()})")
    r = pm("exec", "-e", "X=1", "-w", "/tmp", "--user", "1000", "execd", "sh", "-c", "echo $X; pwd; id -u")
    check(r.stdout.split() == ["1", "/tmp", "1000"], f"exec -e -w --user ({r.stdout!r})")
    r = pm("exec", "-i", "execd", "cat", input="piped\n")
    check(r.stdout == "piped\n", f"exec -i: standard input reaches the process ({r.stdout!r})")
    r = pm("exec", "-d", "execd", "sleep", "1")
    check(r.returncode == 0, f"exec -d ({r.stderr.strip()})")
    pm("rm", "-f", "-t", "0", "execd")
    check(not any(os.path.exists(f"{t}/libpod_parent/libpod-{cid}") for t in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup")),
          "rm removes the container's host cgroup")
    pm("run", "-d", "--name", "sleeper", IMAGE, "sleep", "100")
    time.sleep(0.5)
    started = time.time()
    pm("stop", "-t", "1", "sleeper")
    took = time.time() - started
    r = pm("inspect", "--format", "{{.State.ExitCode}}", "sleeper")
    check(r.stdout.strip() == "137" and took >= 1,
          f"stop -t 1: an init without a handler ignores SIGTERM, SIGKILL after 1 s ({r.stdout.strip()}, {took:.1f} s)")
    pm("run", "-d", "--name", "forced", IMAGE, "sleep", "100")
    r = pm("rm", "-f", "-t", "0", "forced")
    check(r.returncode == 0 and "forced" not in pm("ps", "-a").stdout, "rm -f of a running container")
    pm("rm", "-f", "sleeper")


def on_terminal(argv, env, lines, seconds=20):
    """Runs argv on a new pty, typing each (text, wait) of `lines`; returns
    what the terminal showed and the exit code."""
    import pty
    import select
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    out = b""

    def read_for(sec):
        nonlocal out
        end = time.time() + sec
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return
                if not data:
                    return
                out += data

    read_for(2)
    for text, wait in lines:
        os.write(fd, text)
        read_for(wait)
    end = time.time() + seconds
    status = None
    while time.time() < end and status is None:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r == pid:
            status = os.waitstatus_to_exitcode(st)
        else:
            read_for(0.1)
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(fd)
    return out.decode(errors="replace"), status


def terminal(pm):
    argv = pm.base + ["--runtime", pm.runtime, "run", "--rm", "-it", IMAGE, "sh"]
    out, status = on_terminal(argv, pm.env, [(b"echo hello-$((6*7)); sleep 30\r", 1.5), (b"\x03", 1),
                                              (b"echo after-ctrl-c; exit 4\r", 1)])
    check("hello-42" in out, f"run -it: an interactive shell on a terminal ({out[-200:]!r})")
    check("after-ctrl-c" in out and status == 4, f"run -it: ^C reaches the container, exit 4 ({status})")
    pm("run", "-d", "--name", "jobs", IMAGE, "sleep", "100")
    argv = pm.base + ["--runtime", pm.runtime, "exec", "-it", "jobs", "sh"]
    out, status = on_terminal(argv, pm.env, [(b"tty; echo hello-$((6*7)); sleep 30\r", 1.5), (b"\x03", 1),
                                              (b"echo after-ctrl-c; exit 4\r", 1)])
    check("\n/dev/pts/" in out and "hello-42" in out, f"exec -it: a shell on a pty of its own ({out[-300:]!r})")
    check("after-ctrl-c" in out and status == 4,
          f"exec -it: ^C interrupts the shell's foreground job, not the shell; exit 4 ({status})")
    pm("rm", "-f", "-t", "0", "jobs")


def low_ports(pm):
    """Ports below 1024: the container's root binds them (it has
    CAP_NET_BIND_SERVICE), an ordinary user of the container does not, as
    with runc."""
    r = pm("run", "--rm", IMAGE, "sh", "-c", "httpd -p 80 -h /tmp && echo bound")
    check(r.stdout == "bound\n", f"root binds port 80 ({r.stderr.strip()})")
    r = pm("run", "--rm", "--user", "1000:1000", IMAGE, "sh", "-c", "httpd -p 80 -h /tmp && echo bound")
    check(r.stdout == "" and "Permission denied" in r.stderr, f"user 1000 cannot bind port 80 ({r.stdout!r})")
    r = pm("run", "--rm", "--user", "1000:1000", IMAGE, "sh", "-c", "httpd -p 8080 -h /tmp && echo bound")
    check(r.stdout == "bound\n", f"user 1000 binds port 8080 ({r.stderr.strip()})")


def cpu_settings(pm):
    """--cpus, --cpu-shares, --cpuset-cpus and --memory-reservation land in
    the container's host cgroup, as with runc (cgroup v1 here)."""
    r = pm("run", "-d", "--name", "cpu", "--cpus", "1.5", "--cpu-shares", "512", "--cpuset-cpus", "0",
           "--memory-reservation", "32m", IMAGE, "sleep", "100")
    cid = r.stdout.strip()
    want = {"cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "100000", "cpu/cpu.shares": "512",
            "cpuset/cpuset.cpus": "0", "memory/memory.soft_limit_in_bytes": str(32 << 20)}
    if not os.path.isdir("/sys/fs/cgroup/cpu"):
        print("skip: no cgroup v1 cpu hierarchy here")
        pm("rm", "-f", "-t", "0", "cpu")
        return
    got = {}
    for f in want:
        ctl, name = f.split("/")
        try:
            got[f] = open(f"/sys/fs/cgroup/{ctl}/libpod_parent/libpod-{cid}/{name}").read().strip()
        except OSError as e:
            got[f] = str(e)
    check(got == want, f"CPU settings in the host cgroup ({got})")
    usage = f"/sys/fs/cgroup/cpuacct/libpod_parent/libpod-{cid}/cpuacct.usage"
    check(os.path.exists(usage) and int(open(usage).read()) > 0, "the container's CPU time is accounted (cpuacct)")
    pm("rm", "-f", "-t", "0", "cpu")


def network(pm):
    r = pm("run", "--rm", "--network", "none", IMAGE, "sh", "-c", "ls /sys/class/net 2>/dev/null; cat /proc/net/dev 2>/dev/null | grep -c eth")
    check(r.returncode in (0, 1) and "eth" not in r.stdout.replace("0\n", ""), f"--network none has no eth ({r.stdout!r})")
    port = free_port()
    r = pm("run", "-d", "--name", "web", "-p", f"{port}:8080", "--sysctl", "net.ipv4.tcp_keepalive_time=111",
           "--sysctl", "kernel.shmmax=4096", IMAGE, "sh", "-c",
           "mkdir -p /www && echo served-by-flatux > /www/index.html && exec httpd -f -p 8080 -h /www")
    check(r.returncode == 0, f"run -d -p ({r.stderr.strip()})")
    body = ""
    for _ in range(50):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=2).read().decode()
            break
        except OSError:
            time.sleep(0.2)
    check(body == "served-by-flatux\n", f"a server in the container answers through -p ({body!r})")
    r = pm("exec", "web", "sh", "-c", "cat /proc/sys/kernel/shmmax; echo 1 > /proc/sys/kernel/shmmax || echo ro")
    check(r.stdout.split() == ["4096", "ro"], f"--sysctl kernel.*: the kernel's, under a read-only /proc/sys ({r.stdout!r})")
    pid = pm("inspect", "--format", "{{.State.Pid}}", "web").stdout.strip()
    r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "cat", "/proc/sys/net/ipv4/tcp_keepalive_time"],
                       capture_output=True, text=True)
    check(r.stdout.strip() == "111", f"--sysctl net.*: set in the container's network namespace ({r.stdout.strip()!r})")
    pm("rm", "-f", "-t", "0", "web")


def debian(pm, work, tree):
    """A Debian 12 root made with mmdebstrap (tools/build-debian-image's
    tree), imported offline: bash, python3 and apt run in it."""
    tar = os.path.join(work, "debian.tar")
    subprocess.run(["tar", "-C", tree, "-cf", tar, "."], check=True)
    r = pm("import", tar, "localhost/flatux-debian:12", timeout=300)
    check(r.returncode == 0, f"podman import of the Debian root ({r.stderr.strip()[-200:]})")
    os.unlink(tar)
    r = pm("run", "--rm", "localhost/flatux-debian:12", "bash", "-c",
           "cat /etc/debian_version; python3 -c 'import sys; print(sys.version_info[0])'; "
           "apt-get --version | head -1; id -un", timeout=120)
    lines = r.stdout.split("\n")
    check(r.returncode == 0 and lines[0].startswith("12.") and lines[1] == "3" and lines[2].startswith("apt ")
          and lines[3] == "root", f"bash, python3 and apt in a Debian container ({r.stdout!r} {r.stderr.strip()[-200:]})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--debian-root", help="a Debian root folder (tools/build-debian-image's tree): run that instead")
    args = ap.parse_args()
    skip = engine_missing(["podman"], "podman is run as root here (rootless podman needs subordinate ids)")
    if skip:
        print("SKIP: " + skip)
        return 77
    work = tempfile.mkdtemp(prefix="flatux-podman-", dir="/tmp")
    try:
        pm = Podman(work, os.path.abspath(args.runtime))
        r = import_image(pm, work)
        if r.returncode != 0:
            print(f"SKIP: podman import failed: {r.stderr.strip()}")
            return 77
        r = pm("run", "--rm", IMAGE, "true", runtime="/usr/bin/runc") if os.path.exists("/usr/bin/runc") else None
        if r is not None and r.returncode != 0:
            print(f"SKIP: podman cannot run containers here even with runc: {r.stderr.strip()}")
            return 77
        if args.debian_root:
            if not os.path.isdir(args.debian_root):
                print(f"SKIP: no Debian root at {args.debian_root}")
                return 77
            debian(pm, work, args.debian_root)
        else:
            basics(pm)
            volumes(pm, work)
            memory(pm)
            detached(pm)
            terminal(pm)
            low_ports(pm)
            network(pm)
            cpu_settings(pm)
        r = pm("ps", "-a", "-q")
        check(r.stdout.strip() == "", f"no container is left ({r.stdout.strip()})")
    finally:
        subprocess.run(["podman", "--root", os.path.join(work, "storage"), "--runroot", os.path.join(work, "run"),
                        "--storage-driver", "vfs", "rm", "-a", "-f"], capture_output=True,
                       env=dict(os.environ, CONTAINERS_CONF=os.path.join(work, "containers.conf")))
        subprocess.run(["podman", "--root", os.path.join(work, "storage"), "--runroot", os.path.join(work, "run"),
                        "--storage-driver", "vfs", "system", "reset", "-f"], capture_output=True,
                       env=dict(os.environ, CONTAINERS_CONF=os.path.join(work, "containers.conf")))
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failures" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

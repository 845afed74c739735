#!/usr/bin/env python3
"""flatux-oci driven directly, as an engine drives runc: create (the
program waits), start, state, kill, delete, run; what config.json asks
(identity, environment, mounts, read-only root); bad input refused with a
message; and, with --cycles N, N create/start/delete cycles that must
leave no host process, state, mount or descriptor behind.

The test is a child subreaper, as conmon is: a container's host process
(the pid in --pid-file) becomes its child once create has returned, and
its wait status must be the container program's."""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_common import check, descendants, failures, have_busybox, make_bundle  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36



class Runtime:
    def __init__(self, exe, root):
        self.exe, self.root = exe, root

    def __call__(self, *args, stdout=None, timeout=60):
        """Runs the runtime. Its output goes through files, not pipes: a
        container keeps the stdio of the create that made it."""
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            r = subprocess.run([self.exe, "--root", self.root, *args], stdout=stdout or out, stderr=err,
                               timeout=timeout)
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(r.args, r.returncode, "" if stdout else out.read(), err.read())

    def state(self, cid):
        r = self("state", cid)
        return json.loads(r.stdout) if r.returncode == 0 else None


def wait_for(pred, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def wait_status(pid, seconds=20):
    """The wait status of our (adopted) child pid, or None."""
    end = time.time() + seconds
    while time.time() < end:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r == pid:
            return st
        time.sleep(0.02)
    return None


def exit_code(st):
    if st is None:
        return None
    return os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)


def lifecycle(rt, work):
    bundle = os.path.join(work, "life")
    make_bundle(rt.exe, bundle, ["sh", "-c", "echo started > /tmp/marker; echo out; "
                                 "trap 'echo term; exit 9' TERM; while true; do sleep 0.05; done"])
    out_path = os.path.join(work, "life.out")
    pid_file = os.path.join(work, "life.pid")
    with open(out_path, "w") as out:
        r = rt("create", "--bundle", bundle, "--pid-file", pid_file, "life", stdout=out)
    check(r.returncode == 0, f"create returns 0 ({r.stderr.strip()})")
    st = rt.state("life")
    check(st is not None and st["status"] == "created", f"state after create is created ({st})")
    pid = int(open(pid_file).read())
    check(st is not None and st["pid"] == pid and os.path.exists(f"/proc/{pid}"), "pid-file names the live process")
    check(st is not None and st["bundle"] == bundle and st["id"] == "life", "state names the bundle and id")
    time.sleep(0.5)
    marker = os.path.join(bundle, "rootfs", "tmp", "marker")
    check(not os.path.exists(marker), "the program has not run before start")
    r = rt("start", "life")
    check(r.returncode == 0, f"start returns 0 ({r.stderr.strip()})")
    check(wait_for(lambda: os.path.exists(marker)), "the program runs after start")
    st = rt.state("life")
    check(st is not None and st["status"] == "running", f"state after start is running ({st})")
    check(rt("start", "life").returncode != 0, "a second start is refused")
    check(rt("delete", "life").returncode != 0, "delete of a running container without --force is refused")
    time.sleep(0.3)
    r = rt("kill", "life", "TERM")
    check(r.returncode == 0, f"kill TERM returns 0 ({r.stderr.strip()})")
    status = wait_status(pid)
    check(exit_code(status) == 9, f"the container process's status is the program's exit 9 ({exit_code(status)})")
    st = rt.state("life")
    check(st is not None and st["status"] == "stopped", f"state after the end is stopped ({st})")
    out = open(out_path).read()
    check("out" in out and "term" in out, f"the program's output reached create's stdout ({out!r})")
    check(rt("kill", "life", "TERM").returncode != 0, "kill of a stopped container is refused")
    r = rt("delete", "life")
    check(r.returncode == 0 and rt.state("life") is None, "delete removes a stopped container")
    check(not os.path.exists(os.path.join(rt.root, "life")), "no state is left after delete")


def killed_and_forced(rt, work):
    bundle = os.path.join(work, "kill")
    make_bundle(rt.exe, bundle, ["sleep", "100"])
    pid_file = os.path.join(work, "kill.pid")
    check(rt("create", "--bundle", bundle, "--pid-file", pid_file, "k1").returncode == 0, "create k1")
    pid = int(open(pid_file).read())
    check(rt("start", "k1").returncode == 0, "start k1")
    time.sleep(0.3)
    # init (pid 1) without a handler takes from outside only SIGKILL/SIGSTOP
    rt("kill", "k1", "TERM")
    time.sleep(0.5)
    check(rt.state("k1")["status"] == "running", "SIGTERM to an init without a handler is ignored, as Linux's")
    check(rt("kill", "k1", "KILL").returncode == 0, "kill KILL")
    check(exit_code(wait_status(pid)) == 137, "killed by SIGKILL: status 128+9")
    check(rt("delete", "k1").returncode == 0, "delete k1")
    # delete --force of a running container
    check(rt("create", "--bundle", bundle, "--pid-file", pid_file, "k2").returncode == 0, "create k2")
    pid = int(open(pid_file).read())
    check(rt("start", "k2").returncode == 0, "start k2")
    run_cgroups = json.load(open(os.path.join(rt.root, "k2", "state.json"))).get("run_cgroups", [])
    r = rt("delete", "--force", "k2")
    check(not any(os.path.exists(d) for d in run_cgroups),
          f"delete --force removes the run's host cgroups, which its killed launcher could not ({run_cgroups})")
    check(r.returncode == 0 and rt.state("k2") is None, f"delete --force removes a running container ({r.stderr})")
    check(wait_status(pid, 5) is not None, "delete --force ended its process")
    # a created container killed before start
    check(rt("create", "--bundle", bundle, "--pid-file", pid_file, "k3").returncode == 0, "create k3")
    pid = int(open(pid_file).read())
    rt("kill", "k3", "KILL")
    check(wait_status(pid, 5) is not None and rt.state("k3")["status"] == "stopped", "a created container is killed")
    check(rt("delete", "k3").returncode == 0, "delete k3")
    check(rt("delete", "--force", "never-was").returncode == 0, "delete --force of no container succeeds")


def run_results(rt, work):
    bundle = os.path.join(work, "run")
    make_bundle(rt.exe, bundle, ["true"])
    check(rt("run", "--bundle", bundle, "r0").returncode == 0, "run of true exits 0")
    deep = Runtime(rt.exe, os.path.join(work, "not", "yet", "there"))
    r = deep("run", "--bundle", bundle, "r1")
    check(r.returncode == 0, f"a --root whose folders are not there yet is made, as runc makes it ({r.stderr.strip()})")
    make_bundle(rt.exe, bundle, ["sh", "-c", "exit 7"])
    check(rt("run", "--bundle", bundle, "r7").returncode == 7, "run of exit 7 exits 7")
    check(rt.state("r7") is None, "run leaves no state behind")
    make_bundle(rt.exe, bundle, ["sh", "-c", "kill -9 $$; echo alive"])
    r = rt("run", "--bundle", bundle, "self")
    check(r.returncode == 0 and "alive" in r.stdout, "init's own SIGKILL is dropped, as pid 1's is natively")


def config_served(rt, work):
    bundle = os.path.join(work, "cfg")
    host_rw = os.path.join(work, "host-rw")
    host_ro = os.path.join(work, "host-ro")
    host_file = os.path.join(work, "host-file")
    for d in (host_rw, host_ro):
        os.makedirs(d, exist_ok=True)
    os.chmod(host_rw, 0o777)  # the container's user 1000 writes there
    open(os.path.join(host_ro, "f"), "w").write("ro-content\n")
    open(host_file, "w").write("file-content\n")
    script = ("id; umask; hostname; echo FOO=$FOO; pwd; cat /ro/f; cat /etc/the-file; "
              "echo written > /rw/new && echo rw-ok; echo x > /ro/g 2>/dev/null || echo ro-refused; "
              "echo x > /scratch/t && echo tmpfs-ok; ls /sys/fs/cgroup/cgroup.procs; ls /proc/self/status")
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["ro"]},
        {"destination": "/rw", "type": "bind", "source": host_rw, "options": ["rbind", "rw"]},
        {"destination": "/ro", "type": "bind", "source": host_ro, "options": ["rbind", "ro"]},
        {"destination": "/etc/the-file", "type": "bind", "source": host_file, "options": ["bind"]},
        {"destination": "/scratch", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m"]},
    ]
    make_bundle(rt.exe, bundle, ["sh", "-c", script], **{
        "process.user": {"uid": 1000, "gid": 1000, "additionalGids": [2000], "umask": 0o27},
        "process.env": ["PATH=/bin", "FOO=bar"], "process.cwd": "/tmp/new/dir",
        "hostname": "box", "mounts": mounts})
    r = rt("run", "--bundle", bundle, "cfg")
    out = r.stdout
    check(r.returncode == 0, f"run of the configured container exits 0 ({r.stderr.strip()})")
    check("uid=1000 gid=1000 groups=2000" in out, f"process.user: uid, gid and additionalGids ({out!r})")
    check("\n0027\n" in out, "process.user.umask")
    check("\nbox\n" in out and "FOO=bar" in out and "/tmp/new/dir" in out, "hostname, env and cwd (made)")
    check("ro-content" in out and "file-content" in out, "bind mounts of a folder and of a file")
    check("rw-ok" in out and open(os.path.join(host_rw, "new")).read() == "written\n", "a rw bind writes the host folder")
    check("ro-refused" in out and not os.path.exists(os.path.join(host_ro, "g")), "a ro bind refuses writes")
    check("tmpfs-ok" in out and not os.path.exists(os.path.join(bundle, "rootfs", "scratch", "t")), "a tmpfs mount")
    check("/sys/fs/cgroup/cgroup.procs" in out, "sysfs and the cgroup hierarchy")
    make_bundle(rt.exe, bundle, ["sh", "-c", "echo x > /x || echo refused"], **{"root.readonly": True})
    r = rt("run", "--bundle", bundle, "ro")
    check("refused" in r.stdout and not os.path.exists(os.path.join(bundle, "rootfs", "x")), "root.readonly")


def masked_readonly_sysctl(rt, work):
    """maskedPaths, readonlyPaths and linux.sysctl, as runc applies them."""
    bundle = os.path.join(work, "mask")
    script = ("cat /etc/secret; echo [; ls /sys/firmware; echo ]; echo x > /sys/firmware/f 2>/dev/null || echo fw-ro; "
              "cat /data/f; echo y > /data/g 2>/dev/null || echo data-ro; "
              "echo 1 > /proc/sys/kernel/shmmni 2>/dev/null || echo sys-ro; cat /proc/sys/kernel/shmmax")
    spec = make_bundle(rt.exe, bundle, ["sh", "-c", script], **{
        "linux.maskedPaths": ["/etc/secret", "/sys/firmware", "/no/such/path"],
        "linux.readonlyPaths": ["/proc/sys", "/data", "/no/such/folder"],
        "linux.sysctl": {"kernel.shmmax": "12345"}})
    rootfs = os.path.join(bundle, "rootfs")
    os.makedirs(os.path.join(rootfs, "data"), exist_ok=True)
    open(os.path.join(rootfs, "etc", "secret"), "w").write("secret-content\n")
    open(os.path.join(rootfs, "data", "f"), "w").write("data-content\n")
    r = rt("run", "--bundle", bundle, "mask")
    out = r.stdout
    check(r.returncode == 0, f"run with masked and read-only paths exits 0 ({r.stderr.strip()})")
    check("secret-content" not in out and out.startswith("["), f"a masked file reads as /dev/null ({out!r})")
    check("[\n]\n" in out and "fw-ro" in out, "a masked folder is an empty read-only tmpfs")
    check("data-content" in out and "data-ro" in out and not os.path.exists(os.path.join(rootfs, "data", "g")),
          "a read-only path reads, refuses writes")
    check("sys-ro" in out, "/proc/sys read-only")
    check(out.rstrip().endswith("12345"), "linux.sysctl kernel.shmmax is set before the program")
    # The host's network: runc refuses to change it from a container.
    spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
    spec["linux"]["sysctl"] = {"net.ipv4.ip_forward": "1"}
    spec["process"]["args"] = ["true"]
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(spec, f)
    r = rt("run", "--bundle", bundle, "mask2")
    check(r.returncode != 0 and rt.state("mask2") is None, "a net.* sysctl in the host's network namespace is refused")
    rt("delete", "--force", "mask2")
    spec["linux"]["sysctl"] = {"kernel.no_such_thing": "1"}
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(spec, f)
    r = rt("run", "--bundle", bundle, "mask3")
    check(r.returncode != 0, "a sysctl the kernel does not have is refused")
    rt("delete", "--force", "mask3")


def container_dev(rt, work):
    """The container's /dev as runc makes it: the bundle's tmpfs with the
    default devices, /dev/ptmx a link into pts, linux.devices made; no
    device of the kernel's beyond those."""
    bundle = os.path.join(work, "dev")
    script = ("grep ' /dev ' /proc/self/mountinfo; readlink /dev/ptmx; ls /dev/loop0 2>/dev/null || echo no-loop; "
              "stat -c '%F %t:%T %a %u:%g' /dev/custom/node /dev/fifo; echo x > /dev/null && echo null-ok; "
              "head -c 4 /dev/zero | wc -c")
    spec = make_bundle(rt.exe, bundle, ["sh", "-c", script], **{
        "linux.devices": [{"path": "/dev/custom/node", "type": "c", "major": 1, "minor": 5, "fileMode": 0o640,
                           "uid": 1000, "gid": 2000},
                          {"path": "/dev/fifo", "type": "p", "fileMode": 0o600}]})
    r = rt("run", "--bundle", bundle, "dev")
    out = r.stdout
    check(r.returncode == 0, f"run with linux.devices ({r.stderr.strip()})")
    check(" - tmpfs tmpfs " in out, f"/dev is the bundle's tmpfs ({out!r})")
    check("\npts/ptmx\n" in out and "no-loop" in out, "/dev/ptmx links to pts/ptmx; no loop devices")
    check("character special file 1:5 640 1000:2000" in out, "a linux.devices node: type, number, mode, owner")
    check("fifo 0:0 600 0:0" in out, "a linux.devices FIFO")
    check("null-ok" in out and out.rstrip().endswith("4"), "the default devices work")
    # A namespace path of another type is an error (the spec's MUST).
    spec["process"]["args"] = ["true"]
    own = spec["linux"]["namespaces"]
    spec["linux"]["namespaces"] = own + [{"type": "ipc", "path": "/proc/self/ns/uts"}]
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(spec, f)
    r = rt("run", "--bundle", bundle, "dev2")
    check(r.returncode != 0, "a namespace path of the wrong type is refused")
    rt("delete", "--force", "dev2")
    # The spec's MUST, which runc does not check.
    spec["linux"]["namespaces"] = own
    spec["ociVersion"] = "invalid"
    with open(os.path.join(bundle, "config.json"), "w") as f:
        json.dump(spec, f)
    r = rt("run", "--bundle", bundle, "dev3")
    check(r.returncode != 0 and "ociVersion" in r.stderr, f"an ociVersion that is no SemVer 1.x is refused ({r.stderr.strip()})")
    rt("delete", "--force", "dev3")


def exec_into(rt, work):
    bundle = os.path.join(work, "exec")
    make_bundle(rt.exe, bundle, ["sh", "-c", "echo $$ > /tmp/init-pid; while true; do sleep 0.05; done"],
                **{"process.env": ["PATH=/bin", "FROM=config"]})
    pid_file = os.path.join(work, "exec.pid")
    check(rt("create", "--bundle", bundle, "--pid-file", pid_file, "ex") .returncode == 0, "create ex")
    r = rt("exec", "ex", "true")
    check(r.returncode != 0 and "not running" in r.stderr, "exec into a created container is refused")
    check(rt("start", "ex").returncode == 0, "start ex")
    init_pid = os.path.join(bundle, "rootfs", "tmp", "init-pid")
    check(wait_for(lambda: os.path.exists(init_pid) and open(init_pid).read().strip()), "init runs")
    r = rt("exec", "ex", "sh", "-c", "echo $FROM; echo $$; cat /tmp/init-pid; pwd; exit 3")
    lines = r.stdout.split()
    check(r.returncode == 3, f"exec's status is the process's exit 3 ({r.returncode} {r.stderr.strip()})")
    check(lines[:1] == ["config"] and len(lines) == 4 and lines[3] == "/",
          f"exec takes the container's environment and cwd ({lines})")
    check(len(lines) == 4 and lines[1] != lines[2] and lines[2] == "1", "a new process beside init, whose pid is 1")
    r = rt("exec", "--cwd", "/tmp", "--env", "A=1", "--env", "B=2", "--user", "1000:1000", "ex",
           "sh", "-c", "pwd; echo $A$B; id -u; id -g")
    check(r.stdout.split() == ["/tmp", "12", "1000", "1000"], f"exec --cwd --env --user ({r.stdout!r})")
    proc = os.path.join(work, "process.json")
    json.dump({"args": ["sh", "-c", "echo from-process-json; kill -TERM $$"], "cwd": "/",
               "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}, open(proc, "w"))
    r = rt("exec", "--process", proc, "ex")
    check(r.returncode == -signal.SIGTERM and "from-process-json" in r.stdout,
          f"exec --process; the exec command ends killed by the process's signal ({r.returncode})")
    r = rt("ps", "ex")
    rows = [line.split() for line in r.stdout.splitlines()[1:]]
    check(r.returncode == 0 and ["1", "0", "0", "sh"] in rows, f"ps lists the guest processes, init as pid 1 ({rows})")
    r = rt("ps", "--format", "json", "ex")
    host_pids = json.loads(r.stdout) if r.returncode == 0 else []
    check(host_pids[:1] == [int(open(pid_file).read())], f"ps --format json: the host processes, the container's first ({host_pids})")
    # A command found in PATH through an absolute link of the image: the
    # link is the guest's, resolved in its root, not on the host.
    only_here = os.path.join(bundle, "rootfs", "opt", "only-in-this-root")
    os.makedirs(only_here)
    os.symlink("/bin/busybox", os.path.join(only_here, "printf"))
    os.symlink("/opt/only-in-this-root/printf", os.path.join(bundle, "rootfs", "bin", "printf"))
    r = rt("exec", "ex", "printf", "found-in-root\\n")
    check(r.returncode == 0 and r.stdout == "found-in-root\n",
          f"exec finds a command through the image's own links ({r.returncode} {r.stderr.strip()})")
    # A hostile client of the control socket: garbage, a header claiming a
    # huge request, a request cut short, no descriptors. The kernel's
    # process answers EINVAL or drops it, and the container lives on.
    import socket
    import struct
    ctl = os.path.join(rt.root, "ex", "ctl.sock")
    for junk in (b"\xff" * 64, struct.pack("III", 0x43455846, 1, 0xffffffff), struct.pack("III", 0x43455846, 1, 100),
                 struct.pack("III", 0x43455846, 9, 0), b""):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(ctl)
        if junk:
            c.sendall(junk)
        c.shutdown(socket.SHUT_WR)
        c.settimeout(5)
        try:
            c.recv(64)
        except OSError:
            pass
        c.close()
    # A terminal exec request (kind 5) without its descriptors, and one with
    # descriptors that are no terminal and a payload that is no request.
    for with_fds in (False, True):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(ctl)
        header = struct.pack("III", 0x43455846, 5, 16)
        r_fd, w_fd = os.pipe()
        fds = struct.pack("iii", r_fd, w_fd, r_fd)
        try:  # refused without its descriptors: the kernel's process may close first
            c.sendmsg([header], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)] if with_fds else [])
            c.sendall(b"\x01" * 16)
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        c.settimeout(5)
        try:
            c.recv(64)
        except OSError:
            pass
        c.close()
        os.close(r_fd)
        os.close(w_fd)
    r = rt("exec", "ex", "echo", "still-here")
    check(r.returncode == 0 and r.stdout == "still-here\n" and rt.state("ex")["status"] == "running",
          f"garbage on the control socket leaves the container serving ({r.stderr.strip()})")
    r = rt("exec", "ex", "/bin/no-such")
    check(r.returncode == 127, f"exec of a missing program: 127 ({r.returncode})")
    detached_pid = os.path.join(work, "detached.pid")
    r = rt("exec", "--detach", "--pid-file", detached_pid, "ex", "sh", "-c", "sleep 0.3; exit 4")
    check(r.returncode == 0, f"exec --detach returns at once ({r.stderr.strip()})")
    pid = int(open(detached_pid).read())
    check(exit_code(wait_status(pid)) == 4, "the process exec --detach leaves ends with the guest process's status")
    r = rt("delete", "--force", "ex")
    check(r.returncode == 0, "delete --force ex")
    wait_status(int(open(pid_file).read()), 5)


def console(rt, work):
    """As an engine: a console socket receives the pty's master."""
    import array
    import socket
    bundle = os.path.join(work, "tty")
    make_bundle(rt.exe, bundle, ["sh"], **{"process.terminal": True,
                                          "process.consoleSize": {"height": 30, "width": 100}})
    sock_path = os.path.join(work, "console.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    server.listen(1)
    pid_file = os.path.join(work, "tty.pid")
    r = rt("create", "--bundle", bundle, "--console-socket", sock_path, "--pid-file", pid_file, "tty")
    check(r.returncode == 0, f"create with --console-socket ({r.stderr.strip()})")
    server.settimeout(5)
    conn, _ = server.accept()
    fds = array.array("i")
    msg, anc, _, _ = conn.recvmsg(256, socket.CMSG_LEN(fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:fds.itemsize])
    check(len(fds) == 1 and msg.startswith(b"/dev/pts/"), f"the pty's master arrives with its name ({msg!r})")
    if len(fds) != 1:
        return
    master = fds[0]
    check(rt("start", "tty").returncode == 0, "start tty")
    os.set_blocking(master, False)
    os.write(master, b"stty size; tty; echo ok-$((2+3)); sleep 20\r")
    out = b""

    def drain(seconds):
        nonlocal out
        end = time.time() + seconds
        while time.time() < end:
            try:
                out += os.read(master, 4096)
            except BlockingIOError:
                time.sleep(0.05)
            except OSError:
                return
    drain(1.5)
    os.write(master, b"\x03")
    drain(0.5)
    os.write(master, b"exit 6\r")
    drain(1)
    text = out.decode(errors="replace")
    check("30 100" in text, f"consoleSize is the terminal's size ({text!r})")
    check("ok-5" in text, "the shell runs on the terminal")
    check("not a tty" not in text and "\n/dev/" in text, "tty(1) names the terminal the shell is on")
    check(exit_code(wait_status(int(open(pid_file).read()))) == 6, "^C interrupts the foreground job; exit 6")
    os.close(master)
    rt("delete", "tty")


def pause_resume(rt, work):
    bundle = os.path.join(work, "pause")
    make_bundle(rt.exe, bundle, ["sh", "-c", "i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.02; done"])
    counter = os.path.join(bundle, "rootfs", "tmp", "count")
    check(rt("run", "--detach", "--bundle", bundle, "pz").returncode == 0, "run --detach pz")
    check(wait_for(lambda: os.path.exists(counter)), "the counter runs")

    def count():
        try:
            return int(open(counter).read() or 0)
        except (OSError, ValueError):
            return -1
    check(rt("resume", "pz").returncode != 0, "resume of a running container is refused")
    r = rt("pause", "pz")
    check(r.returncode == 0 and rt.state("pz")["status"] == "paused", f"pause: state paused ({r.stderr.strip()})")
    time.sleep(0.2)
    a = count()
    time.sleep(0.5)
    check(count() == a, "nothing runs while paused")
    r = rt("resume", "pz")
    check(r.returncode == 0 and rt.state("pz")["status"] == "running", f"resume: state running ({r.stderr.strip()})")
    check(wait_for(lambda: count() > a, 3), "it runs again after resume")
    rt("pause", "pz")
    r = rt("delete", "--force", "pz")
    check(r.returncode == 0 and rt.state("pz") is None, "delete --force of a paused container")


def hooks(rt, work):
    log = os.path.join(work, "hooks.log")
    bundle = os.path.join(work, "hooks")

    def hook(name, extra=""):
        return {"path": "/bin/sh", "args": ["sh", "-c", f"read -r state; echo {name} \"$state\" >> {log}{extra}"]}
    make_bundle(rt.exe, bundle, ["sh", "-c", "exit 0"], hooks={
        "createRuntime": [hook("createRuntime")], "poststart": [hook("poststart")],
        "poststop": [hook("poststop")]})
    check(rt("run", "--bundle", bundle, "hk").returncode == 0, "run with hooks")
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    names = [line.split()[0] for line in lines]
    check(names == ["createRuntime", "poststart", "poststop"], f"hooks run in the spec's order ({names})")
    states = [json.loads(line.split(" ", 1)[1]) for line in lines]
    check([s["status"] for s in states] == ["created", "running", "stopped"] and states[0]["id"] == "hk",
          f"each hook reads the container's state ({[s['status'] for s in states]})")
    make_bundle(rt.exe, bundle, ["true"], hooks={"createRuntime": [hook("failing", "; exit 3")]})
    r = rt("create", "--bundle", bundle, "hk2")
    check(r.returncode != 0 and "createRuntime hook" in r.stderr and rt.state("hk2") is None,
          f"a failing createRuntime hook fails create, leaving nothing ({r.stderr.strip()})")


def host_cgroup(rt, work):
    """linux.cgroupsPath: the run's host cgroup is the one the engine names
    (with --systemd-cgroup, where systemd would put it), gone after delete."""
    tops = [t for t in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup") if os.path.exists(t + "/cgroup.procs")]
    if not tops or os.geteuid() != 0:
        print("skip host cgroup checks: no cgroup hierarchy this test may write", flush=True)
        return
    top = tops[0]
    bundle = os.path.join(work, "cg")
    for name, path, systemd, where in (
            ("cg1", "/flatux-test/ctr-cg1", False, "/flatux-test/ctr-cg1"),
            ("cg2", "flatux-test.slice:flatux:cg2", True, "/flatux.slice/flatux-test.slice/flatux-cg2.scope")):
        make_bundle(rt.exe, bundle, ["sleep", "100"], **{"linux.cgroupsPath": path})
        pid_file = os.path.join(work, name + ".pid")
        args = (["--systemd-cgroup"] if systemd else []) + ["create", "--bundle", bundle, "--pid-file", pid_file, name]
        r = rt(*args)
        check(r.returncode == 0, f"create {name} with cgroupsPath {path} ({r.stderr.strip()})")
        procs = top + where + "/cgroup.procs"
        inside = open(procs).read().split() if os.path.exists(procs) else []
        check(len(inside) >= 2, f"the run's host processes are in {where} ({len(inside)})")
        pid = open(pid_file).read().strip()
        mine = open(f"/proc/{pid}/cgroup").read()
        check(f":{where}\n" in mine, f"the container's pid is in {where} too, where engines look it up ({mine!r})")
        rt("delete", "--force", name)
        wait_status(int(open(pid_file).read()), 5)
        check(not os.path.exists(top + where), f"delete removes {where}")
    for leftover in ("/flatux-test", "/flatux.slice/flatux-test.slice", "/flatux.slice"):
        for t in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup"):
            try:
                os.rmdir(t + leftover)
            except OSError:
                pass


def mount_point_escape(rt, work):
    """A hostile image: links in its root that lead out of it. The mount
    points create makes are made inside the root whatever the links say,
    and a link that leads nowhere inside it is an error."""
    bundle = os.path.join(work, "escape")
    victim = os.path.join(work, "victim")
    os.makedirs(victim, exist_ok=True)
    for link, target in (("abs", victim), ("rel", "../../../../../../" + victim.lstrip("/"))):
        make_bundle(rt.exe, bundle, ["true"], mounts=[
            {"destination": f"/{link}/made-by-{link}", "type": "tmpfs", "source": "tmpfs"}])
        os.symlink(target, os.path.join(bundle, "rootfs", link))
        r = rt("run", "--bundle", bundle, "esc-" + link)
        check(r.returncode != 0 and "leads nowhere" in r.stderr, f"a {link} link out of the root: create refuses ({r.stderr.strip()})")
        check(os.listdir(victim) == [], f"nothing is made outside the root through the {link} link")
    mounts = [{"destination": "/in/made-by-in", "type": "tmpfs", "source": "tmpfs"},
              {"destination": "/top/made-by-top", "type": "tmpfs", "source": "tmpfs"}]
    make_bundle(rt.exe, bundle, ["sh", "-c", "touch /in/made-by-in/f /top/made-by-top/g && echo mounted"],
                mounts=mounts)
    root = os.path.join(bundle, "rootfs")
    os.makedirs(os.path.join(root, "inside"))
    os.symlink("/inside", os.path.join(root, "in"))  # absolute, as the guest reads it: inside the root
    os.symlink("/", os.path.join(root, "top"))
    r = rt("run", "--bundle", bundle, "esc-in")
    check(r.returncode == 0 and "mounted" in r.stdout, f"links that stay inside the root are followed ({r.stderr.strip()})")
    check(os.path.isdir(os.path.join(root, "inside", "made-by-in")) and os.path.isdir(os.path.join(root, "made-by-top")),
          "the mount points are where the links lead, inside the root")
    check(not os.path.exists("/made-by-top") and not os.path.exists("/inside"), "never at the host's /")
    check(not os.path.exists(os.path.join(root, "inside", "made-by-in", "f")), "the mount is on the resolved point")


def bad_input(rt, work):
    bundle = os.path.join(work, "bad")
    make_bundle(rt.exe, bundle, ["true"])
    r = rt("create", "--bundle", bundle, "../escape")
    check(r.returncode != 0 and "invalid container id" in r.stderr, "an id with a slash is refused")
    r = rt("create", "--bundle", os.path.join(work, "nothing-here"), "nb")
    check(r.returncode != 0 and rt.state("nb") is None, "a bundle without config.json is refused, leaving nothing")
    r = rt("--no-such-flag", "list")
    check(r.returncode != 0 and "not defined" in r.stderr, "an unknown option is refused by name")
    r = rt("update", "x")
    check(r.returncode != 0 and "not served" in r.stderr, "update says it is not served yet")
    r = rt("exec", "no-such", "true")
    check(r.returncode != 0 and "does not exist" in r.stderr, "exec into no container is refused")
    spec = json.load(open(os.path.join(bundle, "config.json")))
    spec["process"]["terminal"] = True
    json.dump(spec, open(os.path.join(bundle, "config.json"), "w"))
    r = rt("create", "--bundle", bundle, "tty")
    check(r.returncode != 0 and "console-socket" in r.stderr and rt.state("tty") is None,
          "a terminal without --console-socket is refused, clearly")
    # A bundle whose path is not UTF-8 (the state names it): replaced in
    # the JSON, never an abort that would leave the container running.
    odd = os.path.join(work, "bundle-\udcff")  # the byte 0xff in a file name
    make_bundle(rt.exe, odd, ["true"])
    r = rt("run", "--bundle", odd, "utf")
    check(r.returncode == 0 and rt.state("utf") is None, f"a bundle path that is not UTF-8 ({r.returncode} {r.stderr.strip()[-120:]})")
    r = rt("spec", "--bundle", os.path.join(work, "nothing-here-either"))
    check(r.returncode != 0 and "nothing-here-either" in r.stderr, "spec into a missing folder is an error message")
    with open(os.path.join(bundle, "config.json"), "w") as f:
        f.write('{"ociVersion": "1.0.2", "process": {"args": ["\\udc80"]}, "root": {"path": "rootfs"}}')
    r = rt("create", "--bundle", bundle, "surrogate")
    check(r.returncode != 0 and "config.json" in r.stderr and rt.state("surrogate") is None,
          "a config.json string that is not Unicode is an error message")
    with open(os.path.join(bundle, "config.json"), "w") as f:
        f.write("{ not json")
    r = rt("create", "--bundle", bundle, "garbage")
    check(r.returncode != 0 and "config.json" in r.stderr, "a malformed config.json is an error message")
    make_bundle(rt.exe, bundle, ["/bin/no-such-program"])
    r = rt("run", "--bundle", bundle, "noprog")
    check(r.returncode == 127, f"a missing program: 127 ({r.returncode})")
    check(rt("create", "--bundle", bundle, "dup").returncode == 0, "create dup")
    r = rt("create", "--bundle", bundle, "dup")
    check(r.returncode != 0 and "exists" in r.stderr, "a second container of one id is refused")
    rt("delete", "--force", "dup")


def reap_adopted():
    """Collects the wait statuses of the containers' processes we adopted
    and nobody waited for (a zombie is still a descendant)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def cycles(rt, work, n):
    bundle = os.path.join(work, "cycle")
    make_bundle(rt.exe, bundle, ["true"])
    # Mounts under the work folder (other tests mount things of their own
    # on this host meanwhile).
    def our_mounts():
        return [line for line in open("/proc/self/mountinfo").read().splitlines() if work in line]
    fds, mounts = open_fds(), our_mounts()
    pid_file = os.path.join(work, "cycle.pid")
    started = time.time()
    for i in range(n):
        cid = f"c{i}"
        r = rt("create", "--bundle", bundle, "--pid-file", pid_file, cid)
        if r.returncode != 0:
            check(False, f"cycle {i}: create ({r.stderr.strip()})")
            return
        pid = int(open(pid_file).read())
        rt("start", cid)
        st = wait_status(pid)
        if exit_code(st) != 0:
            check(False, f"cycle {i}: the container exits 0 ({exit_code(st)})")
            return
        rt("delete", cid)
    print(f"{n} cycles in {time.time() - started:.1f} s", flush=True)
    check(descendants(os.getpid()) == [], "no host process of any container is left")
    check(os.listdir(rt.root) == [], "no state is left")
    check(open_fds() == fds, "no descriptor is left")
    check(our_mounts() == mounts, "no mount is left")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True, help="build/flatux-oci")
    ap.add_argument("--cycles", type=int, default=0)
    args = ap.parse_args()
    if not have_busybox():
        print("SKIP: /usr/bin/busybox (Debian's busybox-static) is not installed")
        return 77
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with tempfile.TemporaryDirectory(prefix="flatux-oci-") as work:
        rt = Runtime(args.runtime, os.path.join(work, "state"))
        if args.cycles:
            cycles(rt, work, args.cycles)
        else:
            lifecycle(rt, work)
            killed_and_forced(rt, work)
            run_results(rt, work)
            config_served(rt, work)
            masked_readonly_sysctl(rt, work)
            container_dev(rt, work)
            exec_into(rt, work)
            console(rt, work)
            pause_resume(rt, work)
            hooks(rt, work)
            host_cgroup(rt, work)
            mount_point_escape(rt, work)
            bad_input(rt, work)
            time.sleep(0.2)
            reap_adopted()
            check(descendants(os.getpid()) == [], "no host process is left")
    print(f"{len(failures)} failures" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

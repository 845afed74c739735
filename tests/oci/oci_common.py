"""Helpers the OCI runtime tests share: a busybox root folder (Debian's
static busybox and its applets), a bundle over it, and host-side checks
that a container left nothing behind."""
import json
import os
import shutil
import subprocess

BUSYBOX = "/usr/bin/busybox"  # Debian's busybox-static
APPLETS = ["sh", "echo", "cat", "ls", "sleep", "id", "hostname", "env", "pwd", "true", "false", "kill",
           "mkdir", "touch", "grep", "head", "trap", "wc", "httpd", "umask", "ps", "stat"]


def have_busybox():
    return os.access(BUSYBOX, os.X_OK)


def make_rootfs(path):
    """A fresh busybox root at path."""
    shutil.rmtree(path, ignore_errors=True)
    for d in ("bin", "etc", "proc", "sys", "dev", "tmp", "data"):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(path, "bin", "busybox"))
    for a in APPLETS:
        os.symlink("busybox", os.path.join(path, "bin", a))
    with open(os.path.join(path, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
    with open(os.path.join(path, "etc", "group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")


def make_bundle(runtime, bundle, args, **changes):
    """A bundle at `bundle` with rootfs/ and the runtime's own default
    config.json (`spec`), changed as asked."""
    make_rootfs(os.path.join(bundle, "rootfs"))
    cfg = os.path.join(bundle, "config.json")
    if os.path.exists(cfg):
        os.unlink(cfg)
    subprocess.run([runtime, "spec", "--bundle", bundle], check=True)
    with open(cfg) as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = args
    spec["root"]["readonly"] = False
    for key, value in changes.items():
        node = spec
        *path, last = key.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[last] = value
    with open(cfg, "w") as f:
        json.dump(spec, f, indent=1)
    return spec


def descendants(pid):
    """Host pids below pid (not pid itself)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def processes_running(exe):
    """Host pids whose executable is `exe` (the flatux binary)."""
    real = os.path.realpath(exe)
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/exe") == real:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


failures = []


def check(ok, what):
    """One check's line; failures are kept for the test's verdict."""
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def engine_missing(tools, root_why):
    """Why an engine test cannot run here (to skip with), or None: each of
    `tools` and busybox-static installed, and root."""
    for tool in tools:
        if not shutil.which(tool):
            return f"{tool} is not installed"
    if not have_busybox():
        return "/usr/bin/busybox (busybox-static) is not installed"
    if os.geteuid() != 0:
        return root_why
    return None

"""Booted targets: the ext4 root image with the bench, and one boot of it.

Two kernels boot such an image: User-Mode Linux (Debian's linux.uml, the
host's static busybox) and flatux itself (`flatux ubd0=IMAGE ...`, with the
project's no-MMU busybox: Debian's forks, and fork is ENOSYS on a no-MMU
kernel). Each gets its own image, as the iteration counts written into its
/init differ.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

from .host import RunError, run_capture


def shared_libs(path):
    """Host paths of the libraries and loader a dynamic program needs."""
    try:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    libs = []
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (")[0].strip()
        else:
            target = line.split(" (")[0].strip()
        if target.startswith("/"):
            libs.append(target)
    return libs


IDLE_SLEEP_S = 3


def write_init(path, lines):
    path.write_text("\n".join(lines))
    path.chmod(0o755)


def build_image(workdir, bench_dir, row_keys, counts, reps, row_timeout, prog, busybox):
    """Makes an ext4 root; returns its path or raises RunError."""
    root = workdir / "root"
    if root.exists():
        shutil.rmtree(root)
    for d in ("bin", "bench", "dev", "proc", "sys", "tmp"):
        (root / d).mkdir(parents=True)
    shutil.copy2(busybox, root / "bin" / "busybox")
    # The rows exec /bin/sh; the guest gets the host's own shell (and its
    # libraries at the same paths) so every column starts the same program.
    host_sh = Path("/bin/sh").resolve()
    shutil.copy2(host_sh, root / "bin" / "sh")
    for lib in shared_libs(host_sh):
        dest = root / lib.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(lib).resolve(), dest)
    for name in ("lmbench_rows", "lmbench_rows_pie", "lmbench_hello"):
        if (bench_dir / name).exists():
            shutil.copy2(bench_dir / name, root / "bench" / name)
    (root / "tmp" / "lmbench_rows.file").write_bytes(b"")
    lines = [
        "#!/bin/busybox sh",
        "B=/bin/busybox",
        "$B mount -t proc proc /proc 2>/dev/null",
        "[ -e /dev/null ] || $B mount -t devtmpfs devtmpfs /dev 2>/dev/null",
        "[ -e /dev/null ] || $B mknod /dev/null c 1 3",
        "[ -e /dev/zero ] || $B mknod /dev/zero c 1 5",
        # The TCP row needs the loopback interface (UML's starts down;
        # under flatux the host's network is used and this is refused).
        "$B ifconfig lo 127.0.0.1 up 2>/dev/null",
        "echo @@begin",
    ]
    for row in row_keys:
        lines.append(f"$B timeout -s KILL {row_timeout} /bench/{prog} {row} {counts[row]} {reps}")
        lines.append(f"echo \"@@status {row} $?\"")
    lines += ["echo @@end", "$B sync", "$B poweroff -f", ""]
    write_init(root / "init", lines)
    # The boot-time and idle-memory probes: init's first line is the one
    # timed. In UML the system then idles in a sleep while the driver reads
    # the memory of the linux.uml processes, and powers off. Under flatux,
    # init becomes the bench's "idle" program, which lists its regions (the
    # driver subtracts them from flatux's RSS), waits for the console's EOF
    # and powers off.
    write_init(root / "init-idle", ["#!/bin/busybox sh", "echo @@ready",
                                    f"/bin/busybox sleep {IDLE_SLEEP_S}",
                                    "/bin/busybox poweroff -f", ""])
    write_init(root / "init-idle-flatux", ["#!/bin/busybox sh",
                                           "/bin/busybox mount -t proc proc /proc",
                                           f"exec /bench/{prog} idle", ""])
    image = workdir / "rootfs.ext4"
    if image.exists():
        image.unlink()
    try:
        subprocess.run(["mke2fs", "-q", "-F", "-d", str(root), "-t", "ext4", str(image), "64M"],
                       check=True, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        raise RunError(f"mke2fs failed: {detail.strip()[:160]}")
    return image


def uml_command(workdir, image, init="/init"):
    """(argv, env) of one boot; its uml_dir is made afresh."""
    umldir = workdir / "run"
    if umldir.exists():
        shutil.rmtree(umldir, ignore_errors=True)
    umldir.mkdir(parents=True)
    # UML backs guest memory with a file in TMPDIR; /dev/shm keeps it in RAM.
    tmp = "/dev/shm" if os.access("/dev/shm", os.W_OK) else str(workdir)
    env = dict(os.environ, TMPDIR=tmp)
    argv = ["linux.uml", f"ubd0={image}", "root=/dev/ubda", "rw", "mem=512M", f"init={init}",
            "con=null", "con0=null,fd:1", f"uml_dir={umldir}", "quiet"]
    return argv, env


def flatux_boot_command(flatux, image, init="/init-idle-flatux", syscall_entry=None):
    """argv of one boot of the image by flatux, its console on stdio."""
    entry = [f"syscall_entry={syscall_entry}"] if syscall_entry else []
    return [str(flatux), f"ubd0={image}", "rw", "mem=512M", f"init={init}", "quiet"] + entry


def run_boot(target, workdir, image, timeout, flatux=None, syscall_entry=None):
    """Boots the image with /init, which runs the rows; returns its console
    output and the seconds the boot took."""
    if target == "uml":
        argv, env = uml_command(workdir, image)
    else:
        argv, env = flatux_boot_command(flatux, image, "/init", syscall_entry), None
    t0 = time.monotonic()
    out = run_capture(argv, timeout, env=env)
    shutil.rmtree(workdir / "run", ignore_errors=True)
    if "@@begin" not in out:
        tail = [l for l in out.strip().splitlines() if l.strip()][-1:] or ["no console output"]
        raise RunError(f"{target} did not reach /init: {tail[0][:160]}")
    return out, time.monotonic() - t0

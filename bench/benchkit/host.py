"""Running programs, parsing their output, the machine and its tools."""

import os
import platform
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path

# ------------------------------------------------------------------ machine

def machine_info():
    info = {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": "unknown",
            "fsgsbase": False, "meltdown": "unknown"}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and info["cpu"] == "unknown":
                info["cpu"] = value.strip()
            elif key == "flags":
                info["fsgsbase"] = "fsgsbase" in value.split()
    except OSError:
        pass
    try:
        info["meltdown"] = Path("/sys/devices/system/cpu/vulnerabilities/meltdown").read_text().strip()
    except OSError:
        pass
    return info


def tool_version(argv, pick):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (out.stdout + out.stderr).splitlines():
        v = pick(line)
        if v:
            return v
    return None


def git_commit(repo):
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+uncommitted src changes" if dirty else "") if head else None
    except (OSError, subprocess.TimeoutExpired):
        return None


# ------------------------------------------------------------------ running

class RunError(Exception):
    pass


def run_capture(argv, timeout, env=None):
    """Runs argv in its own session (so a timeout can end all it started);
    returns stdout, raises RunError on failure."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace",
                                env=env, start_new_session=True)
    except OSError as e:
        raise RunError(str(e))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise RunError(f"timed out after {timeout} s")
    if proc.returncode != 0:
        tail = (err.strip().splitlines() or out.strip().splitlines() or [""])[-1]
        status = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                  else f"exit status {proc.returncode}")
        raise RunError(f"{status}{': ' + tail[:160] if tail else ''}")
    return out


def parse_pairs(out):
    """{name: (min, median)} from '<name> <min> <median>' lines."""
    values = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            try:
                values[parts[0]] = (float(parts[1]), float(parts[2]))
            except ValueError:
                pass
    return values


def parse_row_line(row, out):
    """('ok', (min, median)) or ('skipped', reason) or None for a row's line."""
    for line in out.splitlines():
        parts = line.strip().split(None, 2)
        if len(parts) < 2 or parts[0] != row:
            continue
        if parts[1] == "skipped":
            return ("skipped", parts[2] if len(parts) > 2 else "no reason given")
        try:
            a, b = parts[1], parts[2].split()[0]
            return ("ok", (float(a), float(b)))
        except (ValueError, IndexError):
            continue
    return None


def elf_is_static(path):
    """True when the ELF file has no program interpreter."""
    try:
        with open(path, "rb") as f:
            hdr = f.read(64)
            if hdr[:4] != b"\x7fELF" or hdr[4] != 2:
                return False
            phoff, = struct.unpack_from("<Q", hdr, 32)
            phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                if struct.unpack("<I", f.read(4))[0] == 3:  # PT_INTERP
                    return False
            return True
    except (OSError, struct.error):
        return False


def apt_install(packages):
    """Installs Debian packages when root; returns None or the reason it could not."""
    if os.geteuid() != 0:
        return "not root, cannot apt-get install " + " ".join(packages)
    if not shutil.which("apt-get"):
        return "no apt-get to install " + " ".join(packages)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + packages
    print(f"installing: {' '.join(packages)}", flush=True)
    for attempt in range(2):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"apt-get install failed: {e}"
        if p.returncode == 0:
            return None
        if attempt == 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env,
                           timeout=600, stdin=subprocess.DEVNULL)
    tail = (p.stderr.strip().splitlines() or [""])[-1]
    return f"apt-get install {' '.join(packages)} failed: {tail[:160]}"

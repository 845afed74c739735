"""Boot time to first output and idle memory: one probe per start.

A probe starts a target running the bench program's "idle" sub-command (or,
in UML, a boot whose init prints a line and then sleeps), times the start to
the first line the program (or init) prints, "@@ready", then measures the
memory of whatever stands in for the kernel while the guest sits blocked:

    native  the bare program's RSS (there is no kernel process to measure)
    flatux  the flatux process's RSS (`flatux run`, or a boot of an image
            whose init execs the program) minus every page of the guest's own
            regions (the ranges its /proc/self/maps lists, whose pages are
            counted present through /proc/PID/pagemap), split into
            anonymous and file-backed pages by the host mapping they lie in
    uml     the summed PSS of every process of the linux.uml session (its
            kernel process and the host processes of its guest processes):
            guest memory cannot be told apart, it lives in the same file
    proot   the tracer's RSS (the guest is its own host process)
"""

import os
import selectors
import signal
import subprocess
import tempfile
import time

READY = "@@ready"
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


class ProbeError(Exception):
    pass


class _Lines:
    """Lines from a child's stdout, with a deadline on each wait."""

    def __init__(self, proc):
        self.proc = proc
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ)
        self.buf = b""
        self.eof = False

    def next(self, deadline):
        """The next line (str) and the time it arrived, or (None, t) at EOF."""
        while b"\n" not in self.buf and not self.eof:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise ProbeError("timed out waiting for output")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            self.eof = not chunk
            self.buf += chunk
        now = time.monotonic()
        if b"\n" not in self.buf:
            line, self.buf = self.buf, b""
            return (line.decode(errors="replace") or None), now
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace"), now

    def until(self, marker, deadline):
        """Lines before the one equal to marker, and when marker arrived."""
        seen = []
        while True:
            line, when = self.next(deadline)
            if line is None:
                tail = seen[-1][:160] if seen else "no output"
                raise ProbeError(f"ended before {marker!r}: {tail}")
            if line.strip() == marker:
                return seen, when
            seen.append(line)


def _stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


# ------------------------------------------------------------------ memory

def _smaps(pid):
    """[(start, end, path, rss_kib, anon_kib)] of a process's mappings."""
    vmas = []
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                path = head[5].strip() if len(head) > 5 else ""
                vmas.append([lo, hi, path, 0, 0])
            elif head[0] == "Rss:":
                vmas[-1][3] = int(head[1])
            elif head[0] == "Anonymous:":
                vmas[-1][4] = int(head[1])
    return vmas


def _present_pages(pagemap, lo, hi):
    page = PAGE_KIB * 1024
    pagemap.seek(lo // page * 8)
    raw = pagemap.read((hi - lo) // page * 8)
    return sum(1 for i in range(7, len(raw), 8) if raw[i] & 0x80)  # bit 63: present


def parse_maps_ranges(lines):
    ranges = []
    for line in lines:
        field = line.split(None, 1)[0] if line.strip() else ""
        if "-" in field:
            try:
                lo, hi = (int(x, 16) for x in field.split("-"))
            except ValueError:
                continue
            ranges.append((lo, hi))
    return ranges


def kernel_rss(pid, guest_ranges):
    """RSS of a flatux process outside the guest's own regions (KiB)."""
    out = {"total_kib": 0, "guest_kib": 0, "kernel_anon_kib": 0, "kernel_file_kib": 0}
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for lo, hi, path, rss, _anon in _smaps(pid):
            guest = 0
            for glo, ghi in guest_ranges:
                a, b = max(lo, glo), min(hi, ghi)
                if a < b:
                    guest += _present_pages(pagemap, a, b) * PAGE_KIB
            guest = min(guest, rss)
            out["total_kib"] += rss
            out["guest_kib"] += guest
            # A named file is file-backed; [heap], [stack], [vdso] and
            # nameless mappings are anonymous memory of the process.
            key = "kernel_file_kib" if path.startswith("/") else "kernel_anon_kib"
            out[key] += rss - guest
    out["kernel_kib"] = out["kernel_anon_kib"] + out["kernel_file_kib"]
    return out


def _status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise ProbeError(f"no {field} for pid {pid}")


def session_pss(sid):
    """Summed PSS (KiB) of every process in session sid, and how many."""
    total = count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.getsid(int(name)) != sid:
                continue
            with open(f"/proc/{name}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        count += 1
                        break
        except (OSError, ValueError):
            continue
    return total, count


# ------------------------------------------------------------------ probes

def probe_program(target, argv, timeout, env=None, settle_s=0.3):
    """native, flatux or proot running "<bench program> idle"."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=env, start_new_session=True)
        deadline = t0 + timeout
        try:
            lines = _Lines(proc)
            try:
                _, ready_at = lines.until(READY, deadline)
                lines.until("@@maps", deadline)
                maps, _ = lines.until("@@end", deadline)
            except ProbeError as e:
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()
                raise ProbeError(f"{e}{': ' + tail[-1][:160] if tail else ''}")
            time.sleep(settle_s)  # let the guest reach its blocking read
            if target in ("flatux", "flatux-img"):
                mem = kernel_rss(proc.pid, parse_maps_ranges(maps))
                kib = mem["kernel_kib"]
            else:
                # native: the program itself; proot: the tracer alone.
                kib = _status_kib(proc.pid, "VmRSS")
                mem = {"rss_kib": kib}
            proc.stdin.close()
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except (ProbeError, OSError, subprocess.TimeoutExpired) as e:
            _stop(proc)
            raise ProbeError(str(e) or type(e).__name__)
    if proc.returncode != 0:
        raise ProbeError(f"exit status {proc.returncode}")
    return {"boot_us": (ready_at - t0) * 1e6, "mem_kib": kib, "mem": mem}


def probe_uml(argv, timeout, env, settle_s=1.0):
    """One UML boot whose init prints READY, sleeps, and powers off."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        lines = _Lines(proc)
        _, ready_at = lines.until(READY, t0 + timeout)
        time.sleep(settle_s)
        kib, nproc = session_pss(proc.pid)
        while lines.next(t0 + timeout)[0] is not None:  # until poweroff
            pass
        proc.wait(timeout=30)
    except (ProbeError, OSError, subprocess.TimeoutExpired) as e:
        _stop(proc)
        raise ProbeError(str(e) or type(e).__name__)
    return {"boot_us": (ready_at - t0) * 1e6, "mem_kib": kib,
            "mem": {"pss_kib": kib, "processes": nproc}}

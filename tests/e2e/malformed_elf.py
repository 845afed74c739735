#!/usr/bin/env python3
"""Feeds files that cannot be executed to `flatux run` and checks that each
is refused the way a shell reports a failed exec, not by a crash.

    malformed_elf.py --flatux FLATUX --corpus DIR --manifest FILE --work DIR
                     [--real-binary /bin/true] [--no-native]

The files are the malformed half of the fuzz corpus plus cases made here:
small ELF images built from scratch and a real binary with bytes patched.
Every one must give exit status 126 or 127 with a `flatux: FILE: REASON`
line on stderr; some also pin the status and REASON. A status of 128 or
more, or a crash report on stderr, fails whatever the case.

Each file also runs natively, only so the table shows what Linux says.
"""
import argparse
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys

PT_LOAD, PT_INTERP = 1, 3
PF_X, PF_W, PF_R = 1, 2, 4
ET_EXEC, ET_DYN = 2, 3
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")
PAGE = 0x1000

# exit_group(0): a control image that runs proves the builder is sound, so
# the malformed ones fail for the one thing changed in them.
EXIT0 = bytes.fromhex("31ff" "b8e7000000" "0f05")

# Signs that something underneath broke rather than refused the file.
CRASH_WORDS = ("oops", "segmentation fault", "bus error", "illegal instruction",
               "aborted", "panic", "assert", "core dumped")


def phdr(ptype, flags, offset, vaddr, filesz, memsz, align=PAGE):
    return dict(type=ptype, flags=flags, offset=offset, vaddr=vaddr,
                filesz=filesz, memsz=memsz, align=align)


def build_elf(make_phdrs, etype=ET_DYN, base=0, tail=b"", phoff=None, phnum=None):
    """An image laid out as header, program headers, exit code, `tail`.

    make_phdrs(layout) returns the program headers; layout has the file
    offsets of the code and of `tail`, and the file size, all known before
    the headers are written since every header has the same size.
    """
    n = len(make_phdrs(dict(code=0, tail=0, size=0)))
    code_off = EHDR.size + n * PHDR.size
    tail_off = code_off + len(EXIT0)
    size = tail_off + len(tail)
    phs = make_phdrs(dict(code=code_off, tail=tail_off, size=size))
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    eh = EHDR.pack(ident, etype, 62, 1, base + code_off,
                   EHDR.size if phoff is None else phoff, 0, 0, EHDR.size,
                   PHDR.size, n if phnum is None else phnum, 64, 0, 0)
    body = b"".join(PHDR.pack(p["type"], p["flags"], p["offset"], p["vaddr"],
                              p["vaddr"], p["filesz"], p["memsz"], p["align"])
                    for p in phs)
    return eh + body + EXIT0 + tail


def one_load(layout, base=0, **over):
    p = phdr(PT_LOAD, PF_R | PF_X, 0, base, layout["size"], layout["size"])
    p.update(over)
    return p


def interp_elf(path_bytes):
    return build_elf(lambda l: [
        phdr(PT_INTERP, PF_R, l["tail"], l["tail"], len(path_bytes), len(path_bytes), 1),
        one_load(l)], tail=path_bytes)


class Real:
    """A real binary whose headers can be read and patched in place."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        eh = EHDR.unpack_from(self.data)
        self.phoff, self.phnum = eh[5], eh[10]

    def phdrs(self):
        return [PHDR.unpack_from(self.data, self.phoff + i * PHDR.size)
                for i in range(self.phnum)]

    def patched(self, edit):
        """A copy with edit(list of mutable phdr lists) applied."""
        phs = [list(p) for p in self.phdrs()]
        edit(phs)
        out = bytearray(self.data)
        for i, p in enumerate(phs):
            PHDR.pack_into(out, self.phoff + i * PHDR.size, *p)
        return bytes(out)

    def index(self, ptype, nth=0):
        hits = [i for i, p in enumerate(self.phdrs()) if p[0] == ptype]
        if len(hits) <= nth:
            raise SystemExit(f"real binary lacks program header type {ptype} #{nth}")
        return hits[nth]


# Field positions in an unpacked PHDR.
T, FL, OFF, VA, PA, FSZ, MSZ, AL = range(8)


class Case:
    def __init__(self, name, path, status=None, reason=None, manifest_why=None):
        self.name, self.path = name, path
        self.status = status          # required status, else 126 or 127
        self.reason = reason          # required text after "flatux: FILE: "
        self.manifest_why = manifest_why


def write(path, data, mode=0o755):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def make_cases(args, work):
    cases = []

    def add(name, data, mode=0o755, **kw):
        path = os.path.join(work, name)
        write(path, data, mode)
        cases.append(Case(name, path, **kw))
        return path

    # The fuzz corpus: every file its manifest says must be rejected.
    with open(args.manifest) as f:
        for line in f:
            name, _, why = line.rstrip("\n").partition("\t")
            if not name or why == "-":
                continue
            with open(os.path.join(args.corpus, name), "rb") as src:
                add("corpus-" + name, src.read(), manifest_why=why)
    if not cases:
        raise SystemExit(f"no malformed files listed in {args.manifest}")

    # Hand-built images.
    ok = os.path.join(work, "built-ok-control")
    write(ok, build_elf(lambda l: [one_load(l)]))
    add("built-phdrs-beyond-eof",
        build_elf(lambda l: [one_load(l)], phoff=0x10000),
        status=126, reason="program headers beyond end of file")
    add("built-phnum-past-eof",
        build_elf(lambda l: [one_load(l)], phnum=40),
        status=126, reason="program headers beyond end of file")
    add("built-overlapping-load", build_elf(lambda l: [
        one_load(l, memsz=3 * PAGE),
        one_load(l, base=PAGE, flags=PF_R)]), status=126)
    add("built-memsz-lt-filesz",
        build_elf(lambda l: [one_load(l, memsz=l["size"] // 2)]), status=126)
    add("built-huge-memsz",
        build_elf(lambda l: [one_load(l, memsz=1 << 47)]), status=126)
    add("built-memsz-wraps",
        build_elf(lambda l: [one_load(l, memsz=(1 << 64) - PAGE)]), status=126)
    add("built-exec-huge-memsz", build_elf(
        lambda l: [one_load(l, base=0x400000, memsz=(1 << 47) - 0x400000)],
        etype=ET_EXEC, base=0x400000), status=126)

    text = os.path.join(work, "aux-interp-text")
    write(text, b"this is a text file, not an ELF interpreter\n")
    tiny = os.path.join(work, "aux-interp-truncated")
    write(tiny, b"\x7fELF\x02\x01\x01\x00\x00\x00")
    add("built-interp-missing", interp_elf(b"/nonexistent-flatux-test/ld.so\0"),
        status=126, reason="ELF interpreter not found")
    add("built-interp-text", interp_elf(text.encode() + b"\0"),
        status=126, reason="ELF interpreter is not a loadable x86_64 ELF file")
    add("built-interp-truncated-elf", interp_elf(tiny.encode() + b"\0"),
        status=126, reason="ELF interpreter is not a loadable x86_64 ELF file")
    add("built-interp-no-nul", interp_elf(b"/lib64/ld-linux-x86-64.so.2"),
        status=126, reason="bad PT_INTERP")
    add("built-interp-directory", interp_elf(work.encode() + b"\0"),
        status=126, reason="Permission denied")

    # The real binary, patched.
    real = Real(args.real_binary)
    add("real-truncated-header-10", real.data[:10],
        status=126, reason="truncated ELF header")
    add("real-cut-after-ehdr", real.data[:EHDR.size],
        status=126, reason="program headers beyond end of file")

    def grow_first_load(phs):
        a, b = real.index(PT_LOAD), real.index(PT_LOAD, 1)
        phs[a][MSZ] = phs[b][VA] - phs[a][VA] + PAGE
    add("real-overlapping-load", real.patched(grow_first_load), status=126)

    def shrink_memsz(phs):
        i = real.index(PT_LOAD)
        phs[i][MSZ] = phs[i][FSZ] // 2
    add("real-memsz-lt-filesz", real.patched(shrink_memsz), status=126)

    def huge_memsz(phs):
        i = max(i for i, p in enumerate(phs) if p[T] == PT_LOAD)
        phs[i][MSZ] = 1 << 47
    add("real-huge-memsz", real.patched(huge_memsz), status=126)

    def drop_interp_nul(phs):
        phs[real.index(PT_INTERP)][FSZ] -= 1
    add("real-interp-no-nul", real.patched(drop_interp_nul),
        status=126, reason="bad PT_INTERP")

    ip = real.phdrs()[real.index(PT_INTERP)]
    old = real.data[ip[OFF]:ip[OFF] + ip[FSZ]]
    new = b"/nonexistent-flatux/".ljust(len(old) - 1, b"x")[:len(old) - 1] + b"\0"
    add("real-interp-missing",
        real.data[:ip[OFF]] + new + real.data[ip[OFF] + ip[FSZ]:],
        status=126, reason="ELF interpreter not found")

    def interp_to(path):
        size = len(path.encode()) + 1

        def edit(phs):
            i = real.index(PT_INTERP)
            phs[i][OFF], phs[i][FSZ], phs[i][MSZ] = len(real.data), size, size
        return edit
    for tag, target in (("text", text), ("truncated-elf", tiny)):
        # The new path goes past the old end of the file, where no PT_LOAD
        # reaches: PT_INTERP is read from the file, not from memory.
        add(f"real-interp-{tag}", real.patched(interp_to(target)) + target.encode() + b"\0",
            status=126, reason="ELF interpreter is not a loadable x86_64 ELF file")

    add("real-no-exec-permission", real.data, mode=0o644,
        status=126, reason="Permission denied")

    # Files that are no ELF at all.
    add("empty-file", b"", status=126)
    add("plain-text", b"echo this has no #! line\n", status=126)
    add("shebang-blank", b"#!   \n", status=126)
    add("shebang-missing-interpreter", b"#!/nonexistent-flatux/sh\n", status=127,
        reason="No such file or directory")
    d = os.path.join(work, "a-directory")
    os.mkdir(d, 0o755)
    cases.append(Case("a-directory", d, status=126, reason="Permission denied"))
    return ok, cases


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def status_of(returncode):
    return 128 - returncode if returncode < 0 else returncode


def run_native(path, cwd):
    try:
        p = subprocess.run([path], cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=10, preexec_fn=no_core)
    except subprocess.TimeoutExpired:
        return "timeout"
    except OSError as e:
        return f"exec: {e.strerror}"
    rc = status_of(p.returncode)
    if rc > 128:
        try:
            return f"ran, {rc} ({signal.Signals(rc - 128).name})"
        except ValueError:
            pass
    return f"ran, {rc}"


def run_flatux(flatux, path, cwd):
    try:
        p = subprocess.run([flatux, "run", "--", path], cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=30, preexec_fn=no_core)
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode("utf-8", "replace")
    return status_of(p.returncode), p.stderr.decode("utf-8", "replace")


def check(case, status, err):
    """Problems with one flatux run; empty when it was refused properly."""
    problems = []
    if status is None:
        return ["timed out"]
    if status >= 128:
        problems.append(f"status {status}: flatux or the guest was killed")
    elif case.status is not None and status != case.status:
        problems.append(f"status {status}, want {case.status}")
    elif status not in (126, 127):
        problems.append(f"status {status}, want 126 or 127")
    low = err.lower()
    for w in CRASH_WORDS:
        if w in low:
            problems.append(f"stderr mentions {w!r}")
    prefix = f"flatux: {case.path}: "
    lines = [ln for ln in err.splitlines() if ln.startswith(prefix)]
    if not lines:
        problems.append(f"no stderr line starting with {prefix!r}")
    elif case.reason is not None and lines[0][len(prefix):] != case.reason:
        problems.append(f"reason {lines[0][len(prefix):]!r}, want {case.reason!r}")
    return problems


def reason_of(case, err):
    prefix = f"flatux: {case.path}: "
    for ln in err.splitlines():
        if ln.startswith(prefix):
            return ln[len(prefix):]
    return err.strip().replace("\n", " | ")[:80] or "(no stderr)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--work", required=True, help="recreated on every run")
    ap.add_argument("--real-binary", default="/bin/true")
    ap.add_argument("--no-native", action="store_true")
    args = ap.parse_args()

    args.flatux = os.path.abspath(args.flatux)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ok, cases = make_cases(args, work)

    failures = 0
    # A refusal of every file would prove nothing if good files were refused
    # too: the control image must run, natively and under flatux.
    native_ok = run_native(ok, work)
    status, err = run_flatux(args.flatux, ok, work)
    print(f"control {os.path.basename(ok)}: native {native_ok}; flatux status {status}")
    if native_ok != "ran, 0" or status != 0:
        print(f"FAIL: control image did not exit 0 (stderr: {err.strip()!r})")
        failures += 1

    rows = []
    for c in cases:
        status, err = run_flatux(args.flatux, c.path, work)
        problems = check(c, status, err)
        native = "" if args.no_native else run_native(c.path, work)
        rows.append((c, status, reason_of(c, err), native, problems))
        failures += bool(problems)

    w = max(len(c.name) for c in cases)
    print(f"\n{'file':<{w}}  status  flatux says{'':<38}  native")
    for c, status, reason, native, problems in rows:
        mark = "FAIL " if problems else ""
        shown = "-" if status is None else status
        print(f"{mark}{c.name:<{w}}  {shown!s:>6}  {reason:<49}  {native}")
        for p in problems:
            print(f"      ^ {p}")
        # The corpus names the parser's message; the loader may meet
        # another problem first, which is worth seeing but not an error.
        if c.manifest_why and status in (126, 127) and reason != c.manifest_why:
            print(f"      note: the corpus manifest expects {c.manifest_why!r}")
    print(f"\n{len(cases)} files, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

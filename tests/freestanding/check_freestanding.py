#!/usr/bin/env python3
"""Enforces the kernel's freestanding rule on its object files.

    check_freestanding.py --allowlist FILE [--allowlist FILE ...]
                          [--gate STEM] [--nm NM] [--readelf READELF]
                          [--objdump OBJDUMP] INPUT...

INPUT is an object file, an ar archive, or @LIST (a file naming one input per
line). Together the inputs are "the kernel". While kernel code runs, FS holds
the guest's TLS pointer, so anything that touches host TLS or host libc state
corrupts the guest; and all mutable kernel state must live in the kernel heap.
The check fails when:

  (a) an object references a symbol that no input defines and the allowlist
      does not name. Allowlist lines:
          NAME            allowed from any object (pure libc mem*/str*, names
                          the static linker defines)
          gate: NAME      allowed only from the foreign-code gate, i.e. from
                          objects whose file name starts with STEM + "."
                          (default STEM: foreign_gate)
      NAME may be a shell-style pattern; '#' starts a comment.
  (b) an object has a non-empty writable static data section (.data*,
      except .data.rel.ro*, .bss*, .tdata*, .tbss*, .ldata*, .lbss*) or
      a COMMON symbol;
  (c) an object other than the gate's disassembles to an %fs: memory
      operand (host TLS, errno, the stack protector's canary);
  (d) an object disassembles to a vector, mask or x87 register operand
      (%xmm/%ymm/%zmm, %k0-7, %mm, %st): kernel code runs inside rewritten
      guest syscalls with the guest's FPU state live in those registers.

Each finding names the object (and function, for (c)). Exit status: 0 clean,
1 findings, 2 bad usage, a missing input or a failing tool.
"""

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WRITABLE_SECTION = re.compile(r"^\.(data|bss|tdata|tbss|ldata|lbss)(\..*)?$")
READ_ONLY_AFTER_RELOCATION = re.compile(r"^\.data\.rel\.ro(\..*)?$")
SECTION_LINE = re.compile(
    r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-fA-F]+\s+[0-9a-fA-F]+\s+([0-9a-fA-F]+)\s")
FUNCTION_LINE = re.compile(r"^[0-9a-fA-F]+ <(.+)>:$")
FPU_REGISTER = re.compile(r"%(?:[xyz]mm\d+|k[0-7]\b|mm\d\b|st\b|st\(\d\))")


class ToolError(Exception):
    pass


class KernelObject:
    def __init__(self, path, shown, name, gate_stem):
        self.path = path      # file on disk the tools read
        self.shown = shown    # what findings call it
        self.is_gate = name.startswith(gate_stem + ".")


def tool(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise ToolError(f"{argv[0]}: {e}")
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc.stdout


def ar_members(archive):
    """Yields (name, bytes) for each member of a System V / GNU ar archive.

    Read by hand rather than with `ar x` because members of one archive may
    share a base name (same file name in two source folders), and extraction
    by name would keep only one of them.
    """
    data = archive.read_bytes()
    if data.startswith(b"!<thin>\n"):
        raise ToolError(f"{archive}: thin archives are not supported; pass the objects")
    if not data.startswith(b"!<arch>\n"):
        raise ToolError(f"{archive}: not an ar archive")
    pos, long_names = 8, b""
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode("ascii", "replace").rstrip()
        size = int(header[48:58].decode("ascii").strip())
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name in ("/", "/SYM64/"):
            continue
        if name == "//":
            long_names = body
            continue
        if name.startswith("/") and name[1:].isdigit():
            start = int(name[1:])
            name = long_names[start:long_names.index(b"\n", start)].decode().rstrip("/")
        else:
            name = name.rstrip("/")
        yield name, body


def collect_inputs(args, gate_stem, scratch):
    paths = []
    for arg in args:
        if arg.startswith("@"):
            listing = Path(arg[1:])
            if not listing.is_file():
                raise ToolError(f"{listing}: no such list file")
            paths += [line.strip() for line in listing.read_text().splitlines() if line.strip()]
        else:
            paths.append(arg)
    objects = []
    for p in map(Path, paths):
        if not p.is_file():
            raise ToolError(f"{p}: missing (build the kernel before running this check)")
        with open(p, "rb") as f:
            magic = f.read(8)
        if magic in (b"!<arch>\n", b"!<thin>\n"):
            for i, (name, body) in enumerate(ar_members(p)):
                extracted = Path(scratch) / f"{len(objects)}.{i}.o"
                extracted.write_bytes(body)
                objects.append(KernelObject(extracted, f"{p}({name})", Path(name).name, gate_stem))
        else:
            objects.append(KernelObject(p, str(p), p.name, gate_stem))
    return objects


def read_allowlists(files):
    anywhere, gate_only = [], []
    for f in files:
        for raw in Path(f).read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("gate:"):
                gate_only.append(line[5:].strip())
            else:
                anywhere.append(line)
    return anywhere, gate_only


def matches(name, patterns):
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def demangler():
    cxxfilt = shutil.which("c++filt")

    def demangle(names):
        if not cxxfilt or not names:
            return {n: n for n in names}
        out = subprocess.run([cxxfilt], input="\n".join(names) + "\n",
                             capture_output=True, text=True).stdout.splitlines()
        return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}
    return demangle


def nm_symbols(nm, obj, which):
    """(name, type) pairs from `nm -P`; which is --defined-only or --undefined-only."""
    pairs = []
    for line in tool([nm, "-P", which, str(obj.path)]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.endswith(":"):
            pairs.append((parts[0], parts[1]))
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--allowlist", action="append", required=True)
    ap.add_argument("--gate", default="foreign_gate",
                    help="file-name stem of the foreign-code gate's object")
    ap.add_argument("--nm", default=os.environ.get("NM", "nm"))
    ap.add_argument("--readelf", default=os.environ.get("READELF", "readelf"))
    ap.add_argument("--objdump", default=os.environ.get("OBJDUMP", "objdump"))
    ap.add_argument("inputs", nargs="*")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="freestanding.") as scratch:
        try:
            objects = collect_inputs(args.inputs, args.gate, scratch)
            anywhere, gate_only = read_allowlists(args.allowlist)
            findings = check(objects, anywhere, gate_only, args)
        except (ToolError, OSError, ValueError) as e:
            print(f"freestanding: error: {e}", file=sys.stderr)
            return 2

    if not objects:
        print("freestanding: no kernel objects yet; nothing to check")
        return 0
    for line in findings:
        print(line)
    verdict = "FAILED" if findings else "passed"
    print(f"freestanding: {len(objects)} object(s) checked, {len(findings)} finding(s): {verdict}")
    return 1 if findings else 0


def check(objects, anywhere, gate_only, args):
    findings = []
    defined, undefined = set(), {}
    for obj in objects:
        for name, kind in nm_symbols(args.nm, obj, "--defined-only"):
            if kind.isupper() or kind in "ui":
                defined.add(name)
            if kind == "C":
                findings.append(f"mutable state: COMMON symbol {name} in {obj.shown}")
        undefined[obj] = [name for name, _ in nm_symbols(args.nm, obj, "--undefined-only")]

    # (a) references that leave the kernel.
    offenders = []
    for obj in objects:
        for name in undefined[obj]:
            if name in defined or matches(name, anywhere):
                continue
            if obj.is_gate and matches(name, gate_only):
                continue
            note = " (allowed only from the foreign-code gate)" if matches(name, gate_only) else ""
            offenders.append((name, obj, note))
    pretty = demangler()(sorted({name for name, _, _ in offenders}))
    for name, obj, note in offenders:
        shown = name if pretty[name] == name else f"{name} [{pretty[name]}]"
        findings.append(f"undefined symbol: {shown} referenced from {obj.shown}{note}")

    # (b) mutable static state.
    for obj in objects:
        for line in tool([args.readelf, "-S", "-W", str(obj.path)]).splitlines():
            m = SECTION_LINE.match(line)
            if not m:
                continue
            section, size = m.group(1), int(m.group(3), 16)
            if size and WRITABLE_SECTION.match(section) and not READ_ONLY_AFTER_RELOCATION.match(section):
                findings.append(f"mutable state: section {section} ({size} bytes) in {obj.shown}")

    # (c) host TLS through %fs; (d) vector and x87 registers.
    for obj in objects:
        function = "?"
        for line in tool([args.objdump, "-d", "-w", "-C", "--no-show-raw-insn",
                          str(obj.path)]).splitlines():
            m = FUNCTION_LINE.match(line)
            if m:
                function = m.group(1)
                continue
            insn = line.split(":", 1)[1].strip() if ":" in line else line
            if "%fs:" in line and not obj.is_gate:
                findings.append(f"host TLS access: '{insn}' in {function} in {obj.shown}")
            if FPU_REGISTER.search(line):
                findings.append(f"vector register: '{insn}' in {function} in {obj.shown}")
    return findings


if __name__ == "__main__":
    sys.exit(main())

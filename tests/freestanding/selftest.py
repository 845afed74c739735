#!/usr/bin/env python3
"""Proves check_freestanding.py can fail, and fails for the right reasons.

    selftest.py --cxx CXX --checker SCRIPT --allowlist FILE --workdir DIR
                [--ar AR] [--nm NM] [--readelf READELF] [--objdump OBJDUMP]
                -- KERNEL_CXX_FLAGS...

Compiles the samples in selftest/ with the kernel's own compiler and flags,
then runs the checker on clean and on offending sets and compares its exit
status and findings with what each set must produce. A checker that passes
everything would pass freestanding.symbols too; this test is what keeps
that green meaningful.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "selftest"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--checker", required=True)
    ap.add_argument("--allowlist", required=True)
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--ar", default="ar")
    ap.add_argument("--nm")
    ap.add_argument("--readelf")
    ap.add_argument("--objdump")
    ap.add_argument("flags", nargs="*")
    args = ap.parse_args()

    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    def compile_sample(stem, extra=(), out_name=None):
        out = work / (out_name or f"{stem}.cpp.o")
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [args.cxx, *args.flags, *extra, "-c", str(HERE / f"{stem}.cpp"), "-o", str(out)]
        subprocess.run(cmd, check=True)
        return str(out)

    obj = {stem: compile_sample(stem) for stem in
           ("good_a", "good_b", "bad_libc", "bad_new", "bad_state", "bad_vector", "foreign_gate",
            "leaky")}
    # The kernel flags carry -fno-stack-protector; this one turns it back on.
    obj["bad_canary"] = compile_sample("bad_canary", ["-fstack-protector-all"])

    # Two members with one base name, as two source folders would give.
    same_a = compile_sample("good_a", out_name="one/sample.cpp.o")
    same_b = compile_sample("good_b", out_name="two/sample.cpp.o")
    archive = work / "libsample.a"
    subprocess.run([args.ar, "qc", str(archive), same_a, same_b], check=True)

    gate_allow = work / "gate_allowlist.txt"
    gate_allow.write_text("gate: ext2fs_*\n")

    tools = []
    for name in ("nm", "readelf", "objdump"):
        if getattr(args, name):
            tools += [f"--{name}", getattr(args, name)]

    def check(inputs, extra_allow=()):
        cmd = [sys.executable, args.checker, "--allowlist", args.allowlist, *tools]
        for a in extra_allow:
            cmd += ["--allowlist", str(a)]
        proc = subprocess.run(cmd + list(inputs), capture_output=True, text=True)
        return proc.returncode, proc.stdout + proc.stderr

    cases = [
        # name, inputs, extra allowlists, expected status, required substrings
        ("clean objects pass", [obj["good_a"], obj["good_b"]], [], 0, ["0 finding(s)"]),
        ("clean archive with a repeated member name passes", [str(archive)], [], 0,
         ["2 object(s) checked"]),
        ("no objects yet passes", [], [], 0, ["nothing to check"]),
        ("host libc and errno fail", [obj["bad_libc"]], [], 1,
         [f"malloc referenced from {obj['bad_libc']}",
          f"printf referenced from {obj['bad_libc']}",
          f"free referenced from {obj['bad_libc']}",
          f"__errno_location referenced from {obj['bad_libc']}"]),
        ("operator new/delete fail", [obj["bad_new"]], [], 1,
         ["_Znwm [operator new(unsigned long)]", "_ZdlPv"]),
        ("mutable globals fail", [obj["bad_state"]], [], 1,
         [f"section .data (4 bytes) in {obj['bad_state']}",
          f"section .bss (4 bytes) in {obj['bad_state']}",
          f"section .tbss (4 bytes) in {obj['bad_state']}",
          f"section .bss._ZZ4hitsvE1n (4 bytes) in {obj['bad_state']}",
          "host TLS access: ", f"in bump() in {obj['bad_state']}"]),
        ("stack protector fails", [obj["bad_canary"]], [], 1,
         ["__stack_chk_fail", "%fs:0x28"]),
        ("vector and x87 registers fail", [obj["bad_vector"]], [], 1,
         ["vector register: ", "%xmm0", "%ymm1", "%st", f"in spill_to_xmm(unsigned long) in {obj['bad_vector']}"]),
        ("the gate may call the foreign library and touch %fs",
         [obj["foreign_gate"], obj["good_a"]], [gate_allow], 0, ["0 finding(s)"]),
        ("anyone else calling the foreign library fails",
         [obj["foreign_gate"], obj["leaky"]], [gate_allow], 1,
         [f"ext2fs_open referenced from {obj['leaky']} (allowed only from the foreign-code gate)"]),
        ("a gate symbol not on the allowlist fails even in the gate",
         [obj["foreign_gate"]], [], 1, [f"ext2fs_open referenced from {obj['foreign_gate']}"]),
        ("a missing input is an error, not a pass", [str(work / "absent.o")], [], 2, ["missing"]),
    ]
    # Offences a clean case must not report.
    never_in_clean = ["undefined symbol", "mutable state", "host TLS access", "vector register"]

    failed = 0
    for name, inputs, extra, want_status, want_text in cases:
        status, out = check(inputs, extra)
        problems = []
        if status != want_status:
            problems.append(f"exit status {status}, expected {want_status}")
        problems += [f"output lacks {t!r}" for t in want_text if t not in out]
        if want_status == 0:
            problems += [f"output has {t!r}" for t in never_in_clean if t in out]
        print(f"{'ok  ' if not problems else 'FAIL'} {name}")
        if problems:
            failed += 1
            for p in problems:
                print(f"       {p}")
            print("       checker output:\n" + "".join(f"         {l}\n" for l in out.splitlines()))
    print(f"selftest: {len(cases) - failed}/{len(cases)} cases as expected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Python's own test suite as the judge: Debian's CPython test modules run
natively and under `flatux run`, compared test by test.

Each module runs twice with regrtest (`python3 -m test --junit-xml`): on the
host and as a guest. A test counts against flatux when it fails or errors
(or never ran: the module crashed or timed out) under flatux but not
natively. Differences listed in expected_to_differ.txt (with their
reasons: fork(), or executables that must load at a fixed address) are
reported but allowed; everything else fails the run, listed one by one.
An expected difference that no longer happens is reported so the list can
shrink.

A few tests race timers and threads and can fail on a loaded machine,
natively as well: a module whose flatux run comes out with unexpected
differences is run once more under flatux, and a test counts as failing
only when it failed both times (both runs are in the report).

Exit status: 0 when flatux has no unexpected failures, 1 when it has, 77
(skipped) when the test suite is not installed (Debian package
libpython3.11-testsuite).
"""
import argparse
import concurrent.futures
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))

MODULES = [
    "test_os", "test_posix", "test_signal", "test_select", "test_selectors", "test_epoll",
    "test_socket", "test_threading", "test_fcntl", "test_tempfile", "test_time", "test_mmap",
    "test_json", "test_io", "test_pty", "test_uuid", "test_platform", "test_asyncio.test_events",
    "test_shutil", "test_resource", "test_sched", "test_multiprocessing_spawn", "test_concurrent_futures",
]

# `--more` adds these (a longer local run: minutes more on 2 cores).
MORE_MODULES = [
    "test_subprocess", "test_eintr", "test_fileio", "test_file", "test_file_eintr",
    "test_largefile", "test_pathlib", "test_glob", "test_tarfile", "test_zipfile", "test_logging",
    "test_mailbox", "test_socketserver", "test_poll", "test_ioctl", "test_openpty", "test_pwd",
    "test_grp", "test_stat", "test_posixpath", "test_wait3", "test_wait4", "test_fork1",
    "test_faulthandler", "test_threadsignals", "test_thread", "test_threading_local",
    "test_threadedtempfile", "test_multiprocessing_fork", "test_multiprocessing_forkserver",
    "test_getpass", "test_sys", "test_syslog", "test_httplib", "test_urllib2_localnet", "test_ssl",
    "test_sqlite3", "test_compileall", "test_py_compile", "test_zipimport", "test_fileinput",
    "test_filecmp", "test_dbm_gnu", "test_smtplib", "test_ftplib", "test_imaplib", "test_asyncio",
]

# Tests left out on both sides, with the reason.
IGNORED = [
    # The project's machines are Firecracker VMs: AF_VSOCK exists, but no
    # peer ever answers, so these hang natively.
    ("*VSOCK*", "AF_VSOCK has no peer on these machines (hangs natively)"),
]


def load_expected(path):
    """Lines of `PATTERN  REASON`; PATTERN is an fnmatch pattern of test ids."""
    entries = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, _, reason = line.partition(" ")
            entries.append((pattern, reason.strip()))
    return entries


def parse_junit(path):
    """{test id: "ok" | "skip" | "fail"} from regrtest's JUnit XML."""
    results = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    for case in root.iter("testcase"):
        name = case.get("name")
        if case.find("failure") is not None or case.find("error") is not None:
            results[name] = "fail"
        elif case.find("skipped") is not None:
            results[name] = "skip"
        else:
            results[name] = "ok"
    return results


def skip_reasons(path):
    """{test id: the skip message} from regrtest's JUnit XML."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    reasons = {}
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if skipped is not None:
            reasons[case.get("name")] = (skipped.get("message") or skipped.text or "").strip()
    return reasons


def run_module(side, module, args, workdir, attempt=1):
    """Runs one module on one side; returns (results or None, seconds, log path)."""
    tmp = os.path.join(workdir, f"{side}-{module}" + (f"-{attempt}" if attempt > 1 else ""))
    os.makedirs(tmp, exist_ok=True)
    xml = os.path.join(tmp, "junit.xml")
    log = os.path.join(tmp, "log.txt")
    cmd = [args.python, "-m", "test", "--junit-xml", xml]
    for pattern, _ in IGNORED:
        cmd += ["--ignore", pattern]
    cmd.append(module)
    if side == "flatux":
        cmd = [args.flatux, "run", "--"] + cmd
    # Each run has its own temporary folder, so runs side by side never
    # share regrtest's work folders.
    env = dict(os.environ, TMPDIR=tmp)
    env.pop("PYTHONPATH", None)
    start = time.monotonic()
    with open(log, "wb") as out:
        try:
            subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           env=env, cwd=tmp, timeout=args.timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            out.write(f"\n*** timed out after {args.timeout} s\n".encode())
    return parse_junit(xml), time.monotonic() - start, log


def unexpected_in(nat, flx, expected):
    """Tests worse under flatux than natively that the list does not excuse."""
    if flx is None:
        return {"*"}
    bad = {t for t, v in flx.items() if v == "fail"} | {t for t in nat if t not in flx}
    bad -= {t for t, v in nat.items() if v == "fail"}
    return {t for t in bad if expected_reason(t, expected)[0] is None}


def merge_retry(first, second):
    """A test fails only if it failed in both runs; a run without results
    leaves the other's."""
    if first is None or second is None:
        return second if first is None else first
    merged = dict(first)
    for t, v in second.items():
        if merged.get(t) == "fail" or t not in merged:
            merged[t] = v
    return merged


def expected_reason(test_id, expected):
    for pattern, reason in expected:
        if fnmatch.fnmatchcase(test_id, pattern):
            return pattern, reason
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    ap.add_argument("--timeout", type=int, default=1500, help="seconds per module and side")
    ap.add_argument("--report", help="write the report here (markdown) as well")
    ap.add_argument("--workdir", help="keep logs and XML here (default: a temporary folder)")
    ap.add_argument("--expected", default=os.path.join(HERE, "expected_to_differ.txt"))
    ap.add_argument("--more", action="store_true",
                    help="the longer local run: MORE_MODULES as well as the default modules")
    ap.add_argument("modules", nargs="*", default=MODULES)
    args = ap.parse_args()
    if args.more:
        args.modules = list(args.modules) + [m for m in MORE_MODULES if m not in args.modules]
        if "test_asyncio" in args.modules:  # the whole package holds test_events
            args.modules = [m for m in args.modules if not m.startswith("test_asyncio.")]
    args.flatux = os.path.abspath(args.flatux)

    # A harness started in the background inherits SIGINT ignored, and so
    # would every test run (test_signal's KeyboardInterrupt tests fail then).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    probe = subprocess.run([args.python, "-c", "import test.regrtest, test.test_os"],
                           capture_output=True)
    if probe.returncode != 0:
        print(f"SKIP: {args.python} has no test suite (Debian: apt-get install libpython3.11-testsuite)")
        return 77

    expected = load_expected(args.expected)
    workdir = args.workdir or tempfile.mkdtemp(prefix="flatux-pysuite-")
    os.makedirs(workdir, exist_ok=True)
    # The slow modules first, so the pool ends evenly.
    slow = ["test_asyncio", "test_multiprocessing_spawn", "test_multiprocessing_fork",
            "test_multiprocessing_forkserver", "test_concurrent_futures", "test_subprocess",
            "test_io", "test_signal", "test_socket", "test_asyncio.test_events", "test_selectors",
            "test_threading", "test_os"]
    order = sorted(args.modules, key=lambda m: (m not in slow, slow.index(m) if m in slow else 0))
    jobs = [(side, m) for m in order for side in ("flatux", "native")]
    results = {}
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_module, side, m, args, workdir): (side, m) for side, m in jobs}
        for fut in concurrent.futures.as_completed(futures):
            side, m = futures[fut]
            res, secs, log = fut.result()
            results[(side, m)] = (res, secs, log)
            state = "no results" if res is None else f"{sum(v == 'fail' for v in res.values())} bad of {len(res)}"
            print(f"  {side:6} {m:28} {secs:7.1f} s  {state}", flush=True)
    # Second chance for modules that came out behind (timing-sensitive tests).
    retry = [m for m in order
             if unexpected_in(results[("native", m)][0] or {}, results[("flatux", m)][0], expected)]
    retried = {}
    if retry:
        print(f"  running again under flatux: {', '.join(retry)}", flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_module, "flatux", m, args, workdir, 2): m for m in retry}
            for fut in concurrent.futures.as_completed(futures):
                m = futures[fut]
                res, secs, log = fut.result()
                first, first_s, first_log = results[("flatux", m)]
                retried[m] = (first, res)
                results[("flatux", m)] = (merge_retry(first, res), first_s + secs, f"{first_log} and {log}")
                state = "no results" if res is None else f"{sum(v == 'fail' for v in res.values())} bad of {len(res)}"
                print(f"  flatux {m:28} {secs:7.1f} s  {state} (second run)", flush=True)
    wall = time.monotonic() - start

    lines = ["# Python test suite: native and under flatux", ""]
    lines.append("| module | tests (native) | run under flatux | failures+errors native | flatux | "
                 "unexpected | expected | time native | time flatux |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    unexpected, expected_hits, stale, skipped_only = [], [], [], []
    used_patterns = set()
    totals = [0, 0, 0, 0, 0, 0]
    for m in order:
        nat, nat_s, nat_log = results[("native", m)]
        flx, flx_s, flx_log = results[("flatux", m)]
        nat = nat or {}
        crashed = flx is None
        flx = flx or {}
        nat_bad = {t for t, v in nat.items() if v == "fail"}
        flx_bad = {t for t, v in flx.items() if v == "fail"}
        # A test the native side ran that flatux never reported: the guest
        # module died or timed out before it.
        missing = {t for t in nat if t not in flx}
        worse = sorted((flx_bad - nat_bad) | missing)
        n_unexp = n_exp = 0
        for t in worse:
            why = "never ran (module crashed or timed out; see log)" if t in missing else "failed"
            pattern, reason = expected_reason(t, expected)
            if pattern:
                used_patterns.add(pattern)
                expected_hits.append((t, why, reason))
                n_exp += 1
            else:
                unexpected.append((t, why, flx_log))
                n_unexp += 1
        for t in sorted(nat):
            if t in flx and flx[t] != "fail" and t not in nat_bad:
                pattern, _ = expected_reason(t, expected)
                if pattern:
                    used_patterns.add(pattern + "?ok")
        # Not a failure, but a part of the surface the guest does not get:
        # a test natively run that skips itself under flatux.
        only = sorted(t for t, v in flx.items() if v == "skip" and nat.get(t) in ("ok", "fail"))
        if only:
            reasons = skip_reasons(os.path.join(workdir, f"flatux-{m}", "junit.xml"))
            skipped_only += [(t, reasons.get(t, "")) for t in only]
        if crashed:
            unexpected.append((m, "no results from the flatux run", flx_log))
            n_unexp += 1
        run_flatux = sum(v != "skip" for v in flx.values())
        run_native = sum(v != "skip" for v in nat.values())
        row = [len(nat), len(flx), len(nat_bad), len(flx_bad | missing), n_unexp, n_exp]
        for i, v in enumerate(row):
            totals[i] += v
        lines.append(f"| {m} | {len(nat)} ({run_native} run) | {len(flx)} ({run_flatux} run) | {len(nat_bad)} | "
                     f"{len(flx_bad | missing)} | {n_unexp} | {n_exp} | {nat_s:.0f} s | {flx_s:.0f} s |")
    lines.append(f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | {totals[4]} | "
                 f"{totals[5]} | | |")
    lines += ["", f"Wall time: {wall:.0f} s with {args.jobs} runs at a time.", ""]
    for m, (first, second) in sorted(retried.items()):
        def bad(r):
            return "no results" if r is None else sum(v == "fail" for v in r.values())
        lines.append(f"{m} ran twice under flatux: {bad(first)} then {bad(second)} failures+errors; "
                     "a test counts as failing when it failed both times.")
    if retried:
        lines.append("")
    for pattern, reason in expected:
        if pattern not in used_patterns and pattern + "?ok" in used_patterns:
            stale.append((pattern, reason))
    if unexpected:
        lines += ["## Unexpected differences (flatux worse than native)", ""]
        lines += [f"- `{t}`: {why} (log: {log})" for t, why, log in unexpected]
        lines.append("")
    if expected_hits:
        lines += ["## Expected differences", ""]
        lines += [f"- `{t}`: {why} — {reason}" for t, why, reason in expected_hits]
        lines.append("")
    if skipped_only:
        lines += ["## Skipped under flatux only (run natively; not counted as failures)", ""]
        lines += [f"- `{t}`: {why}" for t, why in skipped_only]
        lines.append("")
    if stale:
        lines += ["## Expected differences that no longer happen (shrink the list)", ""]
        lines += [f"- `{p}` — {r}" for p, r in stale]
        lines.append("")
    report = "\n".join(lines)
    print(report)
    if args.report:
        with open(args.report, "w") as f:
            f.write(report)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())

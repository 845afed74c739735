#!/usr/bin/env python3
"""Runs one of busybox's own test suites twice over the same root folder:
natively (chroot into a copy of the root) and under flatux (--root on a
second copy), then compares.

The suite's driver is the root's /bin/sh (the no-MMU hush, or ash in the MMU root), so
on the flatux side every shell, every applet and every helper the suite
starts is a guest; natively the very same binary runs on the host kernel.
The chroot makes both sides see the same files, shell and /dev.

  run_suite.py --suite testsuite|hush_test --flatux BIN --root ROOT
               --src BUSYBOX_SRC --work DIR [--timeout S] [--serial]
               [--survey] [--full] [--hush-modules M...]

--survey runs the flatux side with --strace into a pipe and charges every
syscall that fails with ENOSYS or EOPNOTSUPP to the test being run when it
happened, so the report says which missing syscalls cost which tests.

Exit status: 0 when flatux passes at least as many tests as native (and
native ran at all), 1 otherwise. DIR/report.md gets the comparison, and
DIR/{native,flatux}/{stdout,stderr}.txt the raw output.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

GUEST_PATH = "/bin:/sbin:/usr/bin:/usr/sbin"

# The environment Debian's build runs `make check` with, plus what chroot
# and flatux would otherwise inherit from the host.
SUITE_ENV = {
    "PATH": GUEST_PATH,
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/sh",
    "ECHO": "/bin/echo",
    "TERM": "dumb",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "SKIP_KNOWN_BUGS": "y",
    "SKIP_INTERNET_TESTS": "y",
    "TMPDIR": "/tmp",
}


# Two bc tests push 2 x 65536 loop iterations through `bc | bc | md5sum`:
# 50 s natively and 140 s under flatux (every small pipe write is a trapped
# syscall), more than the rest of the testsuite together. They are marked
# SKIPPED on both sides unless --full is given.
BC_STRESS_FIRST = 'testing "bc parsing of numbers"'
BC_STRESS_END = 'for f in bc*.bc; do'


def skip_bc_stress(path):
    with open(path) as f:
        lines = f.read().split("\n")
    try:
        first = lines.index(BC_STRESS_FIRST + " \\")
        end = lines.index(BC_STRESS_END)
    except ValueError:
        return False
    lines[end:end] = ["SKIP="]
    lines[first:first] = ["SKIP=1"]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return True


def prepare_root(base_root, dest, src, suite, hush_modules, full=False):
    """A private copy of the root with the suite in /bb."""
    if os.path.lexists(dest):
        shutil.rmtree(dest)
    # cp -a keeps the device nodes and the relative applet links.
    subprocess.run(["cp", "-a", base_root, dest], check=True)
    bb = os.path.join(dest, "bb")
    os.makedirs(bb)
    # runtest wants $bindir/busybox and $bindir/.config and makes
    # $bindir/runtest-tempdir-links; hush_test wants ./hush and ./.config.
    os.symlink("../bin/busybox", os.path.join(bb, "busybox"))
    config = os.path.join(base_root, "etc", "busybox.config")
    if suite == "testsuite":
        shutil.copy(config, os.path.join(bb, ".config"))
        ts = os.path.join(bb, "testsuite")
        subprocess.run(["cp", "-a", os.path.join(src, "testsuite"), ts], check=True)
        # runtest makes the applet link folder and one scratch folder per
        # old-style applet itself (rm -rf, then mkdir/ln -s). Made here in
        # advance, identically for both sides, so that a kernel lacking
        # mkdir/symlink still runs the tests, whose own file operations
        # then decide. Natively runtest simply remakes them.
        links = os.path.join(bb, "runtest-tempdir-links")
        os.makedirs(links)
        applets = subprocess.run([os.path.join(base_root, "bin", "busybox"), "--list"],
                                 check=True, capture_output=True, text=True).stdout.split()
        for a in ["busybox"] + applets:
            os.symlink("/bb/busybox", os.path.join(links, a))
        for a in os.listdir(ts):
            if os.path.isdir(os.path.join(ts, a)):
                os.makedirs(os.path.join(ts, ".tmpdir." + a))
        if not full and not skip_bc_stress(os.path.join(ts, "bc.tests")):
            print("note: bc stress tests not found in bc.tests; running them")
        cmd = ("cd /bb/testsuite && export bindir=/bb srcdir=/bb/testsuite"
               " && exec /bin/sh ./runtest -v")
    else:
        ht = os.path.join(bb, "hush_test")
        subprocess.run(["cp", "-a", os.path.join(src, "shell", "hush_test"), ht],
                       check=True)
        shutil.copy(config, os.path.join(ht, ".config"))
        os.symlink("/bin/busybox", os.path.join(ht, "hush"))
        cmd = "cd /bb/hush_test && exec /bin/sh ./run-all " + " ".join(hush_modules)
    return cmd


def native_argv(root, cmd):
    # A private mount namespace so that /proc (NOMMU busybox re-executes
    # itself through /proc/self/exe) can be mounted inside the copy. No pid
    # namespace: its init would ignore signals the suite sends to itself.
    inner = 'mount -t proc proc "$1/proc" && exec chroot "$1" /bin/sh -c "$2"'
    argv = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        argv[1:1] = ["--user", "--map-root-user", "--pid", "--fork"]
    return argv + ["/bin/sh", "-c", inner, "native", root, cmd]


def flatux_argv(flatux, root, cmd):
    return [flatux, "run", "--root", root, "--", "/bin/sh", "-c", cmd]


def run_side(name, argv, out_path, err_path, timeout, result):
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=err, env=dict(SUITE_ENV),
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
            timed_out = True
    result[name] = {"rc": rc, "timed_out": timed_out,
                    "seconds": time.monotonic() - t0}


SURVEY_ERRNOS = ("ENOSYS", "EOPNOTSUPP", "ENOTSUP")
# Counted, never blamed: busybox's copy loop falls back to read/write when
# sendfile fails, whatever the error.
SURVEY_BENIGN = ("sendfile",)
ST_LINE = re.compile(r"^\[pid (\d+)\] (\w+)\((.*)\) = (-?\w+)(?: (E[A-Z0-9]+))?")
ST_WRITE = re.compile(r'^\[pid \d+\] write\(1, "(.*?)"(?:\.\.\.)?, \d+\) = \d+$')
# Result lines are matched on their start only: strace shortens buffers.
ST_RESULT = {
    "testsuite": re.compile(r"^(?:PASS|FAIL|SKIPPED|UNTESTED): "),
    # run-all also echoes bare folder names into a pipe: require the slash.
    "hush_test": re.compile(r"^hush-[\w-]+/"),
}


class Survey:
    """Reads flatux's strace stream and charges failing syscalls to tests.

    The n-th result line written to stdout belongs to the n-th test in the
    output. testsuite prints "PASS: name" after a test has run, so events
    wait for the next result line; hush_test prints "dir/name:" before it
    runs one, so events go to the name last printed."""

    def __init__(self, suite):
        self.suite = suite
        self.argv = {}        # pid -> argv text of its last successful execve
        self.pending = {}     # (syscall, errno) -> example
        self.results = []     # per result line: ({(syscall, errno): example}, script)
        self.totals = {}      # (syscall, errno) -> count
        # testsuite scripts do their setup (ln -s, mkdir) before the
        # testing() calls that need it, so failures are also kept per
        # script: /bb/testsuite/X.tests or /bb/testsuite/APPLET/CASE.
        self.script = None
        self.by_script = {}

    # The suites' own scaffolding, whose failures decide no result: the
    # cleanup after each testing() and the applet link folder.
    # The failures of hush_test's run-all cleanup are reported through the
    # .fail files it leaves (hush_fail_notes), once per test.
    HARNESS = {
        "testsuite": ('"rm", "-f", "input", "expected", "actual"',
                      '"mkdir", "/bb/runtest-tempdir-links"',
                      '"rm", "-rf", "/bb/runtest-tempdir-links"',
                      '"ln", "-s", "/bb/busybox", "/bb/runtest-tempdir-links/',
                      '"mkdir", "-p", ".tmpdir.', '"rm", "-rf", ".tmpdir.'),
        # sed -i filtering the output, then rm of the output and of the
        # .fail file, which alone are named by absolute path.
        "hush_test": ('"sed", "-i", "-e", "/: invalid option /s:',
                      '"rm", "-f", "', '"rm", "/bb/hush_test/'),
    }

    def harness(self, who):
        if not who.startswith(self.HARNESS[self.suite]):
            return False
        return not who.startswith('"rm", "-f"') or self.suite == "testsuite" \
            or "/bb/hush_test/" in who

    def feed(self, line):
        m = ST_LINE.match(line)
        if not m:
            return
        pid, call, args, ret, err = m.groups()
        if call == "execve" and ret == "0":
            am = re.search(r'\[(.*?)\], ', args)
            self.argv[pid] = am.group(1)[:120] if am else args[:120]
            # New-style scripts are executed directly, old-style ones
            # through `sh -x -e`; other arguments may name testsuite files.
            sm = (re.match(r'"/bb/testsuite/([^"/]+\.tests)"', args)
                  or re.match(r'"sh", "-x", "-e", "/bb/testsuite/([^"]+)"', self.argv[pid]))
            if sm and sm.group(1) != self.script:
                # What a script that printed nothing more left behind is
                # its own, not the next script's first test's.
                self.script = sm.group(1)
                self.pending = {}
            return
        if err in SURVEY_ERRNOS:
            key = (call, err)
            self.totals[key] = self.totals.get(key, 0) + 1
            who = self.argv.get(pid, "?")
            text = "%s(%s) by [%s]" % (call, args[:80], who)
            if self.harness(who) or call in SURVEY_BENIGN:
                return
            hits = self.pending
            if self.suite == "hush_test" and self.results:
                hits = self.results[-1][0]
            hits.setdefault(key, text)
            if self.script:
                self.by_script.setdefault(self.script, {}).setdefault(key, text)
            return
        if call != "write":
            return
        wm = ST_WRITE.match(line)
        if wm and ST_RESULT[self.suite].match(wm.group(1)):
            if self.suite == "testsuite":
                self.results.append((self.pending, self.script))
            else:
                self.results.append(({}, None))
            self.pending = {}

    def read_fifo(self, path):
        with open(path, "r", errors="replace") as f:
            for line in f:
                self.feed(line)

    def by_test(self, names):
        """names: the tests in output order."""
        if len(names) != len(self.results):
            print("survey: %d result lines in strace, %d in stdout; charges may be off"
                  % (len(self.results), len(names)))
        return {n: r[0] for n, r in zip(names, self.results)}

    def silent_scripts(self):
        """Scripts with failing syscalls that printed no result at all."""
        printed = {script for _, script in self.results}
        return {s: h for s, h in self.by_script.items() if s not in printed}

    def scripts(self, names):
        """test -> failures in the same test script outside its own call."""
        out = {}
        for n, (_, script) in zip(names, self.results):
            if script and self.by_script.get(script):
                out[n] = (script, self.by_script[script])
        return out


TESTSUITE_LINE = re.compile(r"^(PASS|FAIL|SKIPPED|UNTESTED): (.*?)\s*$")
HUSH_LINE = re.compile(r"^(hush-[^:]+): (ok|fail|skip)")
HUSH_STATUS = {"ok": "PASS", "fail": "FAIL", "skip": "SKIPPED"}


def parse(suite, text):
    """Test name -> PASS/FAIL/SKIPPED/UNTESTED. A name seen twice keeps
    its first result and the repeat gets a #N suffix, so counts add up."""
    out = {}
    for line in text.splitlines():
        if suite == "testsuite":
            m = TESTSUITE_LINE.match(line)
            if not m:
                continue
            status, name = m.group(1), m.group(2)
        else:
            m = HUSH_LINE.match(line)
            if not m:
                continue
            name, status = m.group(1), HUSH_STATUS[m.group(2)]
        key, n = name, 1
        while key in out:
            n += 1
            key = "%s#%d" % (name, n)
        out[key] = status
    return out


def counts(res):
    c = {k: 0 for k in ("PASS", "FAIL", "SKIPPED", "UNTESTED")}
    for s in res.values():
        c[s] += 1
    return c


def hush_fail_notes(root):
    """run-all leaves DIR-NAME.fail holding `diff -u output expected`. An
    empty one means the output was right and only the cleanup after the
    diff (rm) failed."""
    notes = {}
    top = os.path.join(root, "bb", "hush_test")
    if not os.path.isdir(top):
        return notes
    for fn in os.listdir(top):
        if not fn.endswith(".fail") or not fn.startswith("hush-"):
            continue
        # The name is FOLDER-TEST with FOLDER's '/' gone; folder names
        # hold '-' too, so match them against the real folders.
        test = None
        for d in os.listdir(top):
            if d.startswith("hush-") and fn.startswith(d + "-"):
                cand = d + "/" + fn[len(d) + 1:-len(".fail")]
                if test is None or len(d) > len(test.split("/")[0]):
                    test = cand
        if test is None:
            continue
        with open(os.path.join(top, fn), errors="replace") as f:
            text = f.read()
        if not text:
            notes[test] = "output right, run-all's rm afterwards failed"
        else:
            body = [l for l in text.splitlines()
                    if l[:1] in "+-" and not l.startswith(("+++", "---"))]
            notes[test] = "diff (-got +want): " + " | ".join(body[:4])[:240]
    return notes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", choices=["testsuite", "hush_test"], required=True)
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--root", required=True, help="build/busybox-root")
    ap.add_argument("--src", required=True, help="busybox source tree")
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=int, default=420, help="seconds per side")
    ap.add_argument("--serial", action="store_true",
                    help="run the two sides one after the other")
    ap.add_argument("--only", choices=["native", "flatux"])
    ap.add_argument("--no-retry", action="store_true",
                    help="never run the flatux side a second time")
    ap.add_argument("--full", action="store_true",
                    help="keep the two bc stress tests (about 3 minutes more)")
    ap.add_argument("--survey", action="store_true",
                    help="charge ENOSYS/EOPNOTSUPP syscalls to tests (flatux --strace)")
    ap.add_argument("--hush-modules", nargs="*",
                    help="hush_test folders (default: all but hush-z_slow)")
    args = ap.parse_args()

    flatux = os.path.abspath(args.flatux)
    src = os.path.abspath(args.src)
    if not os.path.isdir(os.path.join(src, "testsuite")) and os.path.isdir(src):
        # tools/build-busybox keeps the tree under its versioned name.
        cands = sorted(os.path.join(src, d) for d in os.listdir(src)
                       if d.startswith("busybox-")
                       and os.path.isdir(os.path.join(src, d, "testsuite")))
        if len(cands) == 1:
            src = cands[0]
    if not os.path.isdir(os.path.join(src, "testsuite")):
        sys.exit("no busybox source tree at %s (run tools/build-busybox)" % src)
    os.makedirs(args.work, exist_ok=True)
    work = os.path.abspath(args.work)

    hush_modules = args.hush_modules
    if args.suite == "hush_test" and not hush_modules:
        # hush-z_slow takes ~140 s natively, and all but one of its tests
        # need the debug-only `memleak` builtin, so they fail everywhere.
        hush_modules = sorted(d for d in os.listdir(os.path.join(src, "shell", "hush_test"))
                              if d.startswith("hush-") and d != "hush-z_slow")

    sides = ["native", "flatux"] if not args.only else [args.only]
    argvs, logs, errs = {}, {}, {}
    survey, fifo, survey_thread = None, None, None
    for side in sides:
        d = os.path.join(work, side)
        os.makedirs(d, exist_ok=True)
        root = os.path.join(d, "root")
        cmd = prepare_root(os.path.abspath(args.root), root, src, args.suite,
                           hush_modules, args.full)
        if side == "native":
            argvs[side] = native_argv(root, cmd)
        else:
            argvs[side] = flatux_argv(flatux, root, cmd)
            if args.survey:
                fifo = os.path.join(d, "strace.fifo")
                if os.path.lexists(fifo):
                    os.unlink(fifo)
                os.mkfifo(fifo)
                argvs[side][2:2] = ["--strace=" + fifo]
                survey = Survey(args.suite)
                survey_thread = threading.Thread(target=survey.read_fifo, args=(fifo,))
                survey_thread.start()
        logs[side] = os.path.join(d, "stdout.txt")
        errs[side] = os.path.join(d, "stderr.txt")

    result = {}
    threads = []
    for side in sides:
        t = threading.Thread(target=run_side, args=(
            side, argvs[side], logs[side], errs[side], args.timeout, result))
        t.start()
        if args.serial:
            t.join()
        threads.append(t)
    for t in threads:
        t.join()
    if survey_thread:
        # Unblocks the reader's open() if flatux never opened the pipe.
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if survey_thread.is_alive() else -1
        survey_thread.join()
        if fd >= 0:
            os.close(fd)
        os.unlink(fifo)

    parsed = {}
    for side in sides:
        with open(logs[side], "rb") as f:
            parsed[side] = parse(args.suite, f.read().decode("utf-8", "replace"))
        r = result[side]
        c = counts(parsed[side])
        print("%-6s %4.0fs rc=%d%s  PASS %d  FAIL %d  SKIPPED %d  UNTESTED %d  (log %s)" % (
            side, r["seconds"], r["rc"], " TIMED OUT" if r["timed_out"] else "",
            c["PASS"], c["FAIL"], c["SKIPPED"], c["UNTESTED"], logs[side]))

    if len(sides) < 2:
        return 0

    # A few tests hang on timing (traps and signals racing a sleep); on a
    # loaded machine one of them can fail on either side. If flatux comes
    # out behind, its side runs once more and the better run counts: both
    # runs are reported, so a real regression still shows twice.
    if counts(parsed["flatux"])["PASS"] < counts(parsed["native"])["PASS"] and not args.no_retry:
        d = os.path.join(work, "flatux-retry")
        os.makedirs(d, exist_ok=True)
        cmd = prepare_root(os.path.abspath(args.root), os.path.join(d, "root"), src, args.suite,
                           hush_modules, args.full)
        log, err = os.path.join(d, "stdout.txt"), os.path.join(d, "stderr.txt")
        again = {}
        run_side("flatux", flatux_argv(flatux, os.path.join(d, "root"), cmd), log, err,
                 args.timeout, again)
        with open(log, "rb") as f:
            retry = parse(args.suite, f.read().decode("utf-8", "replace"))
        c = counts(retry)
        print("flatux passed fewer than native; its side again: PASS %d  FAIL %d  (log %s)"
              % (c["PASS"], c["FAIL"], log))
        if c["PASS"] > counts(parsed["flatux"])["PASS"]:
            parsed["flatux"], result["flatux"] = retry, again["flatux"]
            logs["flatux"], errs["flatux"] = log, err

    nat, flx = parsed["native"], parsed["flatux"]
    lost = sorted(k for k, s in nat.items() if s == "PASS" and flx.get(k) != "PASS")
    gained = sorted(k for k, s in flx.items() if s == "PASS" and nat.get(k) != "PASS")
    nat_fail = sorted(k for k, s in nat.items() if s == "FAIL")

    charged = survey.by_test(list(flx)) if survey is not None else {}
    in_script = survey.scripts(list(flx)) if survey is not None else {}
    notes = hush_fail_notes(os.path.join(work, "flatux", "root")) \
        if args.suite == "hush_test" else {}
    report = os.path.join(work, "report.md")
    with open(report, "w") as f:
        f.write("| %s | PASS | FAIL | SKIPPED | UNTESTED | time |\n|---|---|---|---|---|---|\n"
                % args.suite)
        for side in sides:
            c = counts(parsed[side])
            f.write("| %s | %d | %d | %d | %d | %.0f s |\n" % (
                side, c["PASS"], c["FAIL"], c["SKIPPED"], c["UNTESTED"],
                result[side]["seconds"]))
        f.write("\nPass natively, not under flatux (%d):\n\n" % len(lost))
        causes = {}
        for k in lost:
            why, cause = "", []
            if survey is not None:
                hits = charged.get(k, {})
                why = "; ".join(sorted(hits.values()))
                cause = sorted({c for c, _ in hits})
                if not why and k in in_script:
                    script, shits = in_script[k]
                    why = "elsewhere in %s: %s" % (script, "; ".join(sorted(shits.values())))
                    cause = sorted({c for c, _ in shits})
                why = " — " + (why or "no ENOSYS/EOPNOTSUPP")
            if k in notes:
                why = " — " + notes[k] + why
                if notes[k].startswith("output right"):
                    cause = ["output right; run-all's rm afterwards failed"]
            if k not in flx:
                cause = ["printed no result"]
            causes.setdefault(", ".join(cause) or "no ENOSYS/EOPNOTSUPP seen",
                              []).append(k)
            f.write("- %s (%s)%s\n" % (k, flx.get(k, "missing"), why))
        if survey is not None or notes:
            f.write("\nThe same, by what failed under flatux:\n\n")
            for cause, tests in sorted(causes.items(), key=lambda kv: -len(kv[1])):
                f.write("- %s (%d): %s\n" % (cause, len(tests), ", ".join(tests)))
        f.write("\nFail natively (%d): %s\n" % (len(nat_fail), ", ".join(nat_fail) or "none"))
        if survey is not None:
            f.write("\nSyscalls failing with %s under flatux (calls, tests charged):\n\n"
                    % "/".join(SURVEY_ERRNOS))
            per = {}
            for t, hits in charged.items():
                for key in hits:
                    per.setdefault(key, set()).add(t)
            lost_set = set(lost)
            for key, n in sorted(survey.totals.items(), key=lambda kv: -kv[1]):
                tests = per.get(key, set())
                if key[0] in SURVEY_BENIGN:
                    f.write("- %s %s: %d calls (busybox falls back; not blamed)\n"
                            % (key[0], key[1], n))
                    continue
                f.write("- %s %s: %d calls, %d tests (%d of them pass natively)\n"
                        % (key[0], key[1], n, len(tests), len(tests & lost_set)))
        if survey is not None and survey.silent_scripts():
            f.write("\nScripts that printed no result under flatux, and what failed in them:\n\n")
            for script, hits in sorted(survey.silent_scripts().items()):
                f.write("- %s: %s\n" % (script, "; ".join(sorted(hits.values()))))
        if gained:
            f.write("\nPass under flatux only (%d): %s\n" % (len(gained), ", ".join(gained)))
    with open(report) as f:
        sys.stdout.write(f.read())

    npass = counts(nat)["PASS"]
    fpass = counts(flx)["PASS"]
    if not nat and not result["native"]["timed_out"]:
        # chroot/unshare refused (no root, no user namespaces): no baseline.
        with open(errs["native"], errors="replace") as f:
            print("cannot run the suite natively here:\n" + f.read()[-2000:])
        return 77
    if result["native"]["timed_out"] or npass == 0:
        print("native run did not complete; nothing to compare against")
        return 1
    if fpass < npass:
        print("flatux passes %d tests, native %d" % (fpass, npass))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

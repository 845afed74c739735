#!/usr/bin/env python3
"""The OCI runtime validation suite (opencontainers/runtime-tools, its
validation/ tests) run against flatux-oci and against runc, the baseline:
each test once under each runtime; the test fails on every TAP item the
baseline passes and the runtime fails (or never reports: the test crashed
or timed out), and prints a table of both runtimes' counts.

The suite is not built here: its code is fetched, and the project's scripts
build no fetched code. --suite names a folder of already-built validation
executables (*.t) and runtimetest beside them; without it the test is
skipped (77). A rootfs-amd64.tar.gz in the folder is the containers' root;
without one, a busybox root (Debian's busybox-static, every applet) is made.

Each test runs in a fresh work folder (its bundles under TMPDIR there), in a
session of its own, with a timeout. Each runtime gets a private state root
(a wrapper passing --root), so the containers a test leaves are found and
deleted (--force) after it; --default-root runs the runtimes as given, on
their default roots, and deletes only the containers whose bundle is in the
work folder. Processes a test leaves in its session are killed; what a
runtime leaves in the host is taken away and noted in the table: mounts
under the work folder (runc mounts a container's /proc, /sys, /dev there,
in the host's mount namespace, when the config asks for no mount
namespace), and the new empty cgroup folders of the suite's cgroupsPath."""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_common import BUSYBOX, check, failures, have_busybox  # noqa: E402

ROOTFS = "rootfs-amd64.tar.gz"  # the name the suite's PrepareBundle untars from its working folder
ITEM = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*(?:-\s*)?(.*)$")
DIRECTIVE = re.compile(r"(?:^|\s+)#\s*(SKIP|TODO)\b", re.IGNORECASE)  # tap-go writes "ok 3 # SKIP text"


def skip_missing_suite(suite):
    print(f"SKIP: no built validation suite at {suite}.\n"
          "The suite is opencontainers/runtime-tools (its validation/ tests): fetched code, which this\n"
          "project's scripts may not build, so it is not built here. Where someone has built it outside\n"
          "the project, put its runtimetest and validation executables (*.t) in that folder (and,\n"
          "optionally, a rootfs-amd64.tar.gz) and run this test again.")
    return 77


def make_rootfs_tar(path):
    """A busybox root (every applet), as the suite's rootfs tarball."""
    root = path + ".d"
    for d in ("bin", "etc", "proc", "sys", "dev", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
    for a in applets:
        if a != "busybox" and "/" not in a:
            os.symlink("busybox", os.path.join(root, "bin", a))
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\n"
                "bin:x:2:2:bin:/bin:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    with open(os.path.join(root, "etc", "group"), "w") as f:
        f.write("root:x:0:\ndaemon:x:1:\nbin:x:2:\ntty:x:5:\nnogroup:x:65534:\n")
    with tarfile.open(path, "w:gz") as t:
        t.add(root, arcname=".", filter=lambda i: (setattr(i, "uid", 0), setattr(i, "gid", 0),
                                                   setattr(i, "uname", "root"), setattr(i, "gname", "root"), i)[-1])
    shutil.rmtree(root)


def parse_tap(text):
    """The TAP items of text, in order: dicts of ok (bool), skip (bool),
    text and diag (the YAML block and # comments after the item or, where
    it has no YAML block, the one just before it that no item took: the
    suite's in-container checks write their diagnostic, the container's
    stdout and stderr, first: a block with "stdout" is the next item's); the plan
    (the sum of the 1..N seen: some tests write one TAP stream a case; None
    where none is seen); and the YAML blocks no item took (the hook tests
    report only so, an "error" where a check fails)."""
    items, plan, block, pending, orphans = [], None, None, None, []
    for line in text.splitlines():
        if block is not None:
            if line.strip() == "...":
                yaml = textwrap.dedent("\n".join(block))
                if items and items[-1]["yaml"] is None and not re.search(r'^\s*"stdout":', yaml, re.MULTILINE):
                    items[-1]["yaml"] = yaml
                else:
                    if pending is not None:
                        orphans.append(pending)
                    pending = yaml
                block = None
            else:
                block.append(line)
            continue
        if line.strip() == "---":
            block = []
            continue
        m = re.match(r"^1\.\.(\d+)", line)
        if m:
            plan = (plan or 0) + int(m.group(1))
            continue
        if line.startswith("#") and items:
            items[-1]["comments"].append(line[1:].strip())
            continue
        m = ITEM.match(line)
        if m:
            desc = m.group(3)
            d = DIRECTIVE.search(desc)
            skip = bool(d) and d.group(1).upper() == "SKIP"
            if d:
                desc = desc[d.end():] if d.start() == 0 else desc[:d.start()]
            items.append({"ok": m.group(1) == "ok", "skip": skip, "text": desc.strip(), "yaml": pending,
                          "comments": []})
            pending = None
    if pending is not None:
        orphans.append(pending)
    for i in items:
        i["diag"] = "\n".join([i.pop("yaml") or ""] + i.pop("comments")).strip()
    return items, plan, orphans


def outside_errors(r):
    """The diagnostics outside any item that report an error."""
    return [o for o in r["orphans"] if re.search(r'^\s*"?error"?\s*:', o, re.MULTILINE)]


def mounts_under(path):
    """Mount points at or under path, deepest first."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == path or point.startswith(path + os.sep):
                out.append(point)
    return sorted(out, key=len, reverse=True)


def suite_cgroups():
    """The host's cgroup folders the suite names (cgroupsPath /cgrouptest
    and testdir/cgrouptest/container): a runtime removes the container's
    own and leaves a relative path's parents."""
    found = []
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            path = os.path.join(top, d)
            if re.search(r"/(cgrouptest|testdir)(/|$)", path):
                found.append(path)
    return found


def remove_tree(path):
    """Removes path unless something is mounted under it (a runtime that
    mounts a container's /proc, /sys, /dev in the host's mount namespace
    and leaves them): those are detached first; where one stays, the
    folder is kept, never removed through a mount."""
    for point in mounts_under(path):
        subprocess.run(["umount", "-l", point], capture_output=True)
    if mounts_under(path):
        print(f"note: mounts stay under {path}; it is kept", flush=True)
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


def keyed(items):
    """Items by (text, occurrence): the suite repeats item texts."""
    seen, out = {}, {}
    for i in items:
        n = seen.get(i["text"], 0)
        seen[i["text"]] = n + 1
        out[(i["text"], n)] = i
    return out


def session_pids(sid):
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2:].split()[4]) == sid:
                pids.append(int(name))
    return pids


class Runtime:
    """One runtime as the suite sees it (RUNTIME=exe)."""

    def __init__(self, name, path, work, private_root):
        self.name, self.path = name, path
        self.root = os.path.join(work, "state") if private_root else None
        if private_root:
            self.exe = os.path.join(work, name)
            with open(self.exe, "w") as f:
                f.write(f"#!/bin/sh\nexec '{path}' --root '{self.root}' \"$@\"\n")
            os.chmod(self.exe, 0o755)
        else:
            self.exe = path

    def _cmd(self, *args):
        return [self.path, *(["--root", self.root] if self.root else []), *args]

    def left_containers(self, work):
        """The ids of the containers of this run still known to the runtime."""
        try:
            r = subprocess.run(self._cmd("list", "--format", "json"), capture_output=True, text=True, timeout=30)
            listed = json.loads(r.stdout or "null") or []
        except (subprocess.TimeoutExpired, ValueError):
            return []
        return [c["id"] for c in listed
                if self.root or str(c.get("bundle", "")).startswith(work + os.sep)]

    def clean(self, work):
        left = self.left_containers(work)
        for cid in left:
            try:
                subprocess.run(self._cmd("delete", "--force", cid), capture_output=True, timeout=30)
            except subprocess.TimeoutExpired:
                pass
        return left


def run_one(test, suite, runtime, base, timeout, rootfs, private_root, keep):
    """Runs suite/test under runtime in a fresh folder; its result."""
    work = tempfile.mkdtemp(prefix=f"{test[:-2]}-{runtime[0]}-", dir=base)
    rt = Runtime(runtime[0], runtime[1], work, private_root)
    cwd = os.path.join(work, "cwd")
    tmp = os.path.join(work, "tmp")
    os.makedirs(cwd)
    os.makedirs(tmp)
    shutil.copy(os.path.join(suite, "runtimetest"), cwd)
    shutil.copy(rootfs, os.path.join(cwd, ROOTFS))
    env = dict(os.environ, RUNTIME=rt.exe, TMPDIR=tmp)
    out_path, err_path = os.path.join(work, "stdout"), os.path.join(work, "stderr")
    cgroups_before = set(suite_cgroups())
    started = time.time()
    timed_out = False
    # Files, not pipes: a container or a process the test starts keeps them.
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen([os.path.join(suite, test)], cwd=cwd, env=env, stdout=out, stderr=err,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
    seconds = time.time() - started
    left = rt.clean(work)
    strays = [pid for pid in session_pids(p.pid) if pid != os.getpid()]
    for pid in strays:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    cgroups = [d for d in suite_cgroups() if d not in cgroups_before]
    for d in sorted(cgroups, key=len, reverse=True):
        try:
            os.rmdir(d)  # only an empty one goes
        except OSError:
            pass
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    items, plan, orphans = parse_tap(stdout)
    mounts = mounts_under(work)
    result = {"test": test, "runtime": runtime[0], "rc": rc, "timed_out": timed_out, "seconds": round(seconds, 1),
              "items": items, "plan": plan, "orphans": orphans, "stderr": stderr, "left_containers": left,
              "stray_pids": strays, "left_mounts": mounts, "left_cgroups": cgroups}
    if keep:
        d = os.path.join(keep, runtime[0])
        os.makedirs(d, exist_ok=True)
        shutil.copy(out_path, os.path.join(d, test[:-2] + ".tap"))
        shutil.copy(err_path, os.path.join(d, test[:-2] + ".stderr"))
    remove_tree(work)
    return result


def counts(r):
    oks = sum(1 for i in r["items"] if i["ok"])
    skips = sum(1 for i in r["items"] if i["ok"] and i["skip"])
    nots = sum(1 for i in r["items"] if not i["ok"])
    how = ["timeout" if r["timed_out"] else (f"rc {r['rc']}" if r["rc"] else "")]
    if outside_errors(r):
        how.append(f"{len(outside_errors(r))} error outside items")
    if r["left_mounts"]:
        how.append(f"{len(r['left_mounts'])} mounts left")
    if r.get("left_cgroups"):
        how.append(f"{len(r['left_cgroups'])} cgroups left")
    return oks, nots, skips, ", ".join(h for h in how if h)


def short(text, n=600):
    text = (text or "").strip()
    return text if len(text) <= n else text[:n] + " ..."


def explain(diag):
    """An item's diagnostic, short; where it holds the output of runtimetest
    in the container (its own TAP), the items that fail there."""
    try:
        d = json.loads(diag)
    except ValueError:
        return short(diag)
    if not isinstance(d, dict) or "TAP version" not in str(d.get("stdout", "")):
        return short(diag)
    inner, plan, _ = parse_tap(d["stdout"])
    lines = [f"in the container: not ok '{i['text']}'" + (": " + short(i["diag"], 300).replace("\n", " ")
                                                           if i["diag"] else "")
             for i in inner if not i["ok"]]
    if plan is None:
        lines.append(f"in the container: runtimetest's TAP stops after {len(inner)} items ('{inner[-1]['text']}')"
                     if inner else "in the container: runtimetest wrote no TAP")
    for key in ("error", "stderr"):
        if d.get(key):
            lines.append(f"{key}: {short(d[key], 300)}")
    return "\n".join(lines) or short(diag)


def compare(base, run):
    """The baseline's passes that the runtime fails or does not report: a
    run that crashed or timed out reports nothing more; one whose earlier
    check failed often skips the later (a cgroup's values after its path);
    some items are made from what the container shows (one a capability up
    to the kernel's last, read from /proc/sys/kernel/cap_last_cap). The
    suite words some items by their result ("mounts[1] (/dev) found in
    order" passes where "mounts[1] (/dev) found" fails): an item one text
    of which begins the other is the same item."""
    b, r = keyed(base["items"]), keyed(run["items"])
    spare = [(k, i) for k, i in r.items() if k not in b and not i["ok"]]
    lost = []
    for key, item in b.items():
        if not item["ok"] or item["skip"]:
            continue
        other = r.get(key)
        if other is None:
            for n, (k, i) in enumerate(spare):
                if key[0].startswith(k[0]) or k[0].startswith(key[0]):
                    other = i
                    del spare[n]
                    break
        if other is None:
            why = ("the test timed out" if run["timed_out"] else f"the test exited {run['rc']}" if run["rc"] else
                   "its TAP ended short of its plan" if run["plan"] != len(run["items"]) else "")
            lost.append((f"'{key[0]}'", "not reported" + (f" ({why})" if why else ""),
                         short(run["stderr"], 400) if why else ""))
        elif not other["ok"]:
            text = f"'{key[0]}'" + ("" if other["text"] == key[0] else f" (reported as '{other['text']}')")
            lost.append((text, "not ok", explain(other["diag"]) or (
                "(no diagnostic)" + (f" the test's stderr: {short(run['stderr'], 400)}" if run["stderr"].strip() else ""))))
    return lost


def read_known(path):
    """The rows of the "Known differences" table in docs/COMPATIBILITY.md:
    (test, item, why). A test of "*" is any test, one ending in "_" a
    prefix; an item is the start of the item's text, "(any)" any item."""
    rows, inside = [], False
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return rows
    for line in lines:
        if line.startswith("### Known differences"):
            inside = True
            continue
        if inside and line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if inside and line.startswith("|") else []
        if len(cells) == 3 and cells[0] not in ("test", "---") and not set(cells[0]) <= {"-"}:
            rows.append(tuple(cells))
    return rows


def known_why(known, test, text):
    """Why a lost item is a known difference, or None."""
    item = text.strip("'").split("' (reported as")[0]
    for t, prefix, why in known:
        if (t == "*" or t == test or (t.endswith("_") and test.startswith(t))) and (prefix == "(any)" or item.startswith(prefix)):
            return why
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", required=True, help="folder of the built validation executables and runtimetest")
    ap.add_argument("--runtime", required=True, help="the runtime under test (build/flatux-oci)")
    ap.add_argument("--baseline", default="runc", help="the reference runtime (runc; a name is looked up on PATH)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds a test may take under one runtime")
    ap.add_argument("--only", action="append", default=[], help="this test only (name, with or without .t)")
    ap.add_argument("--default-root", action="store_true",
                    help="the runtimes on their default state roots, not private ones")
    ap.add_argument("--keep", help="a folder to keep each run's TAP and stderr in")
    ap.add_argument("--json", help="a file to write all results to")
    ap.add_argument("--known", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                                                    "COMPATIBILITY.md"),
                    help="the documented differences (a table under '### Known differences')")
    args = ap.parse_args()
    known = read_known(args.known)
    suite = os.path.abspath(args.suite)
    if not os.path.isdir(suite):
        return skip_missing_suite(suite)
    tests = sorted(f for f in os.listdir(suite) if f.endswith(".t") and os.access(os.path.join(suite, f), os.X_OK))
    if args.only:
        want = {o if o.endswith(".t") else o + ".t" for o in args.only}
        tests = [t for t in tests if t in want]
    if not tests or not os.access(os.path.join(suite, "runtimetest"), os.X_OK):
        print(f"SKIP: {suite} holds no validation executables (*.t) with runtimetest beside them")
        return 77
    if os.geteuid() != 0:
        print("SKIP: the validation suite runs containers as root")
        return 77
    if os.sep not in args.baseline:
        args.baseline = shutil.which(args.baseline) or args.baseline
    for what, path in (("runtime", args.runtime), ("baseline", args.baseline)):
        if not os.access(path, os.X_OK):
            print(f"SKIP: the {what} {path} is not there")
            return 77
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    runtimes = [("baseline", os.path.abspath(args.baseline)), ("runtime", os.path.abspath(args.runtime))]
    base = tempfile.mkdtemp(prefix="oci-validation-")
    try:
        rootfs = os.path.join(suite, ROOTFS)
        if not os.path.exists(rootfs):
            if not have_busybox():
                print(f"SKIP: no {ROOTFS} in {suite} and no {BUSYBOX} (busybox-static) to make one")
                return 77
            rootfs = os.path.join(base, ROOTFS)
            make_rootfs_tar(rootfs)
        results = []
        for test in tests:
            pair = [run_one(test, suite, rt, base, args.timeout, rootfs, not args.default_root, args.keep)
                    for rt in runtimes]
            results.append(pair)
            for r in pair:
                oks, nots, skips, how = counts(r)
                extra = "".join([f", {skips} skipped" if skips else "", f", {how}" if how else "",
                                 f", containers left: {len(r['left_containers'])}" if r["left_containers"] else "",
                                 f", stray processes killed: {len(r['stray_pids'])}" if r["stray_pids"] else ""])
                print(f"{test} under {r['runtime']}: {oks} ok, {nots} not ok ({r['seconds']} s{extra})", flush=True)
    finally:
        remove_tree(base)
    width = max(len(t) for t in tests)
    print(f"\n{'test':<{width}}  {'baseline ok/not-ok':<43} runtime ok/not-ok")
    for b, r in results:
        bo, bn, _, bh = counts(b)
        ro, rn, _, rh = counts(r)
        print(f"{b['test']:<{width}}  {bo:>8}/{bn:<3} {bh:<30}  {ro:>8}/{rn:<3} {rh}")
    print()
    for b, r in results:
        lost = compare(b, r)
        if r["timed_out"] and not b["timed_out"]:
            lost.append((f"the whole test", f"timed out after {args.timeout:g} s (not under the baseline)",
                         short(r["stderr"], 400)))
        if outside_errors(r) and not outside_errors(b):
            lost.append(("an error reported outside any item", "(none under the baseline)",
                         short("\n".join(outside_errors(r)))))
        if b["timed_out"] or b["rc"] and not b["items"]:
            print(f"note: {b['test']} under the baseline: "
                  f"{'timed out' if b['timed_out'] else 'exit ' + str(b['rc'])}: {short(b['stderr'], 300)}")
        skipped = [k[0] for k, i in keyed(r["items"]).items()
                   if i["ok"] and i["skip"] and keyed(b["items"]).get(k, {}).get("skip") is False]
        for text in skipped:
            print(f"note: {b['test']}: '{text}' passes under the baseline and is skipped under the runtime")
        unknown = []
        for text, how, diag in lost:
            why = known_why(known, b["test"], text)
            if why:
                print(f"known {b['test']}: {text}: {how}: {why}")
            else:
                unknown.append((text, how, diag))
        for text, how, diag in unknown:
            check(False, f"{b['test']}: {text}: {how}" + ("\n    " + diag.replace("\n", "\n    ") if diag else ""))
        if not lost:
            check(True, f"{b['test']}: every item the baseline passes passes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"{len(failures)} items the baseline passes and the runtime fails" if failures
          else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

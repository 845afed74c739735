#!/usr/bin/env python3
"""Checks `flatux mkimage` against what it was given.

A fixture tree (and, for the archive cases, a tar built from it with
tarfile, adding what only a tar can say: foreign owners, device nodes,
duplicate members, members without their folders) goes through
`flatux mkimage`; the image must pass `e2fsck -fn` and read back through
debugfs exactly: kinds, modes, owners, sizes, bytes, holes, link counts,
hard-link identity, symlink targets, device numbers, times, xattrs and the
folder listings.

    check_mkimage.py --flatux BUILD/flatux --case folder|tar|tar.gz|tar.xz
    check_mkimage.py --flatux BUILD/flatux --case corrupt|truncated|too_small|unreadable|missing|bad_size
"""
import argparse
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

MIB = 1 << 20
ROOT = os.geteuid() == 0


class Node:
    def __init__(self, kind, perm, uid, gid, mtime, atime=None, ctime=None, data=None, target=None,
                 dev=None, xattrs=None):
        self.kind = kind          # 'file' 'dir' 'symlink' 'char' 'block' 'fifo' 'socket'
        self.perm = perm
        self.uid, self.gid = uid, gid
        self.mtime = mtime        # (sec, nsec), or None where the tool picks the time
        self.atime = atime if atime is not None else mtime
        self.ctime = ctime if ctime is not None else mtime
        self.data = data          # bytes of a regular file
        self.size = len(data) if data is not None else 0
        self.target = target
        self.dev = dev            # (major, minor)
        self.xattrs = xattrs or {}
        self.link_group = None    # names of one inode share a group
        self.sparse = False       # must not be stored in full


def pattern(n, seed):
    out = bytearray()
    block = seed.encode()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:n])


def ns_pair(ns):
    return (ns // 1_000_000_000, ns % 1_000_000_000)


# ---- the fixture folder ---------------------------------------------------

SLOW_TARGET = "dir1/" + "long-target-" * 8 + "end"
TIMES = {  # path -> mtime in ns: nanoseconds, before 1970, after 2038
    "small.txt": 1_500_000_000_123_456_789,
    "big.bin": 1_600_000_000_000_000_001,
    "old.txt": -1_000_000_000_500_000_000,
    "future.txt": 4_000_000_000_999_999_999,
    "dir1": 1_400_000_000_000_000_000,
}


def build_tree(root):
    """The folder every case starts from; returns {path: Node}."""
    os.makedirs(root)
    w = lambda p, b: open(os.path.join(root, p), "wb").write(b)
    os.makedirs(os.path.join(root, "dir1/dir2/dir3"))
    os.mkdir(os.path.join(root, "sgid_dir"))
    os.mkdir(os.path.join(root, "sticky"))
    w("empty", b"")
    w("small.txt", b"hello\n")
    w("big.bin", pattern(3 * MIB // 2 + 123, "big"))
    w("zeros.bin", bytes(2 * MIB))
    w("old.txt", b"before 1970\n")
    w("future.txt", b"after 2038\n")
    w("name with space", b"spaced\n")
    w("h\u00e9llo.txt", b"utf-8 name\n")
    w("dir1/dir2/dir3/deep.txt", b"deep\n")
    with open(os.path.join(root, "holes.bin"), "wb") as f:
        f.write(pattern(4096, "head"))
        f.seek(3 * MIB)
        f.write(b"0123456789")
        f.truncate(5 * MIB)  # and a hole at the end
    w("hard1", b"two names\n")
    os.link(os.path.join(root, "hard1"), os.path.join(root, "dir1/hard2"))
    w("suid", b"#!/bin/sh\n")
    os.symlink("small.txt", os.path.join(root, "fast"))
    os.symlink(SLOW_TARGET, os.path.join(root, "slow"))
    os.mkfifo(os.path.join(root, "fifo"))
    os.chmod(os.path.join(root, "suid"), 0o4755)
    os.chmod(os.path.join(root, "sgid_dir"), 0o2775)
    os.chmod(os.path.join(root, "sticky"), 0o1777)
    os.chmod(os.path.join(root, "small.txt"), 0o600)
    try:
        os.setxattr(os.path.join(root, "small.txt"), "user.fixture", b"x-value")
    except OSError:
        pass  # no user xattrs on this filesystem
    if ROOT:
        os.mknod(os.path.join(root, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(os.path.join(root, "disk"), 0o660 | stat.S_IFBLK, os.makedev(259, 300000))
        os.chown(os.path.join(root, "dir1/dir2"), 1234, 5678, follow_symlinks=False)
        os.chown(os.path.join(root, "fast"), 70000, 80000, follow_symlinks=False)
    nodes = read_folder(root)
    # Times last, deepest first, and after the reading above (which moves
    # access times); lstat alone reads them back without touching them.
    for rel in sorted(nodes, key=lambda p: (-p.count("/"), p), reverse=False):
        full = os.path.join(root, rel) if rel else root
        mt = TIMES.get(rel, 1_700_000_000_000_000_000 + 7_000_000_011 * len(rel))
        os.utime(full, ns=(mt - 3_600_000_000_000, mt), follow_symlinks=False)
    for rel, n in nodes.items():
        st = os.lstat(os.path.join(root, rel) if rel else root)
        n.mtime, n.atime, n.ctime = ns_pair(st.st_mtime_ns), ns_pair(st.st_atime_ns), ns_pair(st.st_ctime_ns)
    return nodes


def read_bytes(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def read_folder(root):
    nodes, by_ino = {}, {}
    for dirpath, dirs, files in os.walk(root):
        for name in [""] + dirs + files:
            if not name and dirpath != root:
                continue
            full = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.relpath(full, root)
            rel = "" if rel == "." else rel
            st = os.lstat(full)
            fmt = stat.S_IFMT(st.st_mode)
            kind = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink", stat.S_IFCHR: "char",
                    stat.S_IFBLK: "block", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket"}[fmt]
            xattrs = {}
            if kind in ("file", "dir"):
                for k in os.listxattr(full, follow_symlinks=False):
                    xattrs[k] = os.getxattr(full, k, follow_symlinks=False)
            n = Node(kind, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, ns_pair(st.st_mtime_ns),
                     ns_pair(st.st_atime_ns), ns_pair(st.st_ctime_ns),
                     data=read_bytes(full) if kind == "file" else None,
                     target=os.readlink(full) if kind == "symlink" else None,
                     dev=(os.major(st.st_rdev), os.minor(st.st_rdev)) if kind in ("char", "block") else None,
                     xattrs=xattrs)
            if kind == "file" and st.st_nlink > 1:
                n = by_ino.setdefault(st.st_ino, n)  # one Node per inode
                n.link_group = st.st_ino
            nodes[rel] = n
    nodes["holes.bin"].sparse = nodes["zeros.bin"].sparse = True
    return nodes


# ---- the archive ----------------------------------------------------------

def build_tar(tree_root, nodes, path, mode):
    """A tar of the tree with tar-only extras; returns the expected nodes."""
    exp = {}
    owners = [(1000, 1000), (0, 0), (65534, 65534), (123456, 654321), (3000000, 3000001)]
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as t:
        def add(name, n, tartype, data=None, linkname="", uname="", extra_pax=None):
            ti = tarfile.TarInfo(name)
            ti.type = tartype
            ti.mode, ti.uid, ti.gid = n.perm, n.uid, n.gid
            ti.uname, ti.gname = uname, uname
            sec, nsec = n.mtime
            assert nsec in (0, 500_000_000)
            ti.mtime = sec + 0.5 if nsec else sec
            ti.linkname = linkname
            if n.dev:
                ti.devmajor, ti.devminor = n.dev
            if n.xattrs or extra_pax:
                ti.pax_headers = {"SCHILY.xattr." + k: v.decode("latin-1") for k, v in n.xattrs.items()}
                ti.pax_headers.update(extra_pax or {})
            if data is not None:
                ti.size = len(data)
                t.addfile(ti, fileobj=__import__("io").BytesIO(data))
            else:
                t.addfile(ti)

        types = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "fifo": tarfile.FIFOTYPE,
                 "char": tarfile.CHRTYPE, "block": tarfile.BLKTYPE, "file": tarfile.REGTYPE}
        first_name = {}  # link group -> the member that carries the data
        for i, rel in enumerate(sorted(nodes)):
            src = nodes[rel]
            if src.kind == "socket" or rel in ("null", "disk"):
                continue
            uid, gid = owners[i % len(owners)]
            sec = src.mtime[0]
            # (Negative fractional pax times are read differently by tars.)
            n = Node(src.kind, src.perm, uid, gid, (sec, 500_000_000 if i % 3 == 0 and sec > 0 else 0),
                     data=src.data, target=src.target, xattrs=dict(src.xattrs))
            n.sparse = src.sparse
            name = "./" + rel if rel else "./"
            if src.link_group is not None and src.link_group in first_name:
                first = first_name[src.link_group]
                add(name, n, tarfile.LNKTYPE, linkname="./" + first)
                exp[rel] = exp[first]
                continue
            if src.link_group is not None:
                first_name[src.link_group] = rel
            add(name, n, types[src.kind], data=src.data, linkname=src.target or "", uname="u%d" % uid)
            exp[rel] = n
        # What only an archive can carry.
        extras = [
            ("dev", Node("dir", 0o755, 0, 0, (1_650_000_000, 0))),
            ("dev/null", Node("char", 0o666, 0, 0, (1_650_000_001, 0), dev=(1, 3))),
            ("dev/tty4", Node("char", 0o620, 0, 5, (1_650_000_002, 0), dev=(4, 4))),
            ("dev/sda1", Node("block", 0o660, 0, 6, (1_650_000_003, 0), dev=(8, 1))),
            ("dev/nvme0n1p7", Node("block", 0o660, 0, 6, (1_650_000_004, 0), dev=(259, 300000))),
            ("setgid-bin", Node("file", 0o2711, 0, 42, (1_650_000_005, 0), data=b"sg\n")),
            ("lost+found/kept", Node("file", 0o600, 0, 0, (1_650_000_007, 0), data=b"kept\n")),
            ("cap", Node("file", 0o755, 0, 0, (1_650_000_006, 0), data=b"cap\n",
                         xattrs={"security.capability": bytes([1, 0, 0, 2, 0x20, 0, 0, 0] + [0] * 12)})),
        ]
        for rel, n in extras:
            add(rel, n, types[n.kind], data=n.data)
            exp[rel] = n
        # Members whose folders the archive never lists get 0755 root ones.
        n = Node("file", 0o644, 7, 7, (1_650_000_010, 0), data=b"implicit\n")
        add("implicit/sub/leaf.txt", n, tarfile.REGTYPE, data=n.data)
        exp["implicit/sub/leaf.txt"] = n
        for d in ("implicit", "implicit/sub"):
            exp[d] = Node("dir", 0o755, 0, 0, None)
        # A later member of the same name wins, as on extraction.
        add("dup.txt", Node("file", 0o644, 1, 1, (1_650_000_020, 0)), tarfile.REGTYPE, data=b"first\n")
        n = Node("file", 0o640, 2, 2, (1_650_000_021, 0), data=b"second, longer\n")
        add("dup.txt", n, tarfile.REGTYPE, data=n.data)
        exp["dup.txt"] = n
        # Absolute names land inside; names climbing out are dropped.
        n = Node("file", 0o644, 0, 0, (1_650_000_030, 0), data=b"abs\n")
        add("/abs.txt", n, tarfile.REGTYPE, data=n.data)
        exp["abs.txt"] = n
        add("../escape.txt", Node("file", 0o644, 0, 0, (1, 0)), tarfile.REGTYPE, data=b"no\n")
    return exp


# ---- reading the image back -----------------------------------------------

def debugfs(image, commands, workdir):
    cmdfile = os.path.join(workdir, "debugfs.cmds")
    with open(cmdfile, "w") as f:
        f.write("".join(c + "\n" for c in commands))
    out = subprocess.run(["debugfs", "-f", cmdfile, image], capture_output=True, check=True).stdout
    blocks = {}
    for chunk in out.decode("utf-8", "surrogateescape").split("debugfs: ")[1:]:
        cmd, _, body = chunk.partition("\n")
        blocks[cmd] = body
    return blocks


def quote(p):
    return '"/' + p + '"'


def encode_time(t):
    sec, nsec = t
    lo = sec & 0xFFFFFFFF
    signed = lo - (1 << 32) if lo >= 1 << 31 else lo
    return lo, (nsec << 2) | (((sec - signed) >> 32) & 3)


KIND_NAMES = {"file": "regular", "dir": "directory", "symlink": "symlink", "char": "character special",
              "block": "block special", "fifo": "FIFO", "socket": "socket"}


def verify(image, exp, workdir, times=("mtime", "atime", "ctime"), label=None):
    errors = []
    r = subprocess.run(["e2fsck", "-fn", image], capture_output=True, text=True)
    if r.returncode != 0:
        errors.append("e2fsck -fn exit %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    sb = subprocess.run(["dumpe2fs", "-h", image], capture_output=True, text=True).stdout
    feats = re.search(r"Filesystem features:\s*(.*)", sb).group(1).split()
    for f in ("extent", "64bit", "metadata_csum", "dir_index", "filetype", "sparse_super", "huge_file",
              "flex_bg", "ext_attr"):
        if f not in feats:
            errors.append("feature %s missing: %s" % (f, feats))
    if label is not None and not re.search(r"Filesystem volume name:\s*%s\n" % re.escape(label), sb):
        errors.append("label %r missing" % label)

    dumps = os.path.join(workdir, "dump")
    os.makedirs(dumps, exist_ok=True)
    paths = sorted(exp)
    cmds = []
    for i, p in enumerate(paths):
        cmds.append("stat " + quote(p))
        if exp[p].kind in ("file", "symlink"):
            cmds.append("dump %s %s/%d" % (quote(p), dumps, i))
        if exp[p].kind == "dir":
            cmds.append("ls -p " + quote(p))
        if exp[p].xattrs:
            cmds.append("ea_list " + quote(p))
    out = debugfs(image, cmds, workdir)

    children = {}
    for p in paths:
        if p:
            children.setdefault(os.path.dirname(p), set()).add(os.path.basename(p))
    children.setdefault("", set()).add("lost+found")
    subdirs = {p: sum(1 for c in exp if c and os.path.dirname(c) == p and exp[c].kind == "dir") for p in exp}
    subdirs[""] += 1  # lost+found
    names_of = {}
    for p in paths:
        if exp[p].kind == "file":
            names_of.setdefault(id(exp[p]), []).append(p)
    inode_of = {}

    for i, p in enumerate(paths):
        n, shown = exp[p], "/" + p
        body = out.get("stat " + quote(p), "")
        m = re.search(r"Inode: (\d+)\s+Type: (.+?)\s+Mode:\s+(\d+)", body)
        if not m:
            errors.append("%s: not in the image (%s)" % (shown, body.strip()[:200]))
            continue
        ino, kind, mode = int(m.group(1)), m.group(2), int(m.group(3), 8)
        inode_of[p] = ino
        check = lambda what, got, want: got == want or errors.append(
            "%s: %s is %r, expected %r" % (shown, what, got, want))
        check("type", kind, KIND_NAMES[n.kind])
        check("mode", oct(mode), oct(n.perm))
        m = re.search(r"User:\s*(\d+)\s+Group:\s*(\d+)\s+Project:\s*\d+\s+Size:\s*(\d+)", body)
        check("owner", (int(m.group(1)), int(m.group(2))), (n.uid, n.gid))
        m = re.search(r"Links:\s*(\d+)\s+Blockcount:\s*(\d+)", body)
        links, blockcount = int(m.group(1)), int(m.group(2))
        if n.kind == "dir":
            check("links", links, 2 + subdirs[p])
        else:
            check("links", links, len(names_of.get(id(n), [p])))
        if n.mtime is not None:
            for which in times:
                m = re.search(r"^\s*%s: 0x([0-9a-f]+):([0-9a-f]+)" % which, body, re.M)
                got = (int(m.group(1), 16), int(m.group(2), 16)) if m else None
                check(which, got, encode_time(getattr(n, which)))
        if n.kind in ("char", "block"):
            m = re.search(r"Device major/minor number: (\d+):(\d+)", body)
            check("device", (int(m.group(1)), int(m.group(2))) if m else None, n.dev)
        if n.kind == "file":
            got = open("%s/%d" % (dumps, i), "rb").read()
            if got != n.data:
                errors.append("%s: content differs (%d bytes, expected %d)" % (shown, len(got), len(n.data)))
            full = (len(n.data) + 4095) // 4096 * 8
            if n.sparse and blockcount >= full:
                errors.append("%s: stored in full (%d sectors), expected holes" % (shown, blockcount))
        if n.kind == "symlink":
            m = re.search(r'Fast link dest: "(.*)"', body)
            target = m.group(1) if m else open("%s/%d" % (dumps, i), "rb").read().decode()
            check("symlink target", target, n.target)
            check("fast symlink", bool(m), len(n.target) < 60)
        if n.kind == "dir":
            listing = out.get("ls -p " + quote(p), "")
            names = {line.split("/")[5] for line in listing.splitlines() if line.count("/") >= 6}
            check("listing", sorted(names - {".", ".."}), sorted(children.get(p, ())))
        for k, v in n.xattrs.items():
            ea = out.get("ea_list " + quote(p), "")
            if ("%s (%d)" % (k, len(v))) not in ea and ("%s = " % k) not in ea:
                errors.append("%s: xattr %s missing: %s" % (shown, k, ea.strip()))
    for p in paths:
        for q in names_of.get(id(exp[p]), []):
            if p in inode_of and q in inode_of and inode_of[p] != inode_of[q]:
                errors.append("/%s and /%s: different inodes, expected one" % (p, q))
    return errors


# ---- the cases ------------------------------------------------------------

def run_tool(flatux, args, as_nobody):
    cmd = [flatux, "mkimage"] + args
    if as_nobody and ROOT:
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def expect_clean_failure(r, words):
    errors = []
    if r.returncode != 1:
        errors.append("exit %d, expected 1" % r.returncode)
    if not r.stderr.startswith("flatux mkimage: ") or len(r.stderr.strip().splitlines()) != 1:
        errors.append("expected one 'flatux mkimage:' line, got %r" % r.stderr)
    if not any(w.lower() in r.stderr.lower() for w in words):
        errors.append("message %r mentions none of %s" % (r.stderr.strip(), words))
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--case", required=True)
    args = ap.parse_args()

    # Outputs go where an unprivileged user may write: a sticky, world-
    # writable folder, with its own copy of the tool it can execute.
    work = tempfile.mkdtemp(prefix="flatux-mkimage-")
    try:
        os.chmod(work, 0o1777)
        flatux = os.path.join(work, "flatux")
        shutil.copy(args.flatux, flatux)
        os.chmod(flatux, 0o755)
        tree = os.path.join(work, "tree")
        nodes = build_tree(tree)
        image = os.path.join(work, "out", "image.ext4")
        os.makedirs(os.path.dirname(image))
        os.chmod(os.path.dirname(image), 0o1777)
        errors = []
        case = args.case
        if case == "folder":
            r = run_tool(flatux, [tree, "-o", image, "--label", "fixture"], as_nobody=False)
            if r.returncode != 0:
                errors.append("exit %d: %s" % (r.returncode, r.stderr))
            else:
                if os.path.getsize(image) < 32 * MIB:
                    errors.append("default size %d is under 32 MiB" % os.path.getsize(image))
                errors += verify(image, nodes, work, label="fixture")
        elif case in ("tar", "tar.gz", "tar.xz"):
            tarpath = os.path.join(work, "fixture." + case)
            exp = build_tar(tree, nodes, tarpath, {"tar": "w", "tar.gz": "w:gz", "tar.xz": "w:xz"}[case])
            os.chmod(tarpath, 0o644)
            r = run_tool(flatux, [tarpath, "-o", image, "--size", "48M"], as_nobody=True)
            if r.returncode != 0:
                errors.append("exit %d: %s" % (r.returncode, r.stderr))
            else:
                if os.path.getsize(image) != 48 * MIB:
                    errors.append("--size 48M gave %d bytes" % os.path.getsize(image))
                if "escape.txt" not in r.stderr:
                    errors.append("no warning about ../escape.txt: %r" % r.stderr)
                if os.path.exists(os.path.join(work, "out", "escape.txt")) or os.path.exists(
                        os.path.join(os.path.dirname(work), "escape.txt")):
                    errors.append("../escape.txt was written outside the image")
                errors += verify(image, exp, work)
        elif case == "corrupt":
            bad = os.path.join(work, "corrupt.tar")
            open(bad, "wb").write(pattern(20000, "garbage"))
            errors += expect_clean_failure(run_tool(flatux, [bad, "-o", image], True), ["archive", "format"])
        elif case == "truncated":
            tarpath = os.path.join(work, "whole.tar")
            build_tar(tree, nodes, tarpath, "w")
            data = open(tarpath, "rb").read()
            cut = os.path.join(work, "cut.tar")
            open(cut, "wb").write(data[: data.index(pattern(64, "big")) + 100000])
            errors += expect_clean_failure(run_tool(flatux, [cut, "-o", image], True), ["truncated"])
        elif case == "too_small":
            r = run_tool(flatux, [tree, "-o", image, "--size", "1M"], False)
            errors += expect_clean_failure(r, ["the image is full"])
            if "--size 1M is too small" not in r.stderr:
                errors.append("message does not name the size: %r" % r.stderr)
        elif case == "unreadable":
            # Mode 000: unreadable to a non-root owner, and to nobody.
            secret = os.path.join(tree, "dir1", "secret")
            open(secret, "wb").write(b"no\n")
            os.chmod(secret, 0)
            for d in (work, tree):
                os.chmod(d, 0o1777 if d == work else 0o755)
            r = run_tool(flatux, [tree, "-o", image], True)
            errors += expect_clean_failure(r, ["Permission denied"])
            if "dir1/secret" not in r.stderr:
                errors.append("message does not name the file: %r" % r.stderr)
        elif case == "missing":
            r = run_tool(flatux, [os.path.join(work, "nonexistent"), "-o", image], False)
            errors += expect_clean_failure(r, ["No such file or directory"])
        elif case == "bad_size":
            errors += expect_clean_failure(run_tool(flatux, [tree, "-o", image, "--size", "12X"], False),
                                           ["--size"])
        else:
            sys.exit("unknown case " + case)
        if case not in ("folder", "tar", "tar.gz", "tar.xz") and os.path.exists(image):
            errors.append("a failed run left %s behind" % image)
        for e in errors:
            print("FAIL:", e)
        print("%s: %s" % (case, "FAIL" if errors else "ok"))
        return 1 if errors else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

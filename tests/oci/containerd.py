#!/usr/bin/env python3
"""containerd with `ctr run --runc-binary build/flatux-oci` (its runc shim,
containerd-shim-runc-v2, drives the runtime as it drives runc): an image
imported offline (an OCI image layout made here from a busybox root),
ctr run (output, exit code), run -d with ctr task exec and ctr task kill.
A private containerd is started for the test. Skipped (77) where
containerd is missing or not root."""
import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_common import check, engine_missing, failures, make_rootfs  # noqa: E402

IMAGE = "localhost/flatux-busybox:1"



def blob(out, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo("blobs/sha256/" + digest[7:])
    info.size = len(data)
    out.addfile(info, io.BytesIO(data))
    return {"digest": digest, "size": len(data)}


def make_image(work):
    """An OCI image layout archive of one layer: the busybox root."""
    root = os.path.join(work, "rootfs")
    make_rootfs(root)
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        t.add(root, arcname=".")
    path = os.path.join(work, "image.tar")
    with tarfile.open(path, "w") as out:
        lay = blob(out, layer.getvalue())
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Env": ["PATH=/bin"], "Cmd": ["sh"]},
                             "rootfs": {"type": "layers", "diff_ids": [lay["digest"]]}}).encode()
        cfg = blob(out, config)
        manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **cfg},
                               "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **lay}]}).encode()
        man = blob(out, manifest)
        for name, data in (("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
                           ("index.json", json.dumps({"schemaVersion": 2, "manifests": [
                               {"mediaType": "application/vnd.oci.image.manifest.v1+json", **man,
                                "annotations": {"org.opencontainers.image.ref.name": IMAGE}}]}).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", required=True)
    args = ap.parse_args()
    runtime = os.path.abspath(args.runtime)
    skip = engine_missing(["containerd", "ctr"], "containerd is run as root here")
    if skip:
        print("SKIP: " + skip)
        return 77
    work = tempfile.mkdtemp(prefix="flatux-ctrd-", dir="/tmp")
    sock = os.path.join(work, "containerd.sock")
    conf = os.path.join(work, "config.toml")
    with open(conf, "w") as f:
        f.write(f'version = 2\nroot = "{work}/root"\nstate = "{work}/state"\n[grpc]\n  address = "{sock}"\n')
    daemon = subprocess.Popen(["containerd", "--config", conf], stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(work, "containerd.log"), "w"))
    ctr = ["ctr", "--address", sock]

    def run(*a, timeout=60):
        try:
            return subprocess.run(ctr + list(a), capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return subprocess.CompletedProcess(a, -1, e.stdout or "", "timed out")

    try:
        for _ in range(100):
            if os.path.exists(sock) and run("version").returncode == 0:
                break
            time.sleep(0.1)
        r = run("image", "import", make_image(work))
        if r.returncode != 0:
            print(f"SKIP: ctr image import failed: {r.stderr.strip()}")
            return 77
        r = run("run", "--rm", "--runc-binary", runtime, IMAGE, "c1", "sh", "-c", "echo hello-ctr; exit 5")
        check(r.returncode == 5 and r.stdout == "hello-ctr\n", f"ctr run: output and exit code ({r.returncode} {r.stdout!r} {r.stderr.strip()})")
        r = run("run", "-d", "--runc-binary", runtime, IMAGE, "c2", "sh", "-c",
                "trap 'exit 6' TERM; while true; do sleep 0.05; done")
        check(r.returncode == 0, f"ctr run -d ({r.stderr.strip()})")
        time.sleep(0.5)
        r = run("task", "ls")
        check("c2" in r.stdout and "RUNNING" in r.stdout, f"ctr task ls ({r.stdout.strip()})")
        r = run("task", "exec", "--exec-id", "e1", "c2", "sh", "-c", "echo in-exec; exit 2")
        check(r.returncode == 2 and r.stdout == "in-exec\n", f"ctr task exec ({r.returncode} {r.stdout!r} {r.stderr.strip()})")
        check(run("task", "kill", "c2").returncode == 0, "ctr task kill")
        stopped = False
        for _ in range(100):
            if "STOPPED" in run("task", "ls").stdout:
                stopped = True
                break
            time.sleep(0.05)
        check(stopped, "the task stops on SIGTERM")
        r = run("task", "delete", "c2")
        check(r.returncode == 0 and "exit code 6" in r.stderr, f"ctr task delete: the exit code is 6 ({r.stderr.strip()})")
        check(run("container", "delete", "c2").returncode == 0, "ctr container delete")
    finally:
        run("task", "kill", "-s", "KILL", "c2")
        daemon.terminate()
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
        subprocess.run(["umount", "-R", os.path.join(work, "state")], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failures" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

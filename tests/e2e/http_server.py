#!/usr/bin/env python3
"""python3 -m http.server running under flatux serves a scratch folder on a
free 127.0.0.1 port; the host fetches a file and the directory listing and
compares them with what it wrote.

usage: http_server.py --flatux FLATUX [--python GUEST_PYTHON]
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, deadline, proc):
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited early with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read()
        except (urllib.error.URLError, ConnectionError, socket.timeout) as e:
            last = e
            time.sleep(0.2)
    raise RuntimeError(f"no answer from {url}: {last}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="flatux-http.") as root:
        payload = os.urandom(3 << 20) + b"\x00 the end \xff"
        with open(os.path.join(root, "blob.bin"), "wb") as f:
            f.write(payload)
        with open(os.path.join(root, "hello.txt"), "w") as f:
            f.write("hello from the host\n")
        port = free_port()
        cmd = [args.flatux, "run", "--", args.python, "-m", "http.server",
               "--bind", "127.0.0.1", "--directory", root, str(port)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        failures = []
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            status, body = fetch(f"{base}/blob.bin", deadline, proc)
            if status != 200 or body != payload:
                failures.append(f"blob.bin: status {status}, {len(body)} bytes "
                                f"(want 200, {len(payload)} identical bytes)")
            else:
                print(f"blob.bin: {len(body)} bytes identical")
            status, body = fetch(f"{base}/hello.txt", deadline, proc)
            if body != b"hello from the host\n":
                failures.append(f"hello.txt: {body!r}")
            status, body = fetch(f"{base}/", deadline, proc)
            if b"blob.bin" not in body or b"hello.txt" not in body:
                failures.append(f"listing lacks the files: {body[:200]!r}")
            else:
                print("directory listing names both files")
        except RuntimeError as e:
            failures.append(str(e))
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            out = proc.stdout.read().decode(errors="replace")
        if failures:
            print("server output:\n" + out)
            for f in failures:
                print("FAIL: " + f)
            return 1
        print("ok")
        return 0


if __name__ == "__main__":
    sys.exit(main())

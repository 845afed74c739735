#!/usr/bin/env python3
"""busybox's network tools under flatux, over the busybox root folder
(mounted read-only), talking to host programs on free 127.0.0.1 ports:

  httpd       `httpd -f` serves the root's /bin; the host fetches /busybox and
              compares it with the file it reads itself
  nc_listen   `nc -l` receives what a host client sends, byte for byte
  nc_connect  `nc HOST PORT` sends its stdin to a host server
  ip_addr     `ip addr show dev lo` and `ip link show lo` print what they
              print natively (netlink)
  ifconfig    `ifconfig lo` prints the lines it builds from the interface
              ioctls as it does natively

Exits 77 (skipped) when the root folder has not been built.

usage: busybox_net.py --flatux FLATUX --root BUSYBOX_ROOT CASE
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

PAYLOAD = os.urandom(256 << 10) + b"\x00 the end \xff"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Guest:
    def __init__(self, args, argv, **kw):
        cmd = [args.flatux, "run", "--root", args.root, "--ro", "--"] + argv
        print("$ " + " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def retry(what, fn, proc, seconds=60):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the guest exited early with status {proc.returncode}")
        try:
            return fn()
        except (urllib.error.URLError, ConnectionError, socket.timeout, OSError) as e:
            last = e
            time.sleep(0.2)
    raise RuntimeError(f"{what}: no answer: {last}")


def case_httpd(args):
    port = free_port()
    g = Guest(args, ["/usr/sbin/httpd", "-f", "-p", f"127.0.0.1:{port}", "-h", "/bin"],
              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        with open(os.path.join(args.root, "bin", "busybox"), "rb") as f:
            want = f.read()

        def get():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/busybox", timeout=20) as r:
                return r.status, r.read()
        for i in range(3):  # each request is a fresh vfork+exec on no-MMU busybox
            status, body = retry("GET /busybox", get, g.proc)
            if status != 200 or body != want:
                return [f"GET /busybox #{i}: status {status}, {len(body)} bytes "
                        f"(want 200, {len(want)} identical bytes)"]
        print(f"GET /busybox three times: {len(want)} bytes identical")

        def missing():
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/no-such-file", timeout=20)
                return 200
            except urllib.error.HTTPError as e:
                return e.code
        code = retry("GET /no-such-file", missing, g.proc)
        if code != 404:
            return [f"GET /no-such-file: status {code}, want 404"]
        print("GET /no-such-file: 404")
        return []
    finally:
        g.stop()
        print(g.proc.stdout.read().decode(errors="replace"), end="")


def case_nc_listen(args):
    port = free_port()
    g = Guest(args, ["/usr/bin/nc", "-l", "-p", str(port), "-s", "127.0.0.1"],
              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    received = {}
    reader = threading.Thread(target=lambda: received.setdefault("out", g.proc.stdout.read()))
    reader.start()
    try:
        def send():
            with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
                s.sendall(PAYLOAD)
        retry("connect to nc -l", send, g.proc)
        g.proc.wait(timeout=60)
        reader.join(timeout=60)
    finally:
        g.stop()
    out = received.get("out", b"")
    if out != PAYLOAD or g.proc.returncode != 0:
        return [f"nc -l wrote {len(out)} bytes (want {len(PAYLOAD)} identical), "
                f"status {g.proc.returncode}"]
    print(f"nc -l received {len(out)} bytes intact")
    return []


def case_nc_connect(args):
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        srv.settimeout(60)
        port = srv.getsockname()[1]
        g = Guest(args, ["/usr/bin/nc", "127.0.0.1", str(port)],
                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            feeder = threading.Thread(target=lambda: (g.proc.stdin.write(PAYLOAD), g.proc.stdin.close()))
            feeder.start()
            conn, _ = srv.accept()
            got = bytearray()
            with conn:
                conn.settimeout(60)
                while len(got) < len(PAYLOAD):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            feeder.join(timeout=60)
            g.proc.wait(timeout=60)
        finally:
            g.stop()
    if bytes(got) != PAYLOAD:
        return [f"the host server got {len(got)} bytes (want {len(PAYLOAD)} identical)"]
    print(f"the host server got {len(got)} bytes intact; nc status {g.proc.returncode}")
    return []


def compare(args, applet_argv, normalise=lambda s: s):
    native = subprocess.run([os.path.join(args.root, "bin", "busybox")] + applet_argv,
                            capture_output=True, text=True, timeout=60)
    g = Guest(args, ["/bin/busybox"] + applet_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True)
    out, err = g.proc.communicate(timeout=60)
    want, got = normalise(native.stdout), normalise(out)
    name = " ".join(applet_argv)
    if native.returncode != 0 or g.proc.returncode != 0 or want != got:
        return [f"{name}: status {g.proc.returncode} (native {native.returncode})\n"
                f"--- native\n{native.stdout}{native.stderr}--- flatux\n{out}{err}"]
    print(f"{name}: same as native\n{out}", end="")
    return []


def case_ip_addr(args):
    return compare(args, ["ip", "addr", "show", "dev", "lo"]) + compare(args, ["ip", "link", "show", "lo"])


def case_ifconfig(args):
    # What the interface ioctls give (encapsulation, IPv4 address and mask,
    # flags, MTU, metric) must match. Counters move between the two runs;
    # they and the IPv6 lines come from /proc/net, judged elsewhere.
    from_ioctls = re.compile(r"^\S+\s+Link encap:.*$|^\s*inet addr:.*$|^\s*UP .*MTU:.*$", re.M)
    return compare(args, ["ifconfig", "lo"],
                   lambda s: "\n".join(m.group(0).rstrip() for m in from_ioctls.finditer(s)) + "\n")


CASES = {"httpd": case_httpd, "nc_listen": case_nc_listen, "nc_connect": case_nc_connect,
         "ip_addr": case_ip_addr, "ifconfig": case_ifconfig}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.root, "bin", "busybox")):
        print(f"no busybox root at {args.root} (tools/build-busybox makes it): skipped")
        return 77
    try:
        failures = CASES[args.case](args)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        failures = [str(e)]
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

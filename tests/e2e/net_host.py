#!/usr/bin/env python3
"""Networking between flatux guests and host programs, and load without leaks.

  tcp_server  a TCP echo server inside flatux on 127.0.0.1 answers COUNT
              sequential connections from a host client, every echo intact;
              the kernel's host process's open descriptors and RSS are compared
              after the first 100 connections and after the last
  tcp_client  a guest client sends to a host echo server and checks the echo
  unix_load   CONNS concurrent AF_UNIX connections inside the guest, MSGS
              messages each, several rounds: nothing lost or reordered, and
              no descriptor or RSS growth between the first and last round

usage: net_host.py --flatux FLATUX --peer NET_PEER CASE [--count N] ...
"""
import argparse
import os
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_procs import kernel_process  # noqa: E402

RSS_SLACK_KB = 8 * 1024  # allocator and page-cache noise, not a leak's slope


def pid_block_sockets(pid):
    """Inodes of flatux's guest-pid reservations (abstract names
    "flatux-pids-N", one per block of 64 pids in use): the kernel's own
    bookkeeping, which grows with the pids handed out, not a leak. From
    the network namespace of `pid`, where its abstract names are."""
    inodes = set()
    with open(f"/proc/{pid}/net/unix") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 8 and cols[7].startswith("@flatux-pids-"):
                inodes.add(cols[6])
    return inodes


def usage_of(launcher):
    """Host descriptors and RSS (KiB) of the kernel's process of the run
    `launcher` started."""
    pid = kernel_process(launcher)
    if pid is None:
        raise RuntimeError(f"no kernel process below the launcher {launcher}")
    ours = pid_block_sockets(pid)
    fds = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if not (link.startswith("socket:[") and link[8:-1] in ours):
            fds += 1
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return fds, rss


class Guest:
    def __init__(self, flatux, argv):
        self.proc = subprocess.Popen(flatux + ["--"] + argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def line(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the guest ended early (status {self.proc.wait()})")
        print("guest:", line.rstrip(), flush=True)
        return line.split()

    def until_checkpoint(self):
        while True:
            words = self.line()
            if words[0] == "checkpoint":
                return words[1]

    def resume(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self):
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        if rest:
            print("guest:", rest.rstrip())
        return self.proc.wait(timeout=120)


def leak_check(name, before, after, failures):
    print(f"{name}: host fds {before[0]} -> {after[0]}, RSS {before[1]} -> {after[1]} KiB")
    if after[0] > before[0]:
        failures.append(f"{name}: flatux holds {after[0] - before[0]} more host descriptors")
    if after[1] - before[1] > RSS_SLACK_KB:
        failures.append(f"{name}: RSS grew by {after[1] - before[1]} KiB")


def echo_once(port, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = bytearray()
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    return bytes(got)


def tcp_server(args, failures):
    g = Guest(args.flatux, [args.peer, "tcp-serve", str(args.count)])
    port = int(g.line()[1])
    payload = os.urandom(4096)
    bad = 0
    for i in range(args.count):
        body = payload[: 1 + (i * 37) % len(payload)]
        if echo_once(port, body) != body:
            bad += 1
        if i == 99:
            g.until_checkpoint()
            warm = usage_of(g.proc.pid)
            g.resume()
    g.until_checkpoint()
    leak_check("tcp_server", warm, usage_of(g.proc.pid), failures)
    g.resume()
    status = g.finish()
    print(f"tcp_server: {args.count} connections, {bad} bad echoes, guest status {status}")
    if bad or status:
        failures.append(f"tcp_server: {bad} bad echoes, status {status}")


def tcp_client(args, failures):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    port = ls.getsockname()[1]

    def serve():
        c, _ = ls.accept()
        with c:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                c.sendall(chunk)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    r = subprocess.run(args.flatux + ["--", args.peer, "tcp-client", str(port),
                        str(args.bytes)], timeout=120)
    th.join(30)
    ls.close()
    if r.returncode:
        failures.append(f"tcp_client: guest status {r.returncode}")


def unix_load(args, failures):
    g = Guest(args.flatux, [args.peer, "unix-load", str(args.conns), str(args.msgs),
                            str(args.rounds)])
    g.until_checkpoint()
    warm = usage_of(g.proc.pid)
    g.resume()
    g.until_checkpoint()
    leak_check("unix_load", warm, usage_of(g.proc.pid), failures)
    g.resume()
    status = g.finish()
    if status:
        failures.append(f"unix_load: guest status {status} (messages lost or reordered)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--net", help="pass --net=NET to flatux run")
    ap.add_argument("case", choices=["tcp_server", "tcp_client", "unix_load"])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--msgs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    args.flatux = [args.flatux, "run"] + ([f"--net={args.net}"] if args.net else [])
    failures = []
    globals()[args.case](args, failures)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

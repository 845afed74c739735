#!/usr/bin/env python3
"""Servers in containers: Debian's nginx serving a 4 KiB file to wrk, and
redis-server under redis-benchmark (GET and SET), each in a container run
by podman with flatux-oci, runc and runsc (--platform=ptrace, host
network: the only way it runs here), the load generator on the host
through the port mapping (runsc: the host's own port).

    bench/oci_servers.py --flatux-oci build/flatux-oci --image-tar DEBIAN.tar [--rounds 3] [--seconds 10]

DEBIAN.tar: a Debian root with nginx-light and redis-server, e.g.
    mmdebstrap --variant=apt --include=nginx-light,redis-server bookworm DEBIAN.tar
Needs root, podman, wrk and redis-benchmark (redis-tools). Report-only:
requests per second, medians of the rounds, for docs/PERFORMANCE.md.
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oci"))
from podman import Podman  # noqa: E402

IMAGE = "localhost/flatux-servers:1"
NGINX = "printf '%4096s' x > /var/www/html/4k.html && exec nginx -g 'daemon off;'"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def serve(pm, runtime, flags, port, inner_port, cmd):
    """Starts a server container; its name."""
    name = f"srv-{port}"
    net = ["--network", "host"] if "network=host" in " ".join(flags) else ["-p", f"{port}:{inner_port}"]
    r = pm(*flags, "run", "-d", "--name", name, *net, IMAGE, "sh", "-c", cmd, runtime=runtime)
    if r.returncode != 0:
        raise SystemExit(f"{runtime}: {r.stderr.strip()}")
    if not wait_port(port):
        raise SystemExit(f"{runtime}: nothing answers on {port}: {pm('logs', name).stdout}")
    return name


def nginx_rps(pm, runtime, flags, seconds):
    port = free_port()
    host_net = "network=host" in " ".join(flags)
    cmd = NGINX if not host_net else NGINX.replace("exec nginx", f"sed -i 's/listen 80 default_server;/listen {port};/; "
                                                                  "/listen \\[::\\]:80/d' /etc/nginx/sites-enabled/default && exec nginx")
    name = serve(pm, runtime, flags, port, 80, cmd)
    try:
        out = subprocess.run(["wrk", "-t2", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{port}/4k.html"],
                             capture_output=True, text=True).stdout
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        return float(m.group(1)) if m else 0.0
    finally:
        pm("rm", "-f", "-t", "0", name)


def redis_rps(pm, runtime, flags, requests):
    port = free_port()
    name = serve(pm, runtime, flags, port, 6379,
                 f"exec redis-server --port {port if 'network=host' in ' '.join(flags) else 6379} "
                 "--protected-mode no --save '' --appendonly no")
    try:
        out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set,get", "-n", str(requests), "-q"],
                             capture_output=True, text=True).stdout
        rates = dict(re.findall(r"(SET|GET): ([\d.]+) requests per second", out.replace("\r", "\n")))
        return float(rates.get("GET", 0)), float(rates.get("SET", 0))
    finally:
        pm("rm", "-f", "-t", "0", name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux-oci", required=True)
    ap.add_argument("--image-tar", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    runtimes = {"flatux-oci": (os.path.abspath(args.flatux_oci), [])}
    if shutil.which("runc"):
        runtimes["runc"] = (shutil.which("runc"), [])
    if shutil.which("runsc"):
        runtimes["runsc"] = (shutil.which("runsc"), ["--runtime-flag", "platform=ptrace", "--runtime-flag", "network=host"])
    work = tempfile.mkdtemp(prefix="flatux-srvbench-", dir="/tmp")
    rows = {}
    pm = Podman(work, runtimes["flatux-oci"][0])
    try:
        if pm("import", args.image_tar, IMAGE, timeout=600).returncode != 0:
            raise SystemExit("podman import failed")
        for rnd in range(args.rounds):
            order = list(runtimes) if rnd % 2 == 0 else list(reversed(runtimes))
            for name in order:
                runtime, flags = runtimes[name]
                rows.setdefault(("nginx 4 KiB, wrk -c16", name), []).append(nginx_rps(pm, runtime, flags, args.seconds))
                get, set_ = redis_rps(pm, runtime, flags, 100000)
                rows.setdefault(("redis GET", name), []).append(get)
                rows.setdefault(("redis SET", name), []).append(set_)
    finally:
        pm("rm", "-a", "-f", "-t", "0")
        pm("system", "reset", "-f")
        shutil.rmtree(work, ignore_errors=True)
    names = list(runtimes)
    print(f"| requests/s | {' | '.join(names)} |")
    print(f"|---|{'---:|' * len(names)}")
    for row in ("nginx 4 KiB, wrk -c16", "redis GET", "redis SET"):
        print(f"| {row} | {' | '.join(f'{statistics.median(rows[(row, n)]):.0f}' for n in names)} |")
    print(f"(medians of {args.rounds} rounds; load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()

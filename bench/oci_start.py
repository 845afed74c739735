#!/usr/bin/env python3
"""Containers started and entered: flatux-oci against runc and gVisor's
runsc (Debian's; --platform=ptrace, the only platform that runs here, and
its host network, since it refuses the engine's network namespace here).

    bench/oci_start.py --flatux-oci build/flatux-oci [--rounds 7]

Rows (wall time, medians of the rounds; the runtimes alternate within
each round):
  podman run --rm IMG true   podman's whole start-to-exit (conmon, state, cleanup)
  podman exec CTR true       entering a running container
  RUNTIME run (no engine)    the runtime alone: create, start, wait, delete of `true`
Needs root, podman and busybox-static; images are made offline from
Debian's static busybox. Report-only: numbers go to docs/PERFORMANCE.md.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oci"))
from oci_common import make_bundle  # noqa: E402
from podman import IMAGE, Podman, import_image  # noqa: E402


def timed(argv, env=None):
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux-oci", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    flatux_oci = os.path.abspath(args.flatux_oci)
    runtimes = {"flatux-oci": ([flatux_oci], [])}
    if shutil.which("runc"):
        runtimes["runc"] = ([shutil.which("runc")], [])
    if shutil.which("runsc"):
        runtimes["runsc"] = ([shutil.which("runsc"), "--platform=ptrace", "--network=host"],
                             ["--runtime-flag", "platform=ptrace", "--runtime-flag", "network=host"])
    work = tempfile.mkdtemp(prefix="flatux-ocibench-", dir="/tmp")
    rows = {}
    try:
        pm = Podman(work, flatux_oci)
        if import_image(pm, work).returncode != 0:
            raise SystemExit("podman import failed")
        bundle = os.path.join(work, "bundle")
        make_bundle(flatux_oci, bundle, ["true"], **{"linux.namespaces": [{"type": t} for t in ("pid", "mount", "uts", "ipc")]})
        for name, (_, flags) in runtimes.items():
            r = pm(*flags, "run", "-d", "--name", f"idle-{name}", IMAGE, "sleep", "1000",
                   runtime=runtimes[name][0][0])
            if r.returncode != 0:
                raise SystemExit(f"{name}: podman run -d: {r.stderr.strip()}")
        for rnd in range(args.rounds):
            order = list(runtimes) if rnd % 2 == 0 else list(reversed(runtimes))
            for name in order:
                argv, flags = runtimes[name]
                base = pm.base + ["--runtime", argv[0], *flags]
                rows.setdefault(("podman run --rm IMG true", name), []).append(
                    timed(base + ["run", "--rm", IMAGE, "true"], pm.env))
                rows.setdefault(("podman exec CTR true", name), []).append(
                    timed(base + ["exec", f"idle-{name}", "true"], pm.env))
                state = os.path.join(work, f"state-{name}")
                rows.setdefault(("RUNTIME run (no engine)", name), []).append(
                    timed(argv[:1] + ["--root", state] + argv[1:] + ["run", "--bundle", bundle, f"b{rnd}"]))
                subprocess.run(argv[:1] + ["--root", state] + argv[1:] + ["delete", "--force", f"b{rnd}"],
                               capture_output=True)
    finally:
        subprocess.run(pm.base + ["rm", "-a", "-f", "-t", "0"], env=pm.env, capture_output=True)
        subprocess.run(pm.base + ["system", "reset", "-f"], env=pm.env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    names = list(runtimes)
    print(f"| row | {' | '.join(names)} |")
    print(f"|---|{'---:|' * len(names)}")
    for row in ("podman run --rm IMG true", "podman exec CTR true", "RUNTIME run (no engine)"):
        cells = [f"{statistics.median(rows[(row, n)]) * 1000:.0f} ms" for n in names]
        print(f"| {row} | {' | '.join(cells)} |")
    print(f"(medians of {args.rounds} rounds; load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()

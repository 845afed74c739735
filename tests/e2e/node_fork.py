#!/usr/bin/env python3
"""node's child_process under flatux: execSync and spawnSync of a PIE
program (/bin/echo) and of a non-PIE one (Debian's python3 is ET_EXEC),
RUNS times each, natively and under flatux; every run must give the same
output and exit status as natively, with no failure at all.

node forks from a process with worker threads and a heap that V8 marks
MADV_DONTFORK; the child resets its signals and execs. A child that got
the DONTFORK ranges in its region list crashed at its first instruction
after exec (the new image landed there and went with the old image).

usage: node_fork.py --flatux PATH [--runs N]
"""
import argparse
import shutil
import subprocess
import sys

SCRIPT = r"""
const cp = require('child_process');
const runs = +process.argv[process.argv.length - 1];
const failures = {};
function fail(what, detail) {
  failures[what] = (failures[what] || 0) + 1;
  if (failures[what] === 1) console.log('first failure of ' + what + ': ' + detail);
}
for (let i = 0; i < runs; i++) {
  try {
    const out = cp.execSync('/bin/echo pie ' + i).toString();
    if (out !== 'pie ' + i + '\n') fail('execSync PIE', JSON.stringify(out));
  } catch (e) { fail('execSync PIE', e.message); }
  let r = cp.spawnSync('/bin/echo', ['spawn', String(i)]);
  if (r.status !== 0 || r.stdout.toString() !== 'spawn ' + i + '\n')
    fail('spawnSync PIE', r.status + ' ' + r.signal);
  r = cp.spawnSync('/usr/bin/python3', ['-S', '-c', 'import sys; print(sys.argv[1])', String(i)]);
  if (r.status !== 0 || r.stdout.toString() !== i + '\n')
    fail('spawnSync non-PIE', r.status + ' ' + r.signal + ' ' + r.stderr.toString().slice(0, 200));
}
console.log('runs ' + runs + ', failures ' + JSON.stringify(failures));
process.exit(Object.keys(failures).length ? 1 : 0);
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flatux", required=True)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        print("node_fork: no node on this machine (tools/install-deps installs nodejs)")
        return 1
    cmd = [node, "-e", SCRIPT, "--", str(args.runs)]
    native = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    guest = subprocess.run([args.flatux, "run", "--"] + cmd, capture_output=True, text=True, timeout=300)
    print("native:", native.returncode, native.stdout.strip(), native.stderr.strip()[-400:])
    print("flatux:", guest.returncode, guest.stdout.strip(), guest.stderr.strip()[-400:])
    if native.returncode != 0:
        print("node_fork: the native run failed: the test is wrong")
        return 1
    if guest.returncode != 0 or guest.stdout != native.stdout:
        print("node_fork: FAIL")
        return 1
    print("node_fork: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

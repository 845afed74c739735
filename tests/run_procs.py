"""A flatux run's host processes, for the tests that look at them from the
host (import it after putting tests/ on sys.path).

`flatux run` and a boot put the run in a pid namespace of its own:

  launcher      the process a test starts (Popen's pid): waits, relays the
                signals sent to it, exits as the kernel's process did
    run init    pid 1 of the run's namespace: reaps, relays
      kernel    pid 2 there: the kernel and its guests; forked guests'
                host processes below it

So signals go to the launcher (it relays them), but what the kernel
holds (memory, descriptors, threads, namespaces, its seccomp filter) is
the kernel's process's. Without a pid namespace (--no-sandbox,
--sandbox-without=processes, a host that refuses one) the launcher is the
kernel's process.
"""
import os
import time


def children(pid):
    """Host pids of `pid`'s children (of any of its threads); none once it has ended."""
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def ns_pids(pid):
    """`pid`'s pids from the host's pid namespace down to its own (NSpid)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(p) for p in line.split()[1:]]
    except OSError:
        pass
    return []


def _own_pid_namespace(launcher):
    """Whether `launcher` made a pid namespace for its children (None: cannot tell)."""
    try:
        return os.readlink(f"/proc/{launcher}/ns/pid_for_children") != os.readlink(f"/proc/{launcher}/ns/pid")
    except OSError:
        return None


def kernel_process(launcher, timeout=10.0):
    """The host pid of the kernel's process of the run `launcher` started:
    its grandchild (pid 2 of the run's namespace), waiting up to `timeout`
    seconds for it to be forked; the launcher itself when the run has no
    pid namespace. Ask once the guest has shown it runs (the launcher
    makes the namespace before any guest code). None when the launcher
    has ended or the kernel's process did not turn up in time."""
    deadline = time.monotonic() + timeout
    while True:
        own = _own_pid_namespace(launcher)
        if own is False:
            return launcher
        for init in children(launcher):
            if ns_pids(init)[-1:] != [1]:
                continue
            for k in children(init):
                if ns_pids(k)[-1:] == [2]:
                    return k
        if own is None and not os.path.exists(f"/proc/{launcher}"):
            return None
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


"""Other processes' CPU use while a run is timed."""

import os
import resource
import time


class Guard:
    """Tells whether other processes used the CPUs while a run was timed.

    Foreign CPU = all busy CPU time on the machine (/proc/stat, steal
    included) minus what this driver and its reaped children used, per
    second of wall time. A run during which others used more than LIMIT
    CPUs is repeated after waiting for a quiet spell, within a total waiting
    budget; what still ran contended is flagged in the results. One wait
    lasts at most WAIT_MAX_S, so that on a machine busy for long the budget
    is spread over many runs instead of spent on the first.
    """
    LIMIT = 0.2    # CPUs of foreign load that spoil a run
    QUIET = 0.1    # what counts as quiet before a repeat
    PROBE_S = 2.0
    WAIT_MAX_S = 60.0

    def __init__(self, retries, wait_budget_s):
        self.retries = retries
        self.budget = wait_budget_s
        self.hz = os.sysconf("SC_CLK_TCK")
        self.repeats = 0
        self.waited = 0.0

    def _snap(self):
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:9]]
            busy = (sum(v) - v[3] - v[4]) / self.hz  # minus idle and iowait
        except (OSError, ValueError, IndexError):
            busy = 0.0
        mine = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            ru = resource.getrusage(who)
            mine += ru.ru_utime + ru.ru_stime
        return time.monotonic(), busy, mine

    @staticmethod
    def _foreign(a, b):
        wall = b[0] - a[0]
        return max(0.0, (b[1] - a[1]) - (b[2] - a[2])) / wall if wall > 0 else 0.0

    def wait_quiet(self):
        until = self.waited + self.WAIT_MAX_S
        while self.budget - self.waited > 0 and self.waited < until:
            a = self._snap()
            time.sleep(self.PROBE_S)
            b = self._snap()
            self.waited += b[0] - a[0]
            if self._foreign(a, b) < self.QUIET:
                return

    def run(self, fn):
        """fn() -> value; returns (value, foreign CPUs of the attempt kept)."""
        for attempt in range(self.retries + 1):
            if attempt:
                self.repeats += 1
                self.wait_quiet()
            a = self._snap()
            value = fn()
            f = self._foreign(a, self._snap())
            if f <= self.LIMIT or attempt == self.retries or self.waited >= self.budget:
                return value, f

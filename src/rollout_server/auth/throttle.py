"""Sign-in throttling: failed attempts per account and per client address, in a sliding window.

After `max_failures` wrong passwords for one email within `window` seconds, that account's sign-in is refused
(the right password included) until the oldest of those failures leaves the window; one address gets four times
as many tries, across accounts, since several people can share it behind a NAT. Refusals come before the
password is checked, so a flood of guesses costs no argon2 time. A success clears the account's failures.

The counts live in the server process: with ROLLOUT_WORKERS=N an attacker gets N times the budget, which still
turns millions of guesses a day into a few thousand.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

ADDRESS_FACTOR = 4
MAX_TRACKED = 10_000  # keys remembered at most; the least recently failed are forgotten first


class SignInThrottle:
    def __init__(self, max_failures: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures = max_failures
        self.window = window
        self.clock = clock
        self._lock = threading.Lock()
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, email: str, address: str | None) -> int | None:
        """Seconds until this account (or address) may try again, or None when it may now."""
        if self.max_failures <= 0:
            return None
        now = self.clock()
        with self._lock:
            waits = [self._wait(f"email:{email}", self.max_failures, now)]
            if address:
                waits.append(self._wait(f"addr:{address}", self.max_failures * ADDRESS_FACTOR, now))
        longest = max(w for w in waits)
        return math.ceil(longest) if longest > 0 else None

    def failed(self, email: str, address: str | None) -> None:
        now = self.clock()
        with self._lock:
            for key in (f"email:{email}", f"addr:{address}" if address else None):
                if key is None:
                    continue
                times = self._failures.pop(key, None) or deque()
                times.append(now)
                self._failures[key] = times  # most recently failed last
            while len(self._failures) > MAX_TRACKED:
                self._failures.popitem(last=False)

    def succeeded(self, email: str) -> None:
        with self._lock:
            self._failures.pop(f"email:{email}", None)

    def _wait(self, key: str, limit: int, now: float) -> float:
        times = self._failures.get(key)
        if not times:
            return 0.0
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[key]
            return 0.0
        if len(times) < limit:
            return 0.0
        return times[-limit] + self.window - now

"""How many jobs the worker claims beyond its free threads: the ones its slots end in one round trip.

A worker of short jobs waits for the server most of its time: its threads idle while the loop
finishes a batch and claims the next. A few jobs claimed beyond the free threads keep them busy
during that round trip, so the server's work and the jobs' run side by side (on two cores).

How many: the jobs the slots end during one round trip (Little's law: threads × round trip / time
a job is held here), at most ``limit``. A prefetched job thus waits here about one round trip;
jobs that take longer than a round trip get none, so a long job never waits behind another on a
busy worker while an idle one could run it (the trouble with Celery's fixed prefetch multiplier).
The first claim takes no more than the threads: nothing is measured yet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .held import Held

WEIGHT = 0.2  # of the newest measure in each moving average: a change of job mix shows within ~10 passes


class Prefetch:
    """The loop's measures of a claiming round trip and of a job's stay; ``extra`` is what they allow."""

    def __init__(self, threads: int, limit: int) -> None:
        self.threads = threads
        self.limit = self.start_limit = max(0, limit)
        self.trip = 0.0  # seconds, moving average of a round trip that claimed
        self.stay = math.inf  # seconds, moving average of a job's stay: claimed to its outcome here
        self.extra = 0

    def tripped(self, seconds: float) -> None:
        """A round trip that claimed took seconds (the slots' idle time without a prefetch)."""
        self.trip = seconds if not self.trip else self.trip + (seconds - self.trip) * WEIGHT
        self._size()

    def arrived(self, now: float, helds: Sequence[Held]) -> None:
        """Outcomes of helds arrived at now (monotonic): one mean a batch, not a sum a job."""
        if not self.limit:
            return
        stay = now - sum([h.started for h in helds]) / len(helds)  # a list: faster than a generator
        self.stay = stay if self.stay == math.inf else self.stay + (stay - self.stay) * WEIGHT
        self._size()

    def off(self) -> None:
        """No prefetch from now on (a worker that reads each round trip at once: ``rounds``)."""
        self.limit = self.extra = 0

    def _size(self) -> None:
        if self.stay > 0 and self.trip:
            self.extra = min(self.limit, int(self.threads * self.trip / self.stay))

"""What the Pump's tick answers (``tick.lua``): its own small value, apart from the job records."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tick:
    """What one Pump step did and how long the Pump may park."""

    leader: bool
    promoted: int
    reclaimed: int
    park_ms: int
    repeat_due: bool
    now_us: int  # the server's clock at the tick, in microseconds (park_ms counts from its millisecond)
    relay: int = 0  # entries of the queue's relay list the leading Pump forwards
    stall_ms: int = 0  # how long the server stood still before this tick (0: it did not; tick.lua)
    graced: int = 0  # expired leases that stall kept for one more lease period
    # (child, parent, parent's queue) of waiting jobs whose parents live in other queues: ask those again
    far: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def from_reply(cls, r: list) -> Tick:
        rest = [int(x) for x in r[6:9]]
        far = r[9] if len(r) > 9 else []
        return cls(bool(r[0]), int(r[1]), int(r[2]), int(r[3]), bool(r[4]), int(r[5]), *rest,
                   tuple((far[i], far[i + 1], far[i + 2]) for i in range(0, len(far), 3)))


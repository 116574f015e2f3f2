"""What ``emq_worker``'s exit code says, and what its supervisor does about a worker process's.

The codes follow ``sysexits.h`` where one fits, so a process manager's logs read the same way
for emq as for other daemons. A supervised ``emq_worker`` (the default) restarts its worker
process itself, so only ``STOPPED``, ``FAILED`` (a worker process's ``CONFIG`` too) and
``UNCLEAN`` reach the shell from it; ``RECYCLE`` reaches it from a worker run with
``--no-supervise``, for its process manager.
"""

from __future__ import annotations

STOPPED = 0  # stopped on request (jobs still running at the grace were released), or drained (--burst)
FAILED = 1  # could not start (an option, a setting, no server within EMQ_STARTUP_WAIT), or failed
UNCLEAN = 70  # EX_SOFTWARE: a worker process did not stop within its grace and was killed, or died stopping
RECYCLE = 75  # EX_TEMPFAIL: drained because job threads are stuck (EMQ_MAX_ABANDONED): start a clean process
CONFIG = 78  # EX_CONFIG: a worker process found a setting wrong as it started; a restart would fail the same


def describe(code: int) -> str:
    """A worker process's exit, in words, as ``os.waitstatus_to_exitcode`` gives it (negative: a signal)."""
    if code < 0:
        return f"signal {-code}"
    if code == RECYCLE:
        return f"exit code {code}: it drained to shed job threads stuck past their limits"
    return f"exit code {code}"

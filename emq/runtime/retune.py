"""A running worker takes the settings operators stored for it (``runtime.tuning``): its concurrency, its
queues and weights, a pause. The worker's own rebuilding of its parts, in a room of its own: run on the
loop's thread between two passes (``Worker._pass``), so no round trip is in flight and no part is busy.

- Concurrency: the slots grow or shrink (``Slots.resize``: the threads removed end as they go idle), and
  the room the loop claims for follows at once (``Dispatch.threads``, the batch and prefetch it implies).
- Queues: the parts that claim (the wire, the order, the parkers, the Pump) are built afresh for the new
  list, after the round trips in flight are read; renewers are added for the new queues, and the jobs
  still running from a queue left keep their leases and finish into it (``Rounds.serve``).
- Pause: the worker claims nothing and parks on no queue until resumed; its running jobs go on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core import registry
from ..core.rates import apply_limits
from ..errors import ConfigurationError
from .metronome import Metronome
from .order import resolve
from .pump import Pump
from .wire import Wire

if TYPE_CHECKING:
    from .worker import Worker

log = logging.getLogger("emq.worker")


def retune(w: Worker) -> None:
    """Apply what was stored for the worker since its last pass, and say so."""
    change = w.tuning.take()
    if change is None:
        return
    why = f"stored for {', '.join(change.sources)}" if change.sources else "no stored setting: the command line's"
    if change.queues is not None and not _switch(w, change.queues):
        w.tuning.queues = tuple(w.specs)  # refused: it keeps its queues, and says why
    elif change.queues is not None:
        log.info("worker %s: queues %s (%s; started with %s)", w.id, ",".join(change.queues), why,
                 ",".join(w.tuning.started[1]))
    if change.concurrency is not None:
        _resize(w, change.concurrency)
        log.info("worker %s: concurrency %s (%s; started with %s)", w.id, change.concurrency, why,
                 w.tuning.started[0])
    if change.paused is not None:
        state = "paused: it claims nothing until resumed" if change.paused else "resumed: it claims again"
        log.info("worker %s %s (%s)", w.id, state, why)
    try:
        w.heartbeat.beat(settings=False)  # its entry says so now, not at the next beat
    except Exception as exc:  # the next beat will
        log.debug("worker %s: refreshing its entry failed: %s", w.id, exc)


def _resize(w: Worker, n: int) -> None:
    w.concurrency = n
    w.slots.resize(n)
    w.jobs.threads = n
    w.rounds.resize(n, w.batch_arg or n, n if w.prefetch_arg is None else w.prefetch_arg)


def _switch(w: Worker, specs: Sequence[str]) -> bool:
    """Claim from these queues from now on; False (said) when they cannot be served."""
    try:
        queues, order = resolve(specs, w.strict)
    except ConfigurationError as exc:
        log.error("worker %s cannot serve the queues stored for it (%s): %s; it keeps %s", w.id, ",".join(specs),
                  exc, ",".join(w.specs))
        return False
    try:
        registry.remember_all(q.name for q in queues)
        apply_limits([q.name for q in queues])
    except Exception as exc:  # the registry and the limits are the server's to catch up on: the jobs wait
        log.warning("worker %s: registering its new queues failed (%s); it serves them all the same", w.id, exc)
    w.leases.serve(queues)
    w.metronome.close()
    if w.pump is not None:
        w.pump.close()
    wire = Wire(queues)
    w.rounds.serve(queues, order, wire)
    w.wire.close()
    w.wire, w.queues, w.specs = wire, queues, list(specs)
    w.metronome = Metronome(queues, w.signal, w.park_timeout, claim=w.rounds.claim, room=w.room)
    w.metronome.start()
    if w.pump is not None:
        w.pump = Pump(queues, rows=w.rows, on_ready=w.signal.set).start()
    return True

"""The engine: every atomic state change of a queue, one method per script in ``emq/lua/``, and
the reads of a queue (``reads``, ``lanereads``, ``flowreads``, ``observe``; filtered slices: ``sift``,
``lanesift``); an action on every job that matches (``bulk``) and moves between queues (``move``).

The only caller of ``scripts.run`` and the only reader of a queue's keys (with ``emq.core.audit``'s
walks for tests); the rest of emq (workers, the Pump, recurrences, the dashboard, the commands)
goes through these classes, so an operation's ARGV order and a job's encoding (``stored``) live in
one place. A physical queue (``Queue``) is built only inside ``emq.core``.
"""

from .admin import AdminOps
from .base import MAX_BATCH, Ops
from .control import ControlOps
from .flow import FlowOps
from .journal import JournalOps
from .keep import KeepOps, Retained
from .live import LiveOps
from .observe import Snapshot, snapshots
from .queue import Queue, counts_of
from .repeat import RepeatOps

__all__ = [
    "MAX_BATCH", "AdminOps", "ControlOps", "FlowOps", "JournalOps", "KeepOps", "LiveOps", "Ops", "Queue", "RepeatOps",
    "Retained", "Snapshot", "counts_of", "snapshots",
]

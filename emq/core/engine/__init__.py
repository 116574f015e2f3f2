"""The engine: every atomic state change of a queue, one method per script in ``emq/lua/``.

The only caller of ``scripts.run``; the rest of emq (workers, the Pump, recurrences, the
dashboard) goes through these classes, so an operation's ARGV order lives in one place.
"""

from .admin import AdminOps
from .base import MAX_BATCH, Ops
from .control import ControlOps
from .flow import FlowOps
from .keep import KeepOps, Retained
from .live import LiveOps
from .observe import Snapshot, snapshots
from .queue import Queue, counts_of
from .repeat import RepeatOps

__all__ = [
    "MAX_BATCH", "AdminOps", "ControlOps", "FlowOps", "KeepOps", "LiveOps", "Ops", "Queue", "RepeatOps", "Retained",
    "Snapshot", "counts_of", "snapshots",
]

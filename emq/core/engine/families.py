"""A queue's other families of operations, each a class of its own built on the queue's keys and client:
``Queue.repeat``, ``.admin``, ``.flow``, ``.live``, ``.rates``, ``.keep``, ``.quotas``, ``.crypto``."""

from __future__ import annotations

from .admin import AdminOps
from .base import Ops
from .flow import FlowOps
from .keep import KeepOps
from .live import LiveOps
from .quotas import QuotaOps
from .rates import RateOps
from .rekey import CryptoOps
from .repeat import RepeatOps


class Families(Ops):
    """The families of a queue's operations beside its lifecycle (``Queue`` inherits these)."""

    @property
    def repeat(self) -> RepeatOps:
        return RepeatOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def admin(self) -> AdminOps:
        return AdminOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def flow(self) -> FlowOps:
        return FlowOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def live(self) -> LiveOps:
        return LiveOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def rates(self) -> RateOps:
        return RateOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def keep(self) -> KeepOps:
        return KeepOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def quotas(self) -> QuotaOps:
        return QuotaOps(self.name, prefix=self.keys.prefix, client=self._client)

    @property
    def crypto(self) -> CryptoOps:
        return CryptoOps(self.name, prefix=self.keys.prefix, client=self._client)

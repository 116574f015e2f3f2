"""What the modules that place a job need of it, as a Protocol: ``JobLike``.

``function.py`` defines ``JobFunction`` on top of ``plan``, ``canvas`` and ``dependent``; they in turn
take a job function as an argument. Typing that argument as ``JobFunction`` tied the four in a circle
(type-only, but a newcomer reads it as one); typing it as ``JobLike`` keeps every arrow pointing down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..core.logical import JobRef
from ..core.records import MintSpec
from .options import Options


class JobLike(Protocol):
    """A registered job as plan, canvas and dependent use it (``JobFunction`` is the one kind)."""

    func: Callable[..., Any]
    name: str
    options: Options

    @property
    def queue(self) -> str: ...

    def using(self, **options: Any) -> JobLike: ...

    def enqueue(self, *args: Any, **kwargs: Any) -> JobRef: ...

    def spec(
        self,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        due: str,
        origin: str = "",
        resolved: dict | None = None,
        prepended: bool = False,
    ) -> MintSpec: ...

    def group_of(self, args: Sequence[Any], kwargs: dict[str, Any]) -> str: ...

    def _resolved(self) -> dict[str, Any]: ...

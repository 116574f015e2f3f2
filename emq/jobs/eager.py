"""EMQ_EAGER: run a job inline at enqueue, for projects (and tests) that want no worker at all.

The arguments still take the JSON round trip a worker would see, and a failure is raised to the
caller instead of being retried: eager mode is for seeing a job's effect at once, not for its lifecycle.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

from ..core import encrypted, sealed
from ..core.records import MintSpec
from .context import JobContext, current
from .steps import Journal


def run_inline(fn: Any, spec: MintSpec) -> Any:
    """Call the job's function now with its decoded arguments; exceptions reach the caller.

    ``emq.current_job()`` is this call while it runs; its progress goes nowhere. Its durable calls
    keep nothing: a step runs, a sleep returns at once, a wait returns None, a child runs now.
    """
    if sealed.is_sealed(spec.kwargs_json):  # encrypt=True: the round trip through the cipher too
        args, kwargs = encrypted.open_call(spec.args_json, spec.kwargs_json)
    else:
        args, kwargs = json.loads(spec.args_json), json.loads(spec.kwargs_json)
    ctx = JobContext(spec.id, fn.queue, 1, 1, spec.lease_ms, journal=Journal(inline=run_inline))
    if fn.options.takes_context:
        args.insert(0, ctx)
    running = current.set(ctx)
    try:
        result = fn.func(*args, **kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
    finally:
        current.reset(running)
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable

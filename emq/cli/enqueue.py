"""``manage.py emq enqueue NAME``: mint one job of a registered ``@emq.job`` (or a Django ``@task``).

NAME is looked up, never imported: the jobs are those the project's own modules registered (each
installed app's ``jobs`` module and EMQ_IMPORTS, imported as a worker imports them), and a Task
is one whose module those imports loaded. A name is an operator's typing, or a script's
argument: importing whatever module it names would run that module's code.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

from django.utils import timezone

from ..errors import ConfigurationError, NotRegistered
from ..jobs import autodiscover, registry
from .registry import IO, Arg, Options, Result, subcommand
from .render import duration


def _json(text: str, kind: type, option: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError as exc:
        example = "[1, 2]" if kind is list else '{"a": 1}'
        raise ConfigurationError(f"{option} is not JSON ({exc}): e.g. {option} '{example}'") from None
    if not isinstance(value, kind):
        raise ConfigurationError(f"{option} must be a JSON {'list' if kind is list else 'object'}, not {text!r}")
    return value


def _task(name: str) -> Any:
    """The Django Task at that module path when its module is loaded already, or None (nothing is imported)."""
    from ..contrib.tasks.compat import Task

    module, _, attr = name.rpartition(".")
    found = getattr(sys.modules.get(module), attr, None) if module else None
    return found if isinstance(found, Task) else None


def _refused(name: str) -> NotRegistered:
    return NotRegistered(
        f'no job registered as "{name}" (nor a Django task at that path in a module the project imports): '
        "register it with @emq.job in <app>/jobs.py of an installed app, or list its module in EMQ_IMPORTS"
    )


@subcommand(
    "enqueue", "Enqueue one job by its name (as @emq.job registered it, or a Django @task's module path).",
    Arg("name"), Arg("--args", dest="job_args", default="[]", help="JSON list"),
    Arg("--kwargs", dest="job_kwargs", default="{}", help="JSON object"),
    Arg("--in", dest="delay", default=None, metavar="DELAY", help="run after this delay, e.g. 10m"),
    Arg("--queue", default=None, help="another queue than the job's own"),
)
def enqueue(opts: Options, io: IO) -> Result:
    args, kwargs = _json(opts["job_args"], list, "--args"), _json(opts["job_kwargs"], dict, "--kwargs")
    delay = duration(opts["delay"]) if opts["delay"] else 0.0
    autodiscover()
    task = _task(opts["name"])  # first: a Task is registered as a job too once it ran in this process
    fn = registry.get(opts["name"])
    if task is None and fn is None:
        raise _refused(opts["name"])
    try:
        row = _mint(task, fn, opts, args, kwargs, delay)
    except (TypeError, ValueError, OverflowError) as exc:  # arguments that do not fit the job, a delay too long
        raise ConfigurationError(str(exc)) from None
    return Result(row, [row])


def _mint(task: Any, fn: Any, opts: Options, args: list, kwargs: dict, delay: float) -> dict[str, Any]:
    """Mint it (a Task through its backend, so its result is followed); the row to show."""
    if task is not None:
        changes = {"queue_name": opts["queue"]} if opts["queue"] else {}
        result = task.using(run_after=timezone.now() + timedelta(seconds=delay) if delay else None,
                            **changes).enqueue(*args, **kwargs)
        row = {"id": result.id, "queue": result.task.queue_name, "name": opts["name"], "in_s": delay}
    else:
        fn = fn.using(queue=opts["queue"]) if opts["queue"] else fn
        ref = fn.enqueue_in(delay, *args, **kwargs) if delay else fn.enqueue(*args, **kwargs)
        row = {"id": ref.id, "queue": ref.queue, "name": fn.name, "in_s": delay}
    return row

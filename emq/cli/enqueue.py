"""``manage.py emq enqueue NAME``: mint one job of a registered ``@emq.job`` (or a Django ``@task``)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.module_loading import import_string

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
    """The Django Task at that module path, or None."""
    from ..contrib.tasks.compat import Task

    try:
        found = import_string(name)
    except ImportError:
        return None
    return found if isinstance(found, Task) else None


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
        raise NotRegistered(f'no job registered as "{opts["name"]}" (nor a Django task at that path)')
    if task is not None:
        changes = {"queue_name": opts["queue"]} if opts["queue"] else {}
        result = task.using(run_after=timezone.now() + timedelta(seconds=delay) if delay else None,
                            **changes).enqueue(*args, **kwargs)
        row = {"id": result.id, "queue": result.task.queue_name, "name": opts["name"], "in_s": delay}
    else:
        fn = fn.using(queue=opts["queue"]) if opts["queue"] else fn
        ref = fn.enqueue_in(delay, *args, **kwargs) if delay else fn.enqueue(*args, **kwargs)
        row = {"id": ref.id, "queue": ref.queue, "name": fn.name, "in_s": delay}
    return Result(row, [row])

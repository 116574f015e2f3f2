"""``manage.py emq workers``: the live workers, and the settings operators store for them while they run.

    emq workers                                       # host, pid, version, queues, jobs, memory, uptime
    emq workers set --all --concurrency 6             # every worker, now and after a restart
    emq workers set --worker web-1 --queues mail:5,default:1
    emq workers pause --worker web-1:4242             # claims nothing until resumed; running jobs go on
    emq workers resume --worker web-1:4242
    emq workers clear [--worker web-1 | --all]         # back to the command line's settings

A setting is stored on the server (``emq.core.overrides``) and reaches each live worker it names within a
second or two (its heartbeat wakes); a worker started later that it names takes it too, until cleared.
"""

from __future__ import annotations

import time
from typing import Any

from ..core import config, overrides, registry
from ..errors import ConfigurationError
from .registry import IO, Arg, Options, Result, subcommand
from .render import age

ACTIONS = ["list", "set", "pause", "resume", "clear"]


@subcommand(
    "workers", "List the live workers (host, pid, version, queues, known job names, running jobs, memory, uptime), "
    "or change them while they run: set --concurrency N and/or --queues q1:5,q2:1, pause, resume, or clear what "
    "was set; name them with --worker ID (an id, its host or host:pid) or --all. Kept until cleared.",
    Arg("action", nargs="?", default="list", choices=ACTIONS, help="list (default), set, pause, resume, clear"),
    Arg("--worker", default=None, metavar="ID", help="a worker id, or its host, or host:pid (see the list)"),
    Arg("--all", action="store_true", help="every worker, those started later too"),
    Arg("--concurrency", default=None, metavar="N", help="threads the workers run jobs on"),
    Arg("--queues", default=None, metavar="Q1:W,Q2", help="queues the workers claim from, with weights"),
)
def workers(opts: Options, io: IO) -> Result:
    prefix, action = config.get("EMQ_PREFIX"), opts["action"]
    if action == "list":
        return _list(prefix)
    if action == "clear":
        selector = None if opts["all"] else overrides.selector_of(opts["worker"], False)
        gone, woken = overrides.forget(prefix, selector)
        what = "every stored worker setting" if selector is None else f"the settings stored for {selector}"
        return Result({"cleared": gone, "selector": selector, "woken": woken},
                      lines=[f"cleared {what} ({gone} selector(s)); {_reach(woken)}, back to its command line"])
    selector = overrides.selector_of(opts["worker"], opts["all"])
    changes = _changes(action, opts)
    now, woken = overrides.change(prefix, selector, changes)
    said = ", ".join(f"{k} {','.join(v) if isinstance(v, list | tuple) else v}" for k, v in sorted(now.items()))
    return Result({"selector": selector, "settings": now, "woken": woken},
                  lines=[f"stored for {selector}: {said}; {_reach(woken)}, and workers it names that start later"])


def _changes(action: str, opts: Options) -> dict[str, Any]:
    if action in ("pause", "resume"):
        return {"paused": action == "pause"}
    changes: dict[str, Any] = {}
    if opts["concurrency"] is not None:
        changes["concurrency"] = overrides.check_concurrency(opts["concurrency"])
    if opts["queues"] is not None:
        changes["queues"] = list(overrides.check_queues(opts["queues"]))
    if not changes:
        raise ConfigurationError("workers set needs --concurrency N and/or --queues q1:5,q2:1")
    return changes


def _reach(woken: list[str]) -> str:
    if not woken:
        return "no live worker is named by it now"
    return f"{len(woken)} live worker(s) take it within 2 s ({', '.join(woken[:5])}{' …' if len(woken) > 5 else ''})"


def _list(prefix: str) -> Result:
    entries = registry.workers(prefix)
    now = time.time()
    data = [{**e.info, "id": e.id, "uptime_s": int(now - e.info["started"]) if e.info.get("started") else None}
            for e in entries]
    rows = [{"worker": d["id"], "host": d.get("host"), "pid": d.get("pid"), "version": d.get("version") or "—",
             "queues": ",".join(d.get("specs") or d.get("queues", [])), "running": f"{d.get('running', 0)}/"
             f"{d.get('concurrency', '?')}", "state": "paused" if d.get("paused") else "running",
             "memory": _mb(d.get("rss")), "uptime": age(d["uptime_s"] * 1000 if d["uptime_s"] is not None else None),
             "job names": len(d.get("jobs", [])), "settings": ",".join(d.get("settings", [])) or "—"} for d in data]
    stored = overrides.stored(prefix)
    lines = [f"stored for {s}: {v}" for s, v in sorted(stored.items())]
    return Result({"workers": data, "stored": stored}, rows, lines or ["no stored worker settings"])


def _mb(rss: int | None) -> str:
    return "—" if rss is None else f"{rss / 1_048_576:.0f} MB"

"""``manage.py emq server start|stop|status``: the embedded Valkey that ``make run`` starts; and
``manage.py emq functions [--prune]``: the function libraries each emq version leaves on the server.

Only the embedded server is emq's to start and stop; with EMQ_URL set, this says so and refuses.
"""

from __future__ import annotations

from ..core import config, embedded, libraries
from ..core.connection import data_dir, get_client, mask
from .registry import IO, Arg, Options, Result, subcommand


@subcommand("server", "Start, stop or show the embedded Valkey (the server used when EMQ_URL is empty).",
            Arg("action", choices=["start", "stop", "status"]))
def server(opts: Options, io: IO) -> Result:
    url, folder = config.get("EMQ_URL"), data_dir()
    if url:
        return Result({"url": mask(url), "embedded": False}, ok=opts["action"] == "status",
                      lines=[f"EMQ_URL is set ({mask(url)}): that server is not emq's to start or stop"],
                      failure="only the embedded Valkey is started and stopped here")
    if opts["action"] == "start":
        found = embedded.start(folder)
        return Result({"url": found, "folder": str(folder)}, lines=[f"embedded Valkey at {found} (data in {folder})"])
    if opts["action"] == "stop":
        stopped = embedded.stop(folder)
        said = f"stopped the embedded Valkey in {folder}" if stopped else f"no embedded Valkey runs in {folder}"
        return Result({"stopped": stopped, "folder": str(folder)}, lines=[said], ok=stopped, failure=said)
    found = embedded.running(folder)
    said = f"embedded Valkey runs at {found} (data in {folder})" if found else f"no embedded Valkey runs in {folder}"
    return Result({"url": found, "folder": str(folder)}, lines=[said], ok=bool(found), failure="not running")


@subcommand("functions", "List emq's Valkey Function libraries on each primary (one a version of the claim and "
            "the finish); --prune deletes other versions' once none of their workers runs.",
            Arg("--prune", action="store_true", help="delete every library that is not this version's"))
def functions(opts: Options, io: IO) -> Result:
    client = get_client()
    rows = libraries.prune(client) if opts["prune"] else libraries.listed(client)
    for row in rows:
        row["version"] = "this" if row.pop("current") else "other"
    gone = sum(1 for r in rows if r.get("deleted"))
    said = f"deleted {gone} of {len(rows)} libraries" if opts["prune"] else f"{len(rows)} libraries"
    return Result({"libraries": rows, "deleted": gone}, rows=rows, lines=[said])

"""The function libraries emq leaves on a server (``functions.py``): listed by node, other versions' deleted.

A library persists with the data, unlike the script cache, so each deployed version of emq leaves its
own (~100 KB) on the nodes that served its claims. ``manage.py emq functions --prune`` deletes every
other version's once none of its processes runs; a process of an old version that still runs loads
its library again on its next call ("Function not found" is handled as NOSCRIPT is): nothing breaks,
it costs that one load.
"""

from __future__ import annotations

from typing import Any

import redis

from . import config, functions, scripts


def ours() -> set[str]:
    """This version's library names, with and without events, in each record format (a process may run
    either setting)."""
    events_max = max(int(config.get("EMQ_EVENTS_MAX")), 1)
    return {scripts.script(op, m, f).function for op in functions.FUNCTIONS for m in (0, events_max)
            for f in scripts.RECORD_FORMATS}


def listed(client: Any) -> list[dict[str, Any]]:
    """Every emq library on every primary: node, library, whether it is this version's."""
    mine = ours()
    return [{"node": node, "library": name, "current": name in mine}
            for node, conn in _primaries(client) for name in _names(conn)]


def prune(client: Any) -> list[dict[str, Any]]:
    """Delete the libraries of other versions on every primary; the rows of ``listed``, each with deleted."""
    rows, conns = listed(client), dict(_primaries(client))
    for row in rows:
        row["deleted"] = not row["current"] and _delete(conns[row["node"]], row["library"])
    return rows


def _primaries(client: Any) -> list[tuple[str, Any]]:
    if not isinstance(client, redis.RedisCluster):
        kw = client.connection_pool.connection_kwargs
        return [(f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}", client)]
    return [(node.name, client.get_redis_connection(node)) for node in client.get_primaries()]


def _names(conn: Any) -> list[str]:
    """FUNCTION LIST's library names (RESP2 answers flat lists, RESP3 maps)."""
    out = []
    for lib in conn.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "emq_*"):
        fields = lib if isinstance(lib, dict) else dict(zip(lib[::2], lib[1::2], strict=False))
        name = fields.get("library_name", fields.get(b"library_name"))
        out.append(name.decode() if isinstance(name, bytes) else name)
    return sorted(out)


def _delete(conn: Any, name: str) -> bool:
    try:
        conn.execute_command("FUNCTION", "DELETE", name)
    except redis.ResponseError as exc:  # deleted meanwhile (another prune): gone all the same
        if "not exist" not in str(exc).lower():
            raise
    return True

"""The job dashboard inside the Django admin: overview, lanes, leases, stalled, scheduled, dead letter.

Registered through ``emq/admin.py``; every page reads through one function of ``queries.py``,
every state change goes through ``ops.py`` (the ``admin_*`` Lua scripts) or the engine.
"""

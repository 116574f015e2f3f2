"""The core: Valkey only, no Django. Keys, scripts, the engine, and queue names (topology).

Everything above (jobs, the runtime, scheduling, the Django edges) reaches the server through
here; settings come through ``config``, whose reader the Django layer installs.
"""

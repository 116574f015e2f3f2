"""Scheduling: occurrence maths (``cron``), recurrences in Valkey (``repeat``), rows to Valkey (``rows``)."""

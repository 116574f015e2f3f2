"""The runtime: the worker loop and the threads beside it, the Pump, the supervisor of processes."""

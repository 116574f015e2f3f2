"""Raise an exception inside another thread of this process (CPython's ``PyThreadState_SetAsyncExc``).

Limit: the exception arrives when the thread next runs Python code; a thread blocked in C (a
``time.sleep``, a socket read) sees it only once that call returns. The watchdog therefore never
waits for it: the attempt's outcome is reported at the deadline and the slot gets a fresh thread.
"""

from __future__ import annotations

import ctypes
import threading

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc


def raise_in(thread: threading.Thread, kind: type[BaseException]) -> bool:
    """Ask thread to raise kind at its next Python instruction; False when the thread is gone."""
    if thread.ident is None:
        return False
    return _set_async_exc(ctypes.c_ulong(thread.ident), ctypes.py_object(kind)) == 1


def clear_pending() -> None:
    """Drop an exception raise_in asked the calling thread to raise and that has not arrived yet."""
    _set_async_exc(ctypes.c_ulong(threading.get_ident()), None)

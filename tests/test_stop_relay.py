"""A stop signal never runs its action inside the handler (emq/runtime/stop_relay.py).

Python runs a handler on the main thread between two bytecodes; a worker's main thread holds its wake
event's lock at every pass, and a handler that set that event deadlocked the worker (CI: no "stopping:"
line in 30 s, the process hung). These tests hold the lock the way the loop does and signal the process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter (its signals are its own), 30 s at most: a hang raises TimeoutExpired."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})

HOLDS_THE_LOCK = """
import os, signal, threading, time
from emq.runtime import startup
startup.supervised = {supervised}
stop = threading.Event()
startup.on_stop_signals(stop.set)
with stop._cond:  # the lock Event.clear and Event.wait take, held as the worker's loop holds it each pass
    os.kill(os.getpid(), signal.{sig})  # the handler runs right after this call, on this thread
    time.sleep(0.05)  # the lock stays held a moment longer, whenever the handler gets its turn
print("stopped" if stop.wait(10) else "not stopped", threading.active_count(), flush=True)
"""


@pytest.mark.parametrize("supervised", [False, True])
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stop_signal_while_the_main_thread_holds_the_wake_lock_stops_and_does_not_hang(sig, supervised):
    code = HOLDS_THE_LOCK.format(sig=sig, supervised=supervised)
    try:
        out = _python(code)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{sig} hung the process: its handler waited for a lock its own thread held")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["stopped", "2"]  # the main thread and the relay's


def test_the_relay_thread_takes_no_signal_and_a_fork_gets_its_own_relay():
    code = """
import os, signal, threading
from emq.runtime import stop_relay
got = threading.Event()
stop_relay.relay(signal.SIGUSR1, got.set)
relay = next(t for t in threading.enumerate() if t.name == "emq-stop-relay")
mask = open(f"/proc/self/task/{relay.native_id}/status").read().split("SigBlk:")[1].split()[0]
print("blocked", bool(int(mask, 16) & (1 << (signal.SIGTERM - 1))), flush=True)
pid = os.fork()
if pid == 0:
    again = threading.Event()
    stop_relay.relay(signal.SIGUSR1, again.set)
    os.kill(os.getpid(), signal.SIGUSR1)
    os._exit(0 if again.wait(10) else 1)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
os.kill(os.getpid(), signal.SIGUSR1)
print("parent", got.wait(10), flush=True)
"""
    out = _python(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["blocked", "True", "child", "0", "parent", "True"]


def test_the_handler_is_the_relays_and_a_repeated_sigterm_of_a_supervised_worker_is_one_stop():
    code = """
import os, signal, threading, time
from emq.runtime import startup, stop_relay
startup.supervised = True
calls = []
done = threading.Event()
def stop():
    calls.append(threading.current_thread().name)
    if len(calls) == 2:
        done.set()
startup.on_stop_signals(stop)
assert signal.getsignal(signal.SIGTERM) is stop_relay._post
os.kill(os.getpid(), signal.SIGTERM)
os.kill(os.getpid(), signal.SIGTERM)  # systemd's and the supervisor's: one graceful stop
os.kill(os.getpid(), signal.SIGINT)  # the supervisor's second stop: the grace cut short (stop called again)
print(done.wait(10), calls, flush=True)
"""
    out = _python(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True ['emq-stop-relay', 'emq-stop-relay']"


def test_the_start_up_wait_ends_at_once_on_a_stop_signal_and_starts_no_thread():
    """The supervisor waits for the server before it forks: that wait must leave it one thread."""
    code = """
import os, signal, threading, time
from emq.runtime.stop_relay import MainWait
w = MainWait()
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
started = time.monotonic()
print(w.wait(30), time.monotonic() - started < 10, flush=True)  # at the signal, not after the 30 s
w.close()
os.kill(os.getpid(), signal.SIGINT)  # after close: written nowhere, not into a reused descriptor
print(w.wait(0), threading.active_count(), flush=True)
"""
    out = _python(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "True", "1"]

"""The embedded Valkey stopped and started again while a worker runs (``emq server stop|start``, a
second ``make run``): the worker finds it again and runs the jobs minted after the restart, whether
the server came back on its old port or, that port taken meanwhile, on another one."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import uuid

import pytest

import emq
from emq.core import embedded
from tests import jobs
from tests.procs import manage, wait_for


@pytest.fixture
def folder(tmp_path, settings):
    """An embedded Valkey of this test's own, used by this process and the worker it starts."""
    data = tmp_path / "data"
    settings.EMQ_URL, settings.EMQ_DATA_DIR, settings.EMQ_CLUSTER = "", str(data), False
    settings.EMQ_PREFIX = f"restart-{uuid.uuid4().hex[:8]}"
    embedded.start(data)
    yield data
    embedded.stop(data)


class Squatter(threading.Thread):
    """Another program listening on a port: it hangs up on whoever connects."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the old server's TIME_WAITs
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()

    def run(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.sock.accept()[0].close()

    def __enter__(self) -> Squatter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.join(timeout=5)


def completed(ref: emq.JobRef) -> bool:
    try:
        return ref.get().state == "completed"
    except emq.ServerUnavailable:
        return False


def test_a_restart_keeps_the_port_when_it_is_free(folder):
    first = embedded.running(folder)
    assert embedded.stop(folder) and embedded.running(folder) is None
    assert embedded.start(folder) == first


def test_a_running_worker_follows_the_server_through_restarts(folder, settings, tmp_path):
    env = {"EMQ_URL": "", "EMQ_DATA_DIR": str(folder), "EMQ_PREFIX": settings.EMQ_PREFIX, "EMQ_CLUSTER": "false"}
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 (closed in finally)
    worker = manage(env, "emq_worker", "--concurrency", "2", stderr=log)
    try:
        before = jobs.add.enqueue(1, 2)
        wait_for(lambda: completed(before), timeout=30, what="the worker to run a job")
        first = embedded.running(folder)

        embedded.stop(folder)
        assert embedded.start(folder) == first  # its old port was free
        again = jobs.add.enqueue(3, 4)
        wait_for(lambda: completed(again), timeout=30, what="a job minted after a restart on the same port")

        embedded.stop(folder)
        with Squatter(embedded.recorded_port(folder)):  # someone took the old port meanwhile
            moved = embedded.start(folder)
            assert moved != first
            after = jobs.add.enqueue(5, 6)  # this process's client reads the port file as it reconnects too
            wait_for(lambda: completed(after), timeout=30, what="a job minted after a restart on a new port")
        assert after.get().result == 11 and worker.poll() is None
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()

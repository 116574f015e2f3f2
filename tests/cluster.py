"""A 3-master Valkey Cluster on loopback from the embedded ``valkey-server``, for tests.

Slots are assigned and nodes joined from Python (CLUSTER ADDSLOTSRANGE, CLUSTER MEET); no
``valkey-cli``, no replicas, no persistence. ``migrate_slot`` moves one slot with the
classic protocol (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) while clients run.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from emq import embedded

SLOTS = 16384


def _free_ports(n: int) -> list[int]:
    """n distinct free ports (held open together, so none is handed out twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Cluster:
    """A running local cluster: its nodes' ports and their ids, one client per node."""

    folder: Path
    ports: list[int]
    procs: list[subprocess.Popen] = field(default_factory=list)
    clients: dict[int, redis.Redis] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def node(self, i: int) -> redis.Redis:
        """A plain client of node i (kept, closed by ``stop``)."""
        if i not in self.clients:
            self.clients[i] = redis.Redis(port=self.ports[i], decode_responses=True)
        return self.clients[i]

    def node_id(self, i: int) -> str:
        return self.node(i).execute_command("CLUSTER", "MYID")

    def owner(self, slot: int) -> int:
        """Index of the node that serves a slot."""
        for lo, hi, *nodes in self.node(0).execute_command("CLUSTER", "SLOTS"):
            if lo <= slot <= hi:
                return self.ports.index(int(nodes[0][1]))
        raise LookupError(f"slot {slot} is not served")

    def stop(self) -> None:
        for c in self.clients.values():
            c.close()
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


def start(folder: Path, masters: int = 3, timeout: float = 20.0) -> Cluster:
    """Start masters nodes, split the slots evenly, join them and wait for cluster_state:ok."""
    ports = _free_ports(2 * masters)
    cluster = Cluster(folder, ports[:masters])
    try:
        for i, (port, bus) in enumerate(zip(ports[:masters], ports[masters:], strict=True)):
            cluster.procs.append(_launch(folder / f"n{i}", port, bus))
        for i in range(masters):
            _wait(lambda i=i: _pong(cluster.node(i)), timeout, f"node {i} to answer")
            lo, hi = i * SLOTS // masters, (i + 1) * SLOTS // masters - 1
            cluster.node(i).execute_command("CLUSTER", "ADDSLOTSRANGE", lo, hi)
        first = cluster.node(0)
        for i in range(1, masters):
            first.execute_command("CLUSTER", "MEET", "127.0.0.1", ports[i], ports[masters + i])
        for i in range(masters):
            _wait(lambda i=i: _ok(cluster.node(i), masters), timeout, f"node {i} to see cluster_state:ok")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _launch(folder: Path, port: int, bus: int) -> subprocess.Popen:
    folder.mkdir(parents=True)
    args = [
        embedded.binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
        "--cluster-enabled", "yes", "--cluster-port", str(bus), "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no",
        "--logfile", str(folder / "valkey.log"),
    ]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _pong(node: redis.Redis) -> bool:
    try:
        return bool(node.ping())
    except redis.ConnectionError:
        return False


def _ok(node: redis.Redis, masters: int) -> bool:
    info = node.execute_command("CLUSTER", "INFO")
    known = sum(1 for line in node.execute_command("CLUSTER", "NODES").splitlines() if "master" in line)
    return "cluster_state:ok" in info and known == masters and _sees_all_slots(node)


def _sees_all_slots(node: redis.Redis) -> bool:
    return sum(hi - lo + 1 for lo, hi, *_ in node.execute_command("CLUSTER", "SLOTS")) == SLOTS


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"local Valkey Cluster: timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def migrate_slot(cluster: Cluster, slot: int, dest: int, batch: int = 100, pause: float = 0.0) -> int:
    """Move one slot to node dest key batch by key batch while clients run; returns keys moved."""
    src = begin_migration(cluster, slot, dest)
    moved = move_keys(cluster, slot, src, dest, batch, pause)
    end_migration(cluster, slot, src, dest)
    return moved


def begin_migration(cluster: Cluster, slot: int, dest: int) -> int:
    """Mark the slot IMPORTING on dest and MIGRATING on its owner; returns the owner's index."""
    src = cluster.owner(slot)
    cluster.node(dest).execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", cluster.node_id(src))
    cluster.node(src).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", cluster.node_id(dest))
    return src


def move_keys(cluster: Cluster, slot: int, src: int, dest: int, batch: int = 100, pause: float = 0.0) -> int:
    """MIGRATE the slot's keys from src to dest, batch keys at a time; returns how many moved."""
    source, moved = cluster.node(src), 0
    while names := source.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch):
        source.execute_command("MIGRATE", "127.0.0.1", cluster.ports[dest], "", 0, 5000, "KEYS", *names)
        moved += len(names)
        if pause:
            time.sleep(pause)
    return moved


def end_migration(cluster: Cluster, slot: int, src: int, dest: int) -> None:
    """Give the slot to dest on every node: dest first, then the old owner, then the rest."""
    dest_id = cluster.node_id(dest)
    others = [i for i in range(len(cluster.ports)) if i not in (src, dest)]
    for i in (dest, src, *others):
        cluster.node(i).execute_command("CLUSTER", "SETSLOT", slot, "NODE", dest_id)

"""A local Valkey Cluster on loopback from the embedded ``valkey-server``, for tests.

Slots are assigned and nodes joined from Python (CLUSTER ADDSLOTSRANGE, CLUSTER MEET,
CLUSTER REPLICATE); no ``valkey-cli``, no persistence. By default 3 masters without replicas;
``start(replicas=1)`` gives each master a replica, and ``kill`` ends a node with SIGKILL so its
replica is promoted. ``migrate_slot`` moves one slot with the classic protocol
(SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) while clients run.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from emq.core import embedded

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
    """A running local cluster: its nodes' ports (masters first, then replicas), one client per node."""

    folder: Path
    ports: list[int]
    masters: int = 3
    buses: list[int] = field(default_factory=list)  # each node's cluster bus port
    node_timeout: int = 5000
    procs: list[subprocess.Popen] = field(default_factory=list)
    clients: dict[int, redis.Redis] = field(default_factory=dict)
    dead: set[int] = field(default_factory=set)

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

    def live(self) -> redis.Redis:
        """A client of the first node still running."""
        return self.node(min(i for i in range(len(self.ports)) if i not in self.dead))

    def owner(self, slot: int) -> int:
        """Index of the node that serves a slot (as a live node sees it)."""
        for lo, hi, *nodes in self.live().execute_command("CLUSTER", "SLOTS"):
            if lo <= slot <= hi:
                return self.ports.index(int(nodes[0][1]))
        raise LookupError(f"slot {slot} is not served")

    def kill(self, i: int) -> None:
        """End node i with SIGKILL (no shutdown, no last words to its replica)."""
        self.dead.add(i)
        if i in self.clients:
            self.clients.pop(i).close()
        self.procs[i].kill()
        self.procs[i].wait()

    def pause(self, i: int) -> None:
        """Freeze node i (SIGSTOP): it neither answers nor reconnects until ``resume``."""
        self.procs[i].send_signal(signal.SIGSTOP)

    def resume(self, i: int) -> None:
        self.procs[i].send_signal(signal.SIGCONT)

    def replica_of(self, i: int) -> int:
        """Index of a live node that replicates node i now (roles change with every failover)."""
        master = self.node_id(i)
        for line in self.live().execute_command("CLUSTER", "NODES").splitlines():
            _, addr, flags, of, *_ = line.split()
            port = int(addr.split("@")[0].rsplit(":", 1)[1])
            if "slave" in flags and of == master and self.ports.index(port) not in self.dead:
                return self.ports.index(port)
        raise LookupError(f"node {i} has no live replica")

    def restart(self, i: int, timeout: float = 20.0) -> None:
        """Start a killed node again on its old ports and config; wait until it is a replica in sync.

        Its nodes.conf remembers the cluster, so it rejoins, learns its replica was promoted, and
        becomes that node's replica (a full resync: it restarts without data).
        """
        self.procs[i] = _launch(self.folder / f"n{i}", self.ports[i], self.buses[i], self.node_timeout)
        self.dead.discard(i)
        _wait(lambda: _pong(self.node(i)), timeout, f"node {i} to answer again")
        _wait(lambda: _in_sync(self.node(i)), timeout, f"node {i} to rejoin as a replica in sync")

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


def start(folder: Path, masters: int = 3, replicas: int = 0, node_timeout: int = 5000,
          timeout: float = 20.0) -> Cluster:
    """Start the nodes, split the slots evenly over the masters, join them, give each master its
    replicas, and wait for cluster_state:ok (and every replica in sync)."""
    n = masters * (1 + replicas)
    ports = _free_ports(2 * n)
    cluster = Cluster(folder, ports[:n], masters, ports[n:], node_timeout)
    try:
        for i, (port, bus) in enumerate(zip(ports[:n], ports[n:], strict=True)):
            cluster.procs.append(_launch(folder / f"n{i}", port, bus, node_timeout))
        for i in range(n):
            _wait(lambda i=i: _pong(cluster.node(i)), timeout, f"node {i} to answer")
        for i in range(masters):
            lo, hi = i * SLOTS // masters, (i + 1) * SLOTS // masters - 1
            cluster.node(i).execute_command("CLUSTER", "ADDSLOTSRANGE", lo, hi)
        for i in range(1, n):
            cluster.node(0).execute_command("CLUSTER", "MEET", "127.0.0.1", ports[i], ports[n + i])
        for j in range(masters, n):
            master = cluster.node_id((j - masters) % masters)
            _wait(lambda j=j, m=master: _replicate(cluster.node(j), m), timeout, f"node {j} to replicate {master}")
        for i in range(n):
            _wait(lambda i=i: _ok(cluster.node(i), masters), timeout, f"node {i} to see cluster_state:ok")
        for j in range(masters, n):
            _wait(lambda j=j: _in_sync(cluster.node(j)), timeout, f"replica {j} to be in sync")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _launch(folder: Path, port: int, bus: int, node_timeout: int) -> subprocess.Popen:
    folder.mkdir(parents=True, exist_ok=True)
    args = [
        embedded.binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
        "--cluster-enabled", "yes", "--cluster-port", str(bus), "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", str(node_timeout), "--save", "", "--appendonly", "no",
        "--logfile", str(folder / "valkey.log"),
    ]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _replicate(node: redis.Redis, master_id: str) -> bool:
    """CLUSTER REPLICATE once the node has heard of the master through the gossip."""
    try:
        return bool(node.execute_command("CLUSTER", "REPLICATE", master_id))
    except redis.ResponseError as exc:
        if "Unknown node" in str(exc):
            return False
        raise


def _in_sync(node: redis.Redis) -> bool:
    try:
        info = node.info("replication")
    except redis.ConnectionError:
        return False
    return info.get("role") == "slave" and info.get("master_link_status") == "up"


def _pong(node: redis.Redis) -> bool:
    try:
        return bool(node.ping())
    except redis.ConnectionError:
        return False


def _ok(node: redis.Redis, masters: int) -> bool:
    info = node.execute_command("CLUSTER", "INFO")
    known = sum(1 for line in node.execute_command("CLUSTER", "NODES").splitlines() if "master" in line.split()[2])
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
    others = [i for i in range(cluster.masters) if i not in (src, dest)]
    for i in (dest, src, *others):
        cluster.node(i).execute_command("CLUSTER", "SETSLOT", slot, "NODE", dest_id)

"""A real three-master Redis Cluster for the suite, and the Redis deployments tests run on.

Three private `redis-server --cluster-enabled yes` processes on free loopback ports (each with its
cluster bus port free too), keeping no data on disk; the slots are split in three with
CLUSTER ADDSLOTSRANGE and the nodes introduced with CLUSTER MEET, so no redis-cli is needed and any
binary tests/services/redis_server.py finds works. A cluster that does not come up is a failure with
the nodes' log tails, never a skip.

`redis_deployment` runs a test on the shared single server and on this cluster: a cluster refuses a
command or script whose keys span two hash slots (CROSSSLOT), and routes every key to its own master.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from mcp_memory.config import WorkingSettings
from mcp_memory.storage.redis.keys import RedisKeys
from tests.helpers import HANG_SECONDS
from tests.services.redis_server import RedisServer, _binary_or_fail, delete_prefix, redis_settings

MASTERS = 3
SLOTS = 16384
_FORM_DEADLINE_SECONDS = HANG_SECONDS  # a bound against a hang, not a speed test


class RedisClusterProcesses:
    """Three masters owning a third of the slots each, as `redis-cli --cluster create` would set up."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.workdir = workdir
        self.nodes = [RedisServer(binary, workdir / f"node-{n}", cluster=True) for n in range(MASTERS)]

    @property
    def url(self) -> str:
        """Any node's URL: the cluster client discovers the others from it."""
        return self.nodes[0].url

    def start(self) -> None:
        try:
            for node in self.nodes:
                node.start()  # fails the test with the node's log if it does not answer PING
            self._form()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def _form(self) -> None:
        clients = [
            redis.Redis(host="127.0.0.1", port=node.port, decode_responses=True) for node in self.nodes
        ]
        try:
            share = SLOTS // MASTERS
            for n, client in enumerate(clients):
                last = SLOTS - 1 if n == MASTERS - 1 else (n + 1) * share - 1
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", n * share, last)  # type: ignore[no-untyped-call]
            for node in self.nodes[1:]:
                clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)  # type: ignore[no-untyped-call]
            deadline = time.monotonic() + _FORM_DEADLINE_SECONDS
            while not all(self._formed(client) for client in clients):
                if time.monotonic() > deadline:
                    self._fail("did not agree on one cluster")
                time.sleep(0.05)  # polling processes that gossip, not a test waiting on behaviour
        except redis.RedisError as e:
            self._fail(f"refused to form a cluster: {e}")
        finally:
            for client in clients:
                client.close()

    @staticmethod
    def _formed(client: redis.Redis) -> bool:
        info = client.cluster("INFO")
        return bool(
            info["cluster_state"] == "ok"
            and int(info["cluster_known_nodes"]) == MASTERS
            and int(info["cluster_slots_ok"]) == SLOTS
        )

    def _fail(self, what: str) -> None:
        tails = "\n".join(
            f"--- node {node.port}:\n{log.read_text(errors='replace')[-1500:]}"
            for node in self.nodes
            if (log := node.workdir / f"redis-{node.port}.log").exists()
        )
        pytest.fail(f"the {MASTERS}-master Redis Cluster {what}; the nodes' logs end:\n{tails}")


def delete_prefix_on_cluster(url: str, prefix: str) -> None:
    """Remove a test's keys from every master (a SCAN sees one node's keys; each is unlinked alone,
    since the cluster refuses one command over keys of several slots)."""
    cluster = redis.RedisCluster.from_url(url)
    try:
        for node in cluster.get_primaries():  # type: ignore[no-untyped-call]
            client = cluster.get_redis_connection(node)
            keys = list(client.scan_iter(match=RedisKeys(prefix).everything_pattern(), count=1000))
            for key in keys:
                client.unlink(key)
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one node of a private three-master Redis Cluster, shared by the session."""
    cluster = RedisClusterProcesses(_binary_or_fail(), tmp_path_factory.mktemp("redis-cluster"))
    cluster.start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


@dataclass(frozen=True)
class RedisDeployment:
    """Where a test's Redis lives: the shared single server, or the three-master cluster."""

    url: str
    cluster: bool

    @property
    def name(self) -> str:
        return "cluster" if self.cluster else "single"

    def settings(self, **overrides: object) -> WorkingSettings:
        """Working settings on a fresh key prefix of this deployment."""
        return redis_settings(self.url, cluster=self.cluster, **overrides)

    def client(self) -> aioredis.Redis | AsyncRedisCluster:
        """A raw client, for looking at keys the way the server stores them."""
        if self.cluster:
            return AsyncRedisCluster.from_url(self.url, decode_responses=True)
        return aioredis.Redis.from_url(self.url, decode_responses=True)

    def delete_prefix(self, prefix: str) -> None:
        if self.cluster:
            delete_prefix_on_cluster(self.url, prefix)
        else:
            delete_prefix(self.url, prefix)


@pytest.fixture(params=["single", "cluster"])
def redis_deployment(request: pytest.FixtureRequest) -> RedisDeployment:
    """The same test on one Redis server and on a three-master Redis Cluster."""
    fixture = "redis_cluster_url" if request.param == "cluster" else "redis_url"
    return RedisDeployment(str(request.getfixturevalue(fixture)), cluster=request.param == "cluster")


@pytest.fixture
def redis_cluster_working_settings(redis_cluster_url: str) -> Iterator[WorkingSettings]:
    """Like redis_working_settings, on the three-master cluster."""
    settings = redis_settings(redis_cluster_url, cluster=True)
    yield settings
    delete_prefix_on_cluster(redis_cluster_url, settings.key_prefix)


@pytest.fixture
def private_redis_cluster(tmp_path: Path) -> Iterator[RedisClusterProcesses]:
    """A three-master cluster of this test's own: stop and restart its nodes freely."""
    cluster = RedisClusterProcesses(_binary_or_fail(), tmp_path / "redis-cluster")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()

"""A local multi-node Ray cluster for the tests (``ray.cluster_utils.Cluster``): a head and worker
nodes of 1 CPU each, small object stores (they spill to disk), every node's workers importing
this checkout's verimod."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

MB = 1 << 20
OBJECT_STORE_MB = 100


def cat(folder: Path) -> bytes:
    """The parts of an output folder, concatenated in order."""
    return b"".join(part.read_bytes() for part in sorted(Path(folder).glob("part-*.jsonl")))


class LocalCluster:
    """A started cluster and this process connected to it."""

    def __init__(
        self, workers: int, head_cpus: int, dashboard: bool, system_config: dict[str, Any] | None = None
    ) -> None:
        self.ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'verimod[ray]')")
        if dashboard:  # the state API the test reads is served by the dashboard: ray[default]
            pytest.importorskip("aiohttp_cors", reason="Ray's dashboard is not installed (pip install 'verimod[ray]')")
        from ray.cluster_utils import Cluster

        self._path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), self._path]))
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": head_cpus,
                "object_store_memory": OBJECT_STORE_MB * MB,
                "include_dashboard": dashboard,
                **({"_system_config": system_config} if system_config else {}),
            },
        )
        self.workers = [self.add_worker() for _ in range(workers)]
        self.ray.init(address=self.cluster.address, log_to_driver=False)

    def add_worker(self) -> Any:
        return self.cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_MB * MB)

    def kill(self, node_id: str) -> None:
        """Kill the worker node ``node_id`` at once (no graceful shutdown) and add a fresh one."""
        node = next(n for n in self.workers if n.node_id == node_id)
        self.cluster.remove_node(node, allow_graceful=False)
        self.workers.remove(node)
        self.workers.append(self.add_worker())

    def close(self) -> None:
        self.ray.shutdown()
        self.cluster.shutdown()
        if self._path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self._path


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalCluster]:
    """A head and two workers, 1 CPU each."""
    cluster = LocalCluster(workers=2, head_cpus=1, dashboard=False)
    yield cluster
    cluster.close()

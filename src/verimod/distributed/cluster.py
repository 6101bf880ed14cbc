"""Connecting to a Ray cluster and running verimod's tasks on it (the optional extra ``verimod[ray]``).

Addresses (``--ray ADDRESS``):

- ``auto``: the cluster named by ``RAY_ADDRESS``, or the one ``ray start --head`` started on this
  machine;
- ``HOST:PORT`` (the head's GCS port, 6379 by default) or ``ray://HOST:10001`` (Ray Client);
- ``local``: a Ray instance started for this command on this machine, stopped at its end.

Every node must import the same verimod version (``pip install ".[ray]"`` on each) and
see the command's input and output paths at the same place (shared storage):
:func:`check_nodes` runs one small task on every live node and turns the first node that does
not into a one-line error before any work starts.

Tasks are plain module-level functions wrapped with :func:`submit`: Ray retries a task whose
worker or node died (``max_retries``) and rebuilds a lost intermediate object by re-running the
task that made it (lineage reconstruction), so every task here is deterministic — the same
inputs give the same outputs — and writes files only atomically (temporary file, rename).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from verimod.core.errors import InputError, MissingExtraError, install_hint, one_line

#: How often Ray re-runs a task whose worker or node died before giving up.
TASK_RETRIES = 4
#: Where the address ``local`` starts Ray (no cluster).
LOCAL = "local"


class ClusterError(RuntimeError):
    """The Ray job failed for a reason other than bad input: a task failed after its retries,
    the cluster went away. The command reports it in one line (exit code 1)."""


def require_ray() -> ModuleType:
    """The ``ray`` module, or :class:`MissingExtraError` naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError(f"--ray needs Ray: {install_hint('ray')}") from None
    return ray


@contextmanager
def ray_session(address: str) -> Iterator[None]:
    """Connect to the Ray cluster at ``address`` (module docstring) for the duration of the
    block; when this process is already connected (a test, a notebook), use that connection."""
    ray = require_ray()
    if ray.is_initialized():
        yield
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address != LOCAL:
        options["address"] = address
    try:
        ray.init(**options)
    except Exception as exc:  # ConnectionError, ValueError, RuntimeError … from ray.init
        raise InputError.at(
            "--ray", None, None, f"cannot connect to Ray at {address!r}: {one_line(str(exc))}"
        ) from None
    try:
        yield
    finally:
        ray.shutdown()


@functools.cache
def _remote(function: Callable[..., Any]) -> Any:
    return require_ray().remote(function)


def submit(function: Callable[..., Any], *args: Any, num_returns: int = 1, **options: Any) -> Any:
    """Run ``function(*args)`` as a Ray task (retried when its worker dies); the ObjectRef, or a
    list of ``num_returns`` ObjectRefs. ObjectRefs among ``args`` are passed as their values."""
    remote = _remote(function).options(num_returns=num_returns, max_retries=TASK_RETRIES, **options)
    return remote.remote(*args)


def submit_parts(function: Callable[..., Any], *args: Any, parts: int, **options: Any) -> list[Any]:
    """:func:`submit` for a task that returns ``parts`` objects (through :func:`returns`): always a
    list of ObjectRefs, also for one part."""
    refs = submit(function, *args, num_returns=parts, **options)
    return [refs] if parts == 1 else list(refs)


def returns(parts: Sequence[Any]) -> Any:
    """What a task run by :func:`submit_parts` returns for its ``parts`` objects."""
    return parts[0] if len(parts) == 1 else list(parts)


def fetch(refs: Any) -> Any:
    """``ray.get(refs)``; a task that failed after its retries becomes :class:`ClusterError`."""
    ray = require_ray()
    try:
        return ray.get(refs)
    except ray.exceptions.RayError as exc:
        raise ClusterError(f"the Ray job failed: {one_line(str(exc), 600)}") from exc


def _node_check(paths: Sequence[str], folders: Sequence[str]) -> tuple[str, str | None]:
    """On one node: its verimod version and the first path it cannot read or folder it cannot
    write (None when it sees them all)."""
    import verimod

    for path in paths:
        if not os.access(path, os.R_OK):
            return verimod.__version__, f"cannot read {path}"
    for folder in folders:
        probe = Path(folder)
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not os.access(probe, os.W_OK):
            return verimod.__version__, f"cannot write {folder}"
    return verimod.__version__, None


def check_nodes(paths: Sequence[str | Path] = (), folders: Sequence[str | Path] = ()) -> int:
    """Run :func:`_node_check` on every live node; return the number of nodes. A node with
    another verimod version, or one that cannot read ``paths`` or write under ``folders``
    (absolute paths: shared storage), is an :class:`InputError` naming it."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    import verimod

    readable = [str(Path(p).resolve()) for p in paths]
    writable = [str(Path(f).resolve()) for f in folders]
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    refs = [
        submit(
            _node_check,
            readable,
            writable,
            num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
        )
        for node in nodes
    ]
    for node, ref in zip(nodes, refs, strict=True):
        where = node.get("NodeManagerAddress", node["NodeID"])
        try:
            version, problem = ray.get(ref)
        except ray.exceptions.RayError as exc:
            message = f"node {where} cannot run verimod ({one_line(str(exc), 200)}); install verimod[ray] on every node"
            raise InputError.at("--ray", None, None, message) from None
        if version != verimod.__version__:
            message = f"node {where} has verimod {version}, this machine {verimod.__version__}; install one version"
            raise InputError.at("--ray", None, None, message)
        if problem is not None:
            message = f"node {where} {problem}: put inputs and outputs on storage every node mounts at the same path"
            raise InputError.at("--ray", None, None, message)
    return len(nodes)


def cluster_cpus() -> int:
    """The CPUs of the cluster (at least 1)."""
    return max(1, int(require_ray().cluster_resources().get("CPU", 1)))

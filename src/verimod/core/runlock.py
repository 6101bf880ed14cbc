"""An exclusive lock on a run directory: one process writes a run at a time.

The lock is an advisory ``flock`` on ``RUN/.lock``, taken by the process that creates, resumes
or re-scores the run and held until it releases it or ends: the kernel releases it when the
process dies in any way (Ctrl-C, SIGTERM, SIGKILL, a power cut), so a lock is never stale and
never has to be cleaned up by hand. The file itself stays (removing it would let two processes
lock two different files). While the lock is held, the file holds the holder's PID, host and
start time, for the one-line error a second writer gets and for ``runs list``.

The lock excludes other processes. Within the process that holds it, opening the run again
shares the lock (counted; the last :meth:`RunLock.release` frees it), so a command may reopen
a run it is writing.

POSIX systems (Linux, macOS). Where ``fcntl`` does not exist (Windows) no lock is taken.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import IO, Any

from verimod.core.errors import InputError

LOCK_FILE = ".lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def _describe(info: dict[str, Any]) -> str:
    pid = info.get("pid", "?")
    host = info.get("host")
    where = f" on {host}" if host and host != socket.gethostname() else ""
    since = f" since {info['since']}" if info.get("since") else ""
    return f"process {pid}{where}{since}"


def _read_info(handle: IO[bytes]) -> dict[str, Any]:
    handle.seek(0)
    try:
        info = json.loads(handle.read(4096) or b"{}")
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


class _Held:
    """A lock file this process holds, and how many :class:`RunLock` share it."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.count = 1


#: the lock files this process holds, by (device, inode): stable when a run folder is renamed
_held: dict[tuple[int, int], _Held] = {}


class RunLock:
    """The held lock of one run directory; :meth:`release` (or the process's end) frees it."""

    def __init__(self, path: Path, key: tuple[int, int] | None) -> None:
        self.path = path
        self._key = key

    @classmethod
    def acquire(cls, directory: str | Path, since: str = "") -> RunLock:
        """Lock ``directory`` for this process, or raise :class:`InputError` naming the holder's PID."""
        path = Path(directory) / LOCK_FILE
        if fcntl is None:  # pragma: no cover - Windows
            return cls(path, None)
        handle = open(path, "a+b")  # noqa: SIM115 - kept open while the lock is held
        stat = os.fstat(handle.fileno())
        key = (stat.st_dev, stat.st_ino)
        if key in _held:  # this process holds it already
            handle.close()
            _held[key].count += 1
            return cls(path, key)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _read_info(handle)
            handle.close()
            pid = info.get("pid", "?")
            raise InputError.at(
                str(directory),
                None,
                None,
                f"the run is in use by {_describe(info)}: wait for it to end, or stop it (kill {pid}) and resume",
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}).encode())
        handle.flush()
        _held[key] = _Held(handle)
        return cls(path, key)

    def release(self) -> None:
        """Give this share of the lock back (idempotent); the last share frees the lock."""
        key, self._key = self._key, None
        held = None if key is None else _held.get(key)
        if key is not None and held is not None:
            held.count -= 1
            if held.count == 0:
                del _held[key]
                held.handle.close()  # closing the file releases the flock

    def __del__(self) -> None:
        self.release()


def lock_holder(directory: str | Path) -> dict[str, Any] | None:
    """The ``{"pid", "host", "since"}`` of the live process holding the run's lock, or None
    when no process holds it. Reads only (works on a read-only folder)."""
    path = Path(directory) / LOCK_FILE
    if fcntl is None or not path.is_file():
        return None
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_info(handle) or {"pid": "?"}
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return None

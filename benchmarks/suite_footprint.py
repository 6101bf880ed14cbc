"""Time and memory of a command with all its child processes: the test suite's footprint.

    python benchmarks/suite_footprint.py -- python -m pytest -q

Runs the command, samples every ``--interval`` seconds the resident memory of the whole process
tree (the command and every descendant alive at that moment, summed from ``/proc/<pid>/status``
``VmRSS``), and prints wall seconds, CPU seconds of the tree (user + system of the waited-for
children, from ``resource.getrusage(RUSAGE_CHILDREN)``), the peak of the summed RSS, the load
average before and after, and the command's exit code. Linux only (reads ``/proc``). A sampled
peak can miss a spike shorter than the interval; the largest single process's own peak
(``ru_maxrss``) is printed beside it as a lower bound that cannot miss.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def children_of() -> dict[int, list[int]]:
    """Map each live pid to its direct children, from ``/proc/<pid>/stat`` (field 4: ppid)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: split after the last ')'
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def rss_kib(pid: int) -> int:
    """``VmRSS`` of one process in KiB (0 when it has gone or is a kernel thread)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def tree_rss_kib(root: int) -> int:
    """Summed ``VmRSS`` of ``root`` and all its live descendants."""
    tree, total, stack = children_of(), 0, [root]
    while stack:
        pid = stack.pop()
        total += rss_kib(pid)
        stack.extend(tree.get(pid, ()))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.5, help="Seconds between memory samples.")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="The command, after --.")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    process = subprocess.Popen(command)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_kib(process.pid))
        time.sleep(args.interval)
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    print(
        f"exit code {process.returncode}; wall {wall / 60:.1f} min; CPU {cpu / 60:.1f} min; "
        f"peak summed RSS {peak / 2**20:.2f} GiB (largest single process {usage.ru_maxrss / 2**20:.2f} GiB); "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after",
        file=sys.stderr,
    )
    return process.returncode


if __name__ == "__main__":
    raise SystemExit(main())

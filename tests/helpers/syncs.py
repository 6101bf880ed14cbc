"""Recording the fsync and replace calls of atomic writes (what durability promises)."""

import os


def record_syncs(monkeypatch):
    """Record os.fsync (of a file: its path, of a folder: 'folder') and os.replace, in order."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        target = os.readlink(f"/proc/self/fd/{fd}")
        events.append(("fsync", "folder" if os.path.isdir(target) else os.path.basename(target)))
        real_fsync(fd)

    def replace(source, target):
        events.append(("replace", os.path.basename(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events

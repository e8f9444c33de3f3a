"""File-system side effects of a case: a manifest of the work directory before and after.

The manifest is computed inside the container (type, mode, size, sha256, link target) by a
small python3 program, so nothing large crosses the engine's API.
"""

from __future__ import annotations

import json

from icae_tui.domain.results import FileChange

MANIFEST_PY = r"""
import hashlib, json, os, stat, sys
root = sys.argv[1]
out = {}
for dirpath, dirnames, filenames in os.walk(root):
    dirnames.sort()
    for name in sorted(dirnames) + sorted(filenames):
        full = os.path.join(dirpath, name)
        rel = os.path.relpath(full, root)
        st = os.lstat(full)
        entry = {"mode": stat.S_IMODE(st.st_mode)}
        if stat.S_ISLNK(st.st_mode):
            entry.update(type="link", target=os.readlink(full))
        elif stat.S_ISDIR(st.st_mode):
            entry.update(type="dir")
        elif stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            try:
                with open(full, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                entry.update(type="file", size=st.st_size, sha256=h.hexdigest())
            except OSError:
                entry.update(type="file", size=st.st_size, sha256="unreadable")
        else:
            entry.update(type="other")
        out[rel] = entry
sys.stdout.write(json.dumps(out, sort_keys=True))
"""

Manifest = dict[str, dict[str, object]]


def manifest_command(root: str) -> list[str]:
    return ["python3", "-c", MANIFEST_PY, root]


def parse_manifest(stdout: bytes) -> Manifest:
    return json.loads(stdout.decode("utf-8")) if stdout.strip() else {}


def diff_manifests(before: Manifest, after: Manifest) -> list[FileChange]:
    """Added, modified and deleted paths (a directory is modified only when its mode changes)."""
    changes: list[FileChange] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        entry = new if new is not None else old
        assert entry is not None
        kind = "added" if old is None else "deleted" if new is None else "modified"
        changes.append(
            FileChange(
                path=path,
                change=kind,
                type=str(entry.get("type", "other")),  # type: ignore[arg-type]
                sha256=str(entry.get("sha256", "")) if kind != "deleted" else "",
                size=int(entry.get("size", 0) or 0) if kind != "deleted" else 0,  # type: ignore[call-overload]
                target=str(entry.get("target", "")),
            )
        )
    return changes


def effective(changes: list[FileChange]) -> list[tuple[str, str, str, str, str]]:
    """What must be identical between sides for SP: path, change, type, content, target."""
    return sorted((c.path, c.change, c.type, c.sha256, c.target) for c in changes)

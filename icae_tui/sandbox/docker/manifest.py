"""The last resort's view of a case's side effects, where our walker cannot serve (no
static build here, an engine of another architecture): each case takes a new container, and
its changes come from the engine's `/changes` plus a manifest made by the image's `python3`.
"""

from __future__ import annotations

import json
from typing import Any

import aiodocker

from icae_tui.errors import BoxError
from icae_tui.sandbox.docker.containers import Container
from icae_tui.sandbox.docker.engine_api import container_changes
from icae_tui.sandbox.effects import Change, Entry

# The engine's `/changes` gives names that are not UTF-8 with U+FFFD in place of each bad
# byte: such a path is looked up again here by the raw names it may stand for (so two names
# that differ only there stay two), and reported by its raw name (surrogate-escaped in JSON).
_MANIFEST_PY = r"""
import hashlib, json, os, stat, sys

def raw_paths(path):
    found = [b"/"]
    for part in path.strip("/").split("/"):
        nxt = []
        for base in found:
            if "\ufffd" not in part:
                nxt.append(os.path.join(base, part.encode("utf-8", "surrogateescape")))
                continue
            try:
                names = os.listdir(base)
            except OSError:
                continue
            nxt += [os.path.join(base, n) for n in names
                    if n.decode("utf-8", "replace") == part]
        found = nxt
    return [os.fsdecode(p) for p in found] or [path]

out = {}
for asked in json.load(sys.stdin):
    for path in (raw_paths(asked) if "\ufffd" in asked else [asked]):
        try:
            st = os.lstat(path)
        except OSError:
            out[path] = ["deleted", 0, 0, "", ""]
            continue
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            out[path] = ["link", mode, 0, "", os.readlink(path)]
        elif stat.S_ISDIR(st.st_mode):
            out[path] = ["dir", mode, 0, "", ""]
        elif stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            try:
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                digest = h.hexdigest()
            except OSError:
                digest = "unreadable"
            out[path] = ["file", mode, st.st_size, digest, ""]
        else:
            out[path] = ["other", mode, 0, "", ""]
json.dump(out, sys.stdout)
"""



async def engine_changes(docker: aiodocker.Docker, container_id: str) -> dict[str, int]:
    """`GET /containers/{id}/changes`: path → kind (0 modified, 1 added, 2 deleted)."""
    data = await container_changes(docker, container_id)
    return {item["Path"]: item["Kind"] for item in data}


async def manifest_of(c: Container, paths: list[str]) -> dict[str, Entry]:
    if not paths:
        return {}
    res = await c.exec(
        ["python3", "-c", _MANIFEST_PY], stdin=json.dumps(paths).encode(), timeout_s=120
    )
    if res.exit_code != 0:
        raise BoxError(
            f"manifest failed in {c.id[:12]}: {res.stderr.decode(errors='replace')[-300:]}"
        )
    rows: dict[str, list[Any]] = json.loads(res.stdout)
    return {p: (str(v[0]), int(v[1]), int(v[2]), str(v[3]), str(v[4])) for p, v in rows.items()}


async def fallback_snapshot(docker: aiodocker.Docker, c: Container) -> dict[str, Entry]:
    """Changed paths with their manifest. A directory the engine calls modified is left
    out: that only means something inside it changed, and those paths are listed too."""
    changed = await engine_changes(docker, c.id)
    entries = await manifest_of(c, sorted(p for p, k in changed.items() if k != 2))
    for path, kind in changed.items():
        if kind == 2:
            entries[path] = ("deleted", 0, 0, "", "")
        elif kind == 0 and entries.get(path, ("",))[0] == "dir":
            del entries[path]
    return entries


def fallback_diff(before: dict[str, Entry], after: dict[str, Entry]) -> dict[str, Change]:
    """Like `layer_diff`, without a view of the image: a path first seen changed is
    `added` (or `deleted`); one seen before the case and changed since is `modified`."""
    out: dict[str, Change] = {}
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None or new[0] == "deleted":
            if old is None or old[0] != "deleted":
                out[path] = ("deleted", old or ("deleted", 0, 0, "", ""))
        elif old is None or old[0] == "deleted":
            out[path] = ("added", new)
        elif not (new[0] == old[0] == "dir" and new[1] == old[1]):
            out[path] = ("modified", new)
    return out

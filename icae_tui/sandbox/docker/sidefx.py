"""The writable layer's effective changes: what a case added, changed or deleted, told
apart from what the image already had (a copy-up that left content and mode as they were
is no change). The records a case keeps are made from this by `sandbox/effects.py`."""

from __future__ import annotations

from icae_tui.sandbox.docker.hostview import Budget, HostView
from icae_tui.sandbox.effects import Change, Entry


def _lower_entry(view: HostView, path: str, budget: Budget) -> Entry | None:
    """What the image had at `path`: looked up in its layers as overlayfs merges them,
    never through a link the image holds (see `hostview.lower_lookup`)."""
    return view.lower_entry(path, budget)


def layer_diff(
    view: HostView, before: dict[str, Entry], after: dict[str, Entry]
) -> dict[str, Change]:
    """path → (added|modified|deleted, entry after) for every effective change."""
    out: dict[str, Change] = {}
    budget = Budget()  # one hashing budget for all the image files this diff looks at
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if new is None:  # was in the layer (a fixture, an earlier write), now gone
            assert old is not None
            if old[0] != "deleted":
                out[path] = ("deleted", old)
            continue
        if new[0] == "deleted":
            if old is not None or view.in_lower(path):
                out[path] = ("deleted", new)
            continue
        base = old if old is not None and old[0] != "deleted" else None
        if base is None and old is None:
            base = _lower_entry(view, path, budget)
        if base is None:
            out[path] = ("added", new)
        elif new[0] == "dir" and base[0] == "dir":
            if new[1] != base[1]:
                out[path] = ("modified", new)
        elif new != base:
            out[path] = ("modified", new)
    return out

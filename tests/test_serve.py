"""`icae serve` builds a textual-serve server for the console: its page is served, and each
session runs this interpreter's `python -m icae_tui` with the console's options."""

from __future__ import annotations

import shlex
import sys

from aiohttp.test_utils import TestClient, TestServer

from icae_tui.ui.serve import console_command, make_server


def test_each_session_runs_the_console_with_its_options():
    argv = shlex.split(console_command(["--tasks", "/tmp/my tasks", "--pace", "0"]))
    assert argv == [sys.executable, "-m", "icae_tui", "--tasks", "/tmp/my tasks", "--pace", "0"]


async def test_the_page_is_served():
    server = make_server(["--pace", "0"], host="127.0.0.1", port=8123, public_url=None)
    app = await server._make_app()  # noqa: SLF001 - the aiohttp app it would run
    async with TestClient(TestServer(app)) as client:
        resp = await client.get("/")
        page = await resp.text()
    assert resp.status == 200
    assert "icae-tui" in page and "ws" in page

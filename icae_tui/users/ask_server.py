"""The clarification channel for agents inside containers: HTTP over a per-run Unix socket.

The socket's folder is bind-mounted into that run's agent container only (at /run/icae).
Two shapes are served, both into the same budgeted channel:
- ours: POST /v1/ask {"question"} → {"question_id", "answer", "remaining", "over_budget"};
  GET /v1/status → {"budget", "used", "remaining"};
- ICAE-EVAL's: POST (any other path) {append_id, task_id, question} →
  {"data": answer, "status": {"remaining"}}.
The run fixes the task, the level and the budget: fields that name another task or level,
or try to set a budget, are ignored. Nothing serves records, cases or code.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from aiohttp import web

from icae_tui.users.channel import ClarificationChannel

SOCKET_NAME = "ask.sock"
FOLDER_PREFIX = "icae-ask-"  # then `<owner pid>-`: the reaper removes folders of dead owners
CONTAINER_DIR = "/run/icae"
ASSET = Path(__file__).parent / "assets" / "icae-ask"


def icae_ask_script() -> bytes:
    return ASSET.read_bytes()


class AskServer:
    def __init__(self, channel: ClarificationChannel) -> None:
        self.channel = channel
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self._runner: web.AppRunner | None = None

    @property
    def socket_path(self) -> Path:
        return self.folder / SOCKET_NAME

    @property
    def bind(self) -> str:
        return f"{self.folder}:{CONTAINER_DIR}:ro"  # read-only: the agent cannot write to the host

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_post("/v1/ask", self._ask)
        app.router.add_get("/v1/status", self._status)
        app.router.add_post("/{tail:.*}", self._icae_wire)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.UnixSite(self._runner, str(self.socket_path))
        await site.start()
        os.chmod(self.socket_path, 0o666)

    async def close(self) -> None:
        try:
            if self._runner is not None:
                await self._runner.cleanup()
        finally:  # even when cancelled meanwhile: the folder must not outlive the run
            shutil.rmtree(self.folder, ignore_errors=True)

    async def _question(self, request: web.Request) -> str:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise web.HTTPBadRequest(text=json.dumps({"error": "body must be JSON"})) from None
        question = body.get("question") if isinstance(body, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise web.HTTPBadRequest(
                text=json.dumps({"error": "a non-empty 'question' is required"})
            )
        return question

    async def _ask(self, request: web.Request) -> web.Response:
        answer = await self.channel.ask(await self._question(request), via="icae-ask")
        return web.json_response(
            {"question_id": answer.question_id, "answer": answer.text,
             "remaining": answer.remaining, "over_budget": answer.over_budget}
        )  # fmt: skip

    async def _status(self, request: web.Request) -> web.Response:
        ch = self.channel
        return web.json_response({"budget": ch.budget, "used": ch.used, "remaining": ch.remaining})

    async def _icae_wire(self, request: web.Request) -> web.Response:
        answer = await self.channel.ask(await self._question(request), via="icae-wire")
        return web.json_response({"data": answer.text, "status": {"remaining": answer.remaining}})


@contextlib.asynccontextmanager
async def serving(channel: ClarificationChannel):
    server = AskServer(channel)
    try:  # a cancel during start must still remove the folder
        await server.start()
        yield server
    finally:
        await server.close()

"""The clarification channel for agents inside containers: HTTP over a per-run Unix socket.

The socket's folder is bind-mounted into that run's agent container only (at /run/icae).
Every question lands in the same budgeted channel, whatever shape it came in:
- ours: POST /v1/ask {"question"} → {"question_id", "answer", "remaining", "over_budget"};
  GET /v1/status → {"budget", "used", "remaining"};
- ICAE-EVAL's user agent (`icae_wire`), exactly as theirs: POST / is their interaction, or
  their init or stats when the request's Host port is the one below or above the wire's
  (50001 / 50003 beside 50002). Byte forwarders in the container map all three ports onto
  this one socket; they cannot rewrite paths, and the Host header passes through them.
  Other paths and methods answer as their server does.
The run fixes the task, the append_id and the budget: nothing a request says changes them.
Nothing serves records, cases or code.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from icae_tui.sandbox.base import Channel
from icae_tui.users import icae_wire
from icae_tui.users.channel import ClarificationChannel

SOCKET_NAME = "ask.sock"  # the only file in its folder: so the reaper knows the folder
FOLDER_PREFIX = "icae-ask-"  # then `<owner pid>-`: the reaper removes folders of dead owners
CONTAINER_DIR = "/run/icae"
ASSET = Path(__file__).parent / "assets" / "icae-ask"


def icae_ask_script() -> bytes:
    return ASSET.read_bytes()


def icae_wire_routes(port: int = icae_wire.QUERY_PORT) -> dict[int, str]:
    """Loopback port → socket in the container: the interaction on `port`, init just below
    it and stats just above (ICAE-EVAL's 50001/50002/50003), all onto the ask socket."""
    return {p: f"{CONTAINER_DIR}/{SOCKET_NAME}" for p in (port - 1, port, port + 1)}


def _host_port(request: web.Request) -> int | None:
    port = (request.host or "").rpartition(":")[2]
    return int(port) if port.isdigit() and len(port) <= 5 else None


def _wire_json(body: icae_wire.Reply) -> web.Response:
    # compact and unescaped, as their FastAPI server renders a reply
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return web.Response(text=text, content_type="application/json")


def _crashed() -> web.Response:  # their server's answer when a handler raises
    return web.Response(status=500, text="Internal Server Error", content_type="text/plain")


class AskServer:
    def __init__(
        self, channel: ClarificationChannel, *, task_id: str = "",
        icae_port: int = icae_wire.QUERY_PORT,
    ) -> None:  # fmt: skip
        self.channel = channel
        self.wire = icae_wire.Identity.new(task_id)  # the append_id is per run
        self.icae_port = icae_port
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self._runner: web.AppRunner | None = None

    @property
    def socket_path(self) -> Path:
        return self.folder / SOCKET_NAME

    @property
    def box_channel(self) -> Channel:
        """The socket's folder as the agent's box sees it (read-only: the agent cannot
        write to the host through it)."""
        return Channel(host_path=self.folder, box_path=CONTAINER_DIR)

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024)
        app.router.add_post("/v1/ask", self._ask)
        app.router.add_get("/v1/status", self._status)
        app.router.add_route("*", "/{tail:.*}", self._icae_root)
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

    # --- ours -----------------------------------------------------------------------------

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

    # --- ICAE-EVAL's ----------------------------------------------------------------------

    async def _icae_root(self, request: web.Request) -> web.StreamResponse:
        """POST / is theirs (which of their three apps: by port); any other path or method
        gets their framework's 404 or 405."""
        if request.path != "/":
            return web.json_response({"detail": "Not Found"}, status=404)
        if request.method != "POST":
            return web.json_response({"detail": "Method Not Allowed"}, status=405)
        port = _host_port(request)
        if port == self.icae_port - 1:
            return await self._icae_init(request)
        if port == self.icae_port + 1:
            return await self._icae_stats(request)
        return await self._icae_ask(request)

    async def _icae_ask(self, request: web.Request) -> web.Response:
        body = icae_wire.parse(await request.read())
        if body is None:
            return _crashed()
        refusal = icae_wire.ask_refusal(body, self.wire)
        if refusal is not None:  # refused before the channel: no question, no turn
            return _wire_json(refusal)
        question = body["question"]
        if not isinstance(question, str):  # their oracle's model call fails on it
            return _crashed()
        answer = await self.channel.ask(question, via="icae-wire")
        if answer.over_budget:
            return _wire_json(icae_wire.spent())
        return _wire_json(icae_wire.answered(answer.text, answer.remaining))

    async def _icae_init(self, request: web.Request) -> web.Response:
        body = icae_wire.parse(await request.read())
        if body is None:
            return _crashed()
        return _wire_json(icae_wire.init_reply(body, self.wire, self.channel.budget))

    async def _icae_stats(self, request: web.Request) -> web.Response:
        body = icae_wire.parse(await request.read())
        if body is None:
            return _crashed()
        ch = self.channel
        reply = icae_wire.stats_reply(body, self.wire, budget=ch.budget, used=ch.used,
                                      asked=ch.asked)  # fmt: skip
        return _wire_json(reply)


@contextlib.asynccontextmanager
async def serving(
    channel: ClarificationChannel, *, task_id: str = "", icae_port: int = icae_wire.QUERY_PORT
) -> AsyncIterator[AskServer]:
    server = AskServer(channel, task_id=task_id, icae_port=icae_port)
    try:  # a cancel during start must still remove the folder
        await server.start()
        yield server
    finally:
        await server.close()

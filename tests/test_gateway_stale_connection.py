"""The gateway's upstream client survives a pooled connection the server dropped while idle
(llama.cpp's server keeps one for 5 s; an agent's command often runs longer)."""

from __future__ import annotations

import asyncio
import json

from icae_tui.gateway import GatewayConfig
from icae_tui.gateway.upstream import HttpUpstream

REPLY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}).encode()


class OneRequestAConnection:
    """Answers the first request on a connection (keep-alive offered), then reads the next
    request on it and closes without a reply: what a server that timed the connection out
    looks like to a client that reuses it."""

    def __init__(self) -> None:
        self.connections = 0
        self.answered = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        for n in range(2):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))  # fmt: skip
            await reader.readexactly(length)
            if n == 1:
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Connection: keep-alive\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(REPLY), REPLY))  # fmt: skip
            await writer.drain()
            self.answered += 1
        writer.close()


async def test_a_dropped_pooled_connection_is_retried_once_on_a_fresh_one():
    server = OneRequestAConnection()
    listening = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    upstream = HttpUpstream(GatewayConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m"))
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    try:
        for _ in range(3):
            resp = await upstream.send(body, original=body)
            assert resp.status == 200
            assert json.loads(await resp.read())["choices"][0]["message"]["content"] == "hi"
            resp.release()
    finally:
        await upstream.close()
        listening.close()
        await listening.wait_closed()
    assert server.answered == 3
    assert server.connections == 3  # the 2nd and 3rd calls: the pooled one dropped, a fresh one

"""The upstream registries the package gateway reaches from the host, and how it asks them.

PyPI's simple API (PEP 691 JSON), its JSON API and its files host; the npm registry's
metadata and tarballs. Each may be a configured mirror: `ICAE_PYPI_INDEX` (a simple index
URL), `ICAE_PYPI_JSON`, `ICAE_PYPI_FILES` (where the index's files live) and
`ICAE_NPM_REGISTRY`. A file or tarball URL outside these bases is never passed on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
NPM_CORGI = "application/vnd.npm.install-v1+json"
METADATA_MAX = 64 * 1024 * 1024  # the npm documents of the largest packages are tens of MB
CHUNK = 256 * 1024
ATTEMPTS = 3  # a connection failure or a 5xx is tried again; a 4xx is an answer
USER_AGENT = "icae-tui package gateway"


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


@dataclass(frozen=True)
class Registries:
    pypi_simple: str = "https://pypi.org/simple/"
    pypi_json: str = "https://pypi.org/pypi/"
    pypi_files: str = "https://files.pythonhosted.org/"
    npm: str = "https://registry.npmjs.org/"

    @classmethod
    def from_env(cls) -> Registries:
        env = os.environ
        d = cls()
        return cls(
            pypi_simple=_slash(env.get("ICAE_PYPI_INDEX", d.pypi_simple)),
            pypi_json=_slash(env.get("ICAE_PYPI_JSON", d.pypi_json)),
            pypi_files=_slash(env.get("ICAE_PYPI_FILES", d.pypi_files)),
            npm=_slash(env.get("ICAE_NPM_REGISTRY", d.npm)),
        )


class UpstreamFailed(Exception):
    """The registry could not be reached (or kept failing): no answer to pass on."""


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class Upstream:
    """One aiohttp session for a gateway's life; TLS as the host trusts it."""

    def __init__(self, registries: Registries) -> None:
        self.registries = registries
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=None, connect=30, sock_read=120)
            self._session = aiohttp.ClientSession(
                timeout=timeout, trust_env=True, headers={"User-Agent": USER_AGENT}
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, url: str, *, accept: str = "*/*") -> Answer:
        """A metadata document, whole (bounded)."""
        last = ""
        for attempt in range(ATTEMPTS):
            try:
                async with self._client().get(url, headers={"Accept": accept}) as resp:
                    body = await _bounded(resp, METADATA_MAX)
                    if resp.status >= 500 and attempt + 1 < ATTEMPTS:
                        last = f"HTTP {resp.status}"
                        await asyncio.sleep(0.5 * (attempt + 1))
                        continue
                    return Answer(resp.status, resp.content_type, body)
            except (aiohttp.ClientError, TimeoutError) as err:
                last = f"{type(err).__name__}: {err}"
                if attempt + 1 < ATTEMPTS:
                    await asyncio.sleep(0.5 * (attempt + 1))
        raise UpstreamFailed(f"{url}: {last}")

    async def stream(self, url: str) -> tuple[Answer, AsyncIterator[bytes] | None, Any]:
        """An artifact: its answer and, when 200, its body in chunks; the caller closes the
        third value (the response) when done."""
        last = ""
        for attempt in range(ATTEMPTS):
            try:
                resp = await self._client().get(url)
            except (aiohttp.ClientError, TimeoutError) as err:
                last = f"{type(err).__name__}: {err}"
                if attempt + 1 < ATTEMPTS:
                    await asyncio.sleep(0.5 * (attempt + 1))
                continue
            if resp.status >= 500 and attempt + 1 < ATTEMPTS:
                last = f"HTTP {resp.status}"
                resp.release()
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            if resp.status != 200:
                body = await _bounded(resp, 64 * 1024)
                resp.release()
                return Answer(resp.status, resp.content_type, body), None, None
            return Answer(200, resp.content_type), resp.content.iter_chunked(CHUNK), resp
        raise UpstreamFailed(f"{url}: {last}")


async def _bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    out = bytearray()
    async for chunk in resp.content.iter_chunked(CHUNK):
        out += chunk
        if len(out) > limit:
            raise UpstreamFailed(f"{resp.url}: more than {limit} bytes of metadata")
    return bytes(out)

"""The engine calls aiodocker lacks, all in one place.

aiodocker is the engine client everywhere else. What it has no public call for is done
here and nowhere else, each with the reason next to it:

- `write_stdin_and_close`: half-close an exec's stdin while its output is still read.
  aiodocker 0.27 has no public half-close, so this is the one raw access to aiodocker's
  internals in the package (`tests/test_layering.py` lists it).
- `import_rootfs`: `docker import` of a root file system tarball (`POST /images/create`
  with `fromSrc=-`), through docker-py's public `APIClient.import_image`.
- `container_changes`: `docker diff` (`GET /containers/{id}/changes`), through docker-py's
  public `APIClient.diff`.
- `stream_archive`: a container's folder as a tar stream, read chunk by chunk (aiodocker's
  `get_archive` holds it all in memory), through docker-py's public `APIClient.get_archive`.

docker-py is synchronous: each call runs in a worker thread (`asyncio.to_thread`) with its
own `APIClient` for the engine the aiodocker client talks to (`url_of`), made when the call needs it and
closed when it ends (a requests session is not meant to be shared across threads). Its
errors come back as the ones the callers already handle: `aiodocker.DockerError` for an
engine that answered with an error, `EngineUnavailable` for one that could not be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiodocker
import aiodocker.stream
import docker as docker_py

from icae_tui.errors import EngineUnavailable
from icae_tui.sandbox.docker.engine import engine_url

T = TypeVar("T")


# --- aiodocker: the one raw access ----------------------------------------------------------


async def write_stdin_and_close(stream: aiodocker.stream.Stream, data: bytes) -> None:
    """Write `data` to an exec's stdin, then half-close it so the process sees EOF.

    `stream` must be entered (`async with stream`). aiodocker's public `close()` writes
    EOF *and* closes the response, which would lose the output still to come.
    """
    if data:
        await stream.write_in(data)
    # aiodocker 0.27 has no public half-close: the upgraded connection is reachable only
    # through `Stream._resp` (its aiohttp response); its transport's write_eof() shuts
    # our side of the socket and leaves the reading side open. Public in aiohttp.
    resp = stream._resp
    if resp is not None and resp.connection is not None:
        transport = resp.connection.transport
        if transport is not None and transport.can_write_eof():
            transport.write_eof()


# --- docker-py, in a thread -------------------------------------------------------------------


def url_of(docker: aiodocker.Docker) -> str:
    """The URL of the engine `docker` talks to (aiodocker keeps a Unix socket's path only in
    its connector), so docker-py's calls reach the same engine, whichever that is."""
    import aiohttp

    connector = docker.connector
    if isinstance(connector, aiohttp.UnixConnector):
        return f"unix://{connector.path}"
    return str(docker.docker_host)


@contextlib.contextmanager
def sync_client(api_version: str = "auto", url: str | None = None) -> Iterator[docker_py.APIClient]:
    """A docker-py low-level client for the engine at `url` (default: the one `engine_url()`
    names), closed on exit.

    `api_version` is aiodocker's (`"v1.41"` once negotiated, else `"auto"`, which makes
    docker-py ask the engine). TLS follows DOCKER_TLS_VERIFY/DOCKER_CERT_PATH as aiodocker
    does. Blocking: call it in a worker thread.
    """
    version = api_version.removeprefix("v") if api_version != "auto" else "auto"
    tls = (
        docker_py.utils.kwargs_from_env().get("tls", False)
        if os.environ.get("DOCKER_TLS_VERIFY", "0") == "1"
        else False
    )
    with _translated_errors():
        client = docker_py.APIClient(base_url=url or engine_url(), version=version, tls=tls)
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def _translated_errors() -> Iterator[None]:
    """docker-py's errors as the ones aiodocker's callers already handle."""
    try:
        yield
    except docker_py.errors.APIError as err:
        status = err.status_code if err.status_code is not None else 500
        raise aiodocker.DockerError(status, str(err.explanation or err)) from None
    except docker_py.errors.DockerException as err:  # e.g. no answer to the version probe
        raise EngineUnavailable(f"Docker engine at {engine_url()}: {err}") from None
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise  # our own file, not the engine
    except OSError as err:  # requests' connection errors and timeouts are OSErrors
        raise EngineUnavailable(
            f"Docker engine at {engine_url()} is not answering ({type(err).__name__}: {err})"
        ) from None


async def _in_thread(docker: aiodocker.Docker, call: Callable[[docker_py.APIClient], T]) -> T:
    def run() -> T:
        with sync_client(docker.api_version, url_of(docker)) as client, _translated_errors():
            return call(client)

    return await asyncio.to_thread(run)


async def import_rootfs(
    docker: aiodocker.Docker, tar_path: Path, *, repository: str, tag: str, changes: list[str]
) -> None:
    """`docker import` of the tarball at `tar_path` as `repository:tag`, with Dockerfile
    `changes` (e.g. `LABEL a=b`, `CMD ["/bin/bash"]`).

    aiodocker's `images.import_image` only loads `docker save` archives (`/images/load`).
    docker-py streams the file from disk (no whole-tarball copy in memory) with no read
    timeout: the engine answers once it has unpacked it.
    """
    path = Path(tar_path)
    if not path.is_file():  # docker-py would take a string that is no file for a URL
        raise FileNotFoundError(path)

    def call(client: docker_py.APIClient) -> str:
        return str(
            client.import_image(src=str(path), repository=repository, tag=tag, changes=changes)
        )

    answer = await _in_thread(docker, call)
    # The engine reports a failed import inside a 200 answer, as a JSON progress line.
    for line in (answer or "").splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict) and item.get("error"):
                raise aiodocker.DockerError(500, str(item["error"]))


async def container_changes(docker: aiodocker.Docker, container_id: str) -> list[dict[str, Any]]:
    """`GET /containers/{id}/changes`: items with `Path` and `Kind` (0 modified, 1 added,
    2 deleted); empty when nothing changed. aiodocker has no call for it."""
    return await _in_thread(docker, lambda client: client.diff(container_id)) or []


async def stream_archive(
    docker: aiodocker.Docker, container_id: str, path: str, feed: Callable[[bytes], bool],
    *, timeout_s: float, chunk_bytes: int = 64 * 1024,
) -> bool:  # fmt: skip
    """`GET /containers/{id}/archive?path=`, chunk by chunk into `feed` until it returns
    False or `timeout_s` has passed: a bounded read of a folder that may be huge, with no
    process in the container. aiodocker's `get_archive` holds the whole tar in memory;
    docker-py's `APIClient.get_archive` streams it. False when there is no such path."""
    deadline = time.monotonic() + timeout_s

    def call(client: docker_py.APIClient) -> bool:
        try:
            chunks, _ = client.get_archive(container_id, path, chunk_size=chunk_bytes)
        except docker_py.errors.NotFound:
            return False
        try:
            for chunk in chunks:
                if not feed(chunk) or time.monotonic() > deadline:
                    break
        finally:
            with contextlib.suppress(Exception):
                chunks.close()  # the rest of the stream is not read
        return True

    return await _in_thread(docker, call)

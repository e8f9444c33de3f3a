"""The host-side package gateway: the model gateway's twin for PyPI and npm.

One per run, on a Unix socket in a per-run folder mounted into the agent's box (read-only),
where the loopback forwarder (`icae-model-proxy --port 8788 --socket …`) makes it
`http://127.0.0.1:8788`; the box keeps network `none`. pip, uv and npm reach it through
their ordinary settings (`box_env`). Served:

- `/pypi/simple/<project>/` (PEP 691 JSON, or PEP 503 HTML for clients that want it),
  `/pypi/pypi/<project>[/<version>]/json` (PyPI's JSON API), `/pypi/files/<path>` (the files
  host: wheels, sdists and their PEP 658 `.metadata`);
- `/npm/<name>` (metadata, abbreviated or full as asked) and `/npm/<name>/-/<file>.tgz`.

Nothing else passes. File URLs in the metadata are rewritten to the gateway's own; a URL
outside the configured registries is dropped. Every artifact served is an event
(`PackageServed`) and every refusal one too (`PackageRefused`); the bytes go to the host's
content-addressed cache (`cache.py`), and the run's manifest (`packages.jsonl`) lists each
key and blob it was served, so a later run in `cache` mode gets the same bytes offline.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import html
import inspect
import json
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urljoin

from aiohttp import web

from icae_tui.domain.events import Event, PackageRefused, PackageServed
from icae_tui.domain.states import PackageMode, PackageSource
from icae_tui.domain.task import Ecosystem
from icae_tui.packages.cache import PackageCache, Ref, TooLarge
from icae_tui.packages.names import Policy, normal_name, npm_tarball_version, pypi_file_release
from icae_tui.packages.registries import (
    NPM_CORGI,
    SIMPLE_JSON,
    Registries,
    Upstream,
    UpstreamFailed,
)
from icae_tui.sandbox.base import Channel

SOCKET_NAME = "packages.sock"
FOLDER_PREFIX = "icae-pkg-"  # then `<owner pid>-`, as the other channels' folders
CONTAINER_DIR = "/run/icae-packages"
BOX_PORT = 8788
MANIFEST_FILE = "packages.jsonl"  # a run's artifact: a line per key it was served
ARTIFACT_MAX = 1024**3  # one file; a run's budget bounds the sum
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]{0,213}/)?[a-z0-9._~-][a-z0-9._~-]{0,213}$", re.I)
_FILE_PATH = re.compile(r"^[A-Za-z0-9._+~/-]{1,512}$")

Recorder = Callable[[Event], Any]  # may return an awaitable

# Ecosystems designed on paper (docs/packages.md), each refused by name until a registry
# this host reaches serves it: the box's clients are pointed here, so an agent that tries
# `go get` or `bundle install` reads why, not a name-resolution failure.
ON_PAPER = {
    "crates": "crates.io (Rust)",
    "go": "the Go module proxy",
    "gems": "RubyGems",
    "maven": "Maven Central",
    "nuget": "NuGet",
    "pub": "pub.dev (Dart)",
}


class Refusal(Exception):
    def __init__(self, status: int, reason: str, ecosystem: Ecosystem | None, name: str) -> None:
        super().__init__(reason)
        self.status, self.reason, self.ecosystem, self.name = status, reason, ecosystem, name


@dataclass(frozen=True)
class Body:
    """What answers a request: a blob of the cache, and whether the registry sent it now."""

    ref: Ref
    source: PackageSource


def box_env(port: int = BOX_PORT) -> dict[str, str]:
    """What pip, uv, npm (and yarn, pnpm) in the box need to install through the gateway."""
    base = f"http://127.0.0.1:{port}"
    return {
        "PIP_INDEX_URL": f"{base}/pypi/simple/",
        "PIP_TRUSTED_HOST": f"127.0.0.1:{port}",
        "PIP_BREAK_SYSTEM_PACKAGES": "1",  # Debian marks its python3 externally managed
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_DEFAULT_INDEX": f"{base}/pypi/simple/",
        "UV_INDEX_URL": f"{base}/pypi/simple/",
        "npm_config_registry": f"{base}/npm/",
        "npm_config_audit": "false",
        "npm_config_fund": "false",
        "npm_config_update_notifier": "false",
        # refused by name (ON_PAPER) rather than failing to resolve a host
        "GOPROXY": f"{base}/go/",
        "GOSUMDB": "off",  # the checksum database is not reachable either
        "PUB_HOSTED_URL": f"{base}/pub",
        "CARGO_REGISTRIES_CRATES_IO_PROTOCOL": "sparse",
        "CARGO_SOURCE_CRATES_IO_REPLACE_WITH": "icae",
        "CARGO_REGISTRIES_ICAE_INDEX": f"sparse+{base}/crates/",
    }


class PackageGateway:
    def __init__(
        self,
        mode: PackageMode,
        policy: Policy,
        *,
        cache: PackageCache | None = None,
        registries: Registries | None = None,
        record: Recorder | None = None,
        manifest: Path | None = None,
        pinned: dict[str, str] | None = None,
    ) -> None:
        if mode is PackageMode.OFF:
            raise ValueError("no gateway is served in mode off")
        self.mode = mode
        self.policy = policy
        self.cache = cache or PackageCache()
        self.registries = registries or Registries.from_env()
        self.upstream = Upstream(self.registries)
        self._record = record
        self._manifest = manifest
        self._pinned = dict(pinned or {})  # key → sha256: what the run being repeated got
        self._locks: dict[str, asyncio.Lock] = {}
        self.bytes_served = 0  # artifacts: what the budget counts and the events say
        self.metadata_bytes = 0  # documents: bounded by the budget too, apart
        self.served: list[PackageServed] = []
        self.refused: list[PackageRefused] = []
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def socket_path(self) -> Path:
        return self.folder / SOCKET_NAME

    @property
    def box_channel(self) -> Channel:
        return Channel(host_path=self.folder, box_path=CONTAINER_DIR)

    @property
    def box_socket(self) -> str:
        return f"{CONTAINER_DIR}/{SOCKET_NAME}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/pypi/simple/{project}/", self._pypi_simple)
        app.router.add_get("/pypi/simple/{project}", self._pypi_simple)
        app.router.add_get("/pypi/pypi/{project}/json", self._pypi_json)
        app.router.add_get("/pypi/pypi/{project}/{version}/json", self._pypi_json)
        app.router.add_get("/pypi/files/{path:.+}", self._pypi_file)
        app.router.add_get("/npm/{path:.+}", self._npm)
        for prefix in ON_PAPER:
            app.router.add_route("*", f"/{prefix}/{{path:.*}}", self._on_paper)
        app.router.add_route("*", "/{path:.*}", self._not_served)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.UnixSite(self._runner, str(self.socket_path)).start()
        os.chmod(self.socket_path, 0o666)

    async def close(self) -> None:
        try:
            try:
                if self._runner is not None:
                    await self._runner.cleanup()
            finally:
                await self.upstream.close()
        finally:  # even when cancelled meanwhile: the folder must not outlive the run
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- answering -------------------------------------------------------------------------

    async def _emit(self, ev: Event) -> None:
        if self._record is not None:
            result = self._record(ev)
            if inspect.isawaitable(result):
                await result

    def _note(self, ref: Ref, kind: str) -> None:
        if self._manifest is None:
            return
        line = {"key": ref.key, "sha256": ref.sha256, "size": ref.size, "kind": kind}
        with self._manifest.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    async def _refuse(self, request: web.Request, refusal: Refusal) -> web.Response:
        ev = PackageRefused(
            ecosystem=refusal.ecosystem, name=refusal.name, path=request.path[:500],
            status=refusal.status, reason=refusal.reason[:1000],
        )  # fmt: skip
        self.refused.append(ev)
        await self._emit(ev)
        reason = "icae package gateway: " + refusal.reason
        # npm shows a body's `error`; pip shows the reason phrase (ASCII, one line)
        phrase = reason.encode("ascii", "replace").decode()[:400].replace("\r", " ")
        return web.json_response(
            {"error": reason}, status=refusal.status, reason=phrase.replace("\n", " ")
        )

    async def _on_paper(self, request: web.Request) -> web.Response:
        prefix = request.path.split("/", 2)[1]
        why = (f"{ON_PAPER[prefix]} is not reachable from this host, so its packages are not "
               "served (PyPI and npm are); build with what the box has, or the standard library")  # fmt: skip
        return await self._refuse(request, Refusal(501, why, None, ""))

    async def _not_served(self, request: web.Request) -> web.Response:
        why = (f"{request.method} {request.path[:200]} is not a package-registry request "
               "(served: /pypi/simple/, /pypi/pypi/…/json, /pypi/files/, /npm/)")  # fmt: skip
        return await self._refuse(request, Refusal(404, why, None, ""))

    def _lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def _cached(self, key: str) -> Ref | None:
        ref = self.cache.ref(key)
        sha = self._pinned.get(key)
        if sha is None or (ref is not None and ref.sha256 == sha):
            return ref
        path = self.cache.blob_path(sha)
        if not path.is_file():
            return None
        # the pinned body, though a later fetch moved the ref on (its origin is the ref's)
        origin = ref.origin if ref is not None else ""
        return Ref(key, sha, path.stat().st_size, origin=origin)

    def _missing(self, key: str, eco: Ecosystem, name: str) -> Refusal:
        return Refusal(404, f"{key} is not in the package cache (mode cache: no registry is "
                       "asked; run once with --packages live to fetch it)", eco, name)  # fmt: skip

    async def _metadata(
        self, key: str, url: str, accept: str, eco: Ecosystem, name: str, origin: str = ""
    ) -> Body:
        """A metadata document: the registry's now (kept), else the cache's."""
        budget = self.policy.budget_bytes
        if budget is not None and self.metadata_bytes >= budget:
            raise Refusal(403, f"the run read {_mib(self.metadata_bytes)} of package documents, "
                          f"its budget of {_mib(budget)}; {key} refused", eco, name)  # fmt: skip
        body = await self._document(key, url, accept, eco, name, origin)
        self.metadata_bytes += body.ref.size
        return body

    async def _document(
        self, key: str, url: str, accept: str, eco: Ecosystem, name: str, origin: str
    ) -> Body:
        async with self._lock(key):
            if self.mode is PackageMode.CACHE:
                ref = self._cached(key)
                if ref is None:
                    raise self._missing(key, eco, name)
                self._note(ref, "metadata")
                return Body(ref, PackageSource.CACHE)
            try:
                answer = await self.upstream.get(url, accept=accept)
            except UpstreamFailed as err:
                ref = self.cache.ref(key)
                if ref is None:
                    raise Refusal(502, f"the registry is unreachable and {key} is not in "
                                  f"the cache: {err}", eco, name) from None  # fmt: skip
                self._note(ref, "metadata")
                return Body(ref, PackageSource.CACHE)
            if answer.status == 404:
                raise Refusal(404, f"{eco}:{name} does not exist on the registry", eco, name)
            if answer.status != 200:
                raise Refusal(502, f"the registry answered {answer.status} for {key}", eco, name)
            ref = self.cache.put_bytes(key, answer.body, answer.content_type, origin)
            self._note(ref, "metadata")
            return Body(ref, PackageSource.UPSTREAM)

    async def _artifact(
        self, key: str, url: str, eco: Ecosystem, name: str, version: str, filename: str
    ) -> Body:
        """A file: checked against the task's policy and the run's budget, from the cache
        when it is there (artifacts never change upstream), else fetched and kept."""
        verdict = self.policy.judge(eco, name)
        if not verdict.allowed:
            raise Refusal(403, verdict.reason, eco, name)
        budget = self.policy.budget_bytes
        if budget is not None and self.bytes_served >= budget:
            raise Refusal(403, f"the run's package budget of {_mib(budget)} is spent "
                          f"({_mib(self.bytes_served)} served); {filename} refused", eco, name)  # fmt: skip
        async with self._lock(key):
            ref = self._cached(key)
            source = PackageSource.CACHE
            if ref is None and self.mode is PackageMode.CACHE:
                raise self._missing(key, eco, name)
            if ref is None:
                ref = await self._fetch(key, url, eco, name)
                source = PackageSource.UPSTREAM
        if budget is not None and self.bytes_served + ref.size > budget:
            raise Refusal(403, f"{filename} ({_mib(ref.size)}) would pass the run's package "
                          f"budget of {_mib(budget)} ({_mib(self.bytes_served)} served)", eco,
                          name)  # fmt: skip
        self.bytes_served += ref.size
        self._note(ref, "artifact")
        ev = PackageServed(
            ecosystem=eco, name=name, version=version, filename=filename, size=ref.size,
            sha256=ref.sha256, source=source, total_bytes=self.bytes_served,
        )  # fmt: skip
        self.served.append(ev)
        await self._emit(ev)
        return Body(ref, source)

    async def _fetch(self, key: str, url: str, eco: Ecosystem, name: str) -> Ref:
        try:
            answer, chunks, resp = await self.upstream.stream(url)
        except UpstreamFailed as err:
            raise Refusal(502, f"the registry is unreachable: {err}", eco, name) from None
        if chunks is None:
            status = 404 if answer.status == 404 else 502
            raise Refusal(status, f"the registry answered {answer.status} for {url}", eco, name)
        try:
            return await self.cache.put_stream(
                key, chunks, answer.content_type, max_bytes=ARTIFACT_MAX
            )
        except TooLarge as err:
            raise Refusal(403, f"{url}: {err}", eco, name) from None
        except (OSError, UpstreamFailed) as err:
            raise Refusal(502, f"{url}: {err}", eco, name) from None
        finally:
            resp.release()

    def _file(self, body: Body) -> web.StreamResponse:
        path = self.cache.blob_path(body.ref.sha256)
        headers = {"Content-Type": body.ref.content_type or "application/octet-stream",
                   "X-Icae-Source": body.source.value}  # fmt: skip
        return web.FileResponse(path, headers=headers)

    # -- PyPI ------------------------------------------------------------------------------

    def _pypi_file_path(self, url: str, origin: str) -> str | None:
        """The gateway's path for a file URL of the files host the document was fetched
        with, or None (not passed on)."""
        base = origin or self.registries.pypi_files
        if not url.startswith(base):
            return None
        return "/pypi/files/" + url[len(base) :]

    async def _pypi_simple(self, request: web.Request) -> web.StreamResponse:
        project = request.match_info["project"]
        try:
            if not _NAME.match(project):
                raise Refusal(400, f"not a project name: {project[:100]!r}", Ecosystem.PYPI, "")
            name = normal_name(Ecosystem.PYPI, project)
            page = urljoin(self.registries.pypi_simple, f"{name}/")
            body = await self._metadata(f"pypi:simple:{name}", page, SIMPLE_JSON,
                                        Ecosystem.PYPI, name, self.registries.pypi_files)  # fmt: skip
            doc = _json_object(self.cache.blob_path(body.ref.sha256))
        except Refusal as refusal:
            return await self._refuse(request, refusal)
        except ValueError:
            why = f"the registry's index page of {project} is not PEP 691 JSON"
            return await self._refuse(request, Refusal(502, why, Ecosystem.PYPI, project))
        files = []
        for f in doc.get("files", []):
            if not isinstance(f, dict) or not isinstance(f.get("url"), str):
                continue
            ours = self._pypi_file_path(urljoin(page, f["url"]), body.ref.origin)
            if ours is not None:
                files.append({**f, "url": ours})
        doc["files"] = files
        if SIMPLE_JSON in request.headers.get("Accept", ""):
            return web.Response(body=json.dumps(doc).encode(), content_type=SIMPLE_JSON)
        return web.Response(text=_simple_html(name, files), content_type="text/html")

    async def _pypi_json(self, request: web.Request) -> web.StreamResponse:
        project, version = request.match_info["project"], request.match_info.get("version")
        try:
            if not _NAME.match(project) or (version is not None and not _NAME.match(version)):
                raise Refusal(400, f"not a project or version: {request.path[:100]!r}",
                              Ecosystem.PYPI, "")  # fmt: skip
            name = normal_name(Ecosystem.PYPI, project)
            tail = f"{name}/{version}/json" if version else f"{name}/json"
            url = urljoin(self.registries.pypi_json, tail)
            body = await self._metadata(f"pypi:json:{tail}", url, "application/json",
                                        Ecosystem.PYPI, name, self.registries.pypi_files)  # fmt: skip
            doc = _json_object(self.cache.blob_path(body.ref.sha256))
        except Refusal as refusal:
            return await self._refuse(request, refusal)
        except ValueError:
            why = f"the registry's JSON of {project} does not parse"
            return await self._refuse(request, Refusal(502, why, Ecosystem.PYPI, project))
        origin = f"http://{request.host}"
        for entry in _json_files(doc):
            ours = self._pypi_file_path(str(entry.get("url", "")), body.ref.origin)
            entry["url"] = origin + ours if ours else ""
        return web.json_response(doc)

    async def _pypi_file(self, request: web.Request) -> web.StreamResponse:
        tail = request.match_info["path"]
        filename = tail.rsplit("/", 1)[-1]
        metadata = filename.endswith(".metadata")  # PEP 658: a wheel's METADATA alone
        release = pypi_file_release(filename.removesuffix(".metadata"))
        name, version = release if release else ("", "")
        try:
            if not _FILE_PATH.match(tail) or ".." in tail.split("/") or release is None:
                raise Refusal(400, f"not a PyPI file: {tail[:200]!r}", Ecosystem.PYPI, "")
            url = self.registries.pypi_files + tail
            key = f"pypi:file:{tail}"
            if metadata:
                body = await self._metadata(key, url, "*/*", Ecosystem.PYPI, name)
            else:
                body = await self._artifact(key, url, Ecosystem.PYPI, name, version, filename)
        except Refusal as refusal:
            return await self._refuse(request, refusal)
        return self._file(body)

    # -- npm -------------------------------------------------------------------------------

    async def _npm(self, request: web.Request) -> web.StreamResponse:
        raw = request.rel_url.raw_path[len("/npm/") :]
        if "/-/" in raw and raw.endswith(".tgz"):
            return await self._npm_tarball(request, raw)
        name = unquote(raw).rstrip("/")
        try:
            if not _NPM_NAME.match(name):
                raise Refusal(404, f"not an npm package request: /npm/{raw[:200]}",
                              Ecosystem.NPM, "")  # fmt: skip
            verdict = self.policy.judge(Ecosystem.NPM, name)
            if not verdict.allowed:
                raise Refusal(403, verdict.reason, Ecosystem.NPM, name)
            corgi = NPM_CORGI in request.headers.get("Accept", "")
            accept = f"{NPM_CORGI}; q=1.0, application/json; q=0.8" if corgi else "application/json"
            url = self.registries.npm + quote(name, safe="@")
            key = f"npm:meta:{name}:{'corgi' if corgi else 'full'}"
            body = await self._metadata(key, url, accept, Ecosystem.NPM, name, self.registries.npm)
            ours, base = f"http://{request.host}/npm/", body.ref.origin or self.registries.npm
            # off the loop: typescript's document is 10 MB, and a run asks for it again
            served = await asyncio.to_thread(
                _npm_document, str(self.cache.blob_path(body.ref.sha256)), body.ref.sha256,
                ours, base,
            )  # fmt: skip
        except Refusal as refusal:
            return await self._refuse(request, refusal)
        except ValueError:
            why = f"the registry's document of {name} does not parse"
            return await self._refuse(request, Refusal(502, why, Ecosystem.NPM, name))
        content_type = NPM_CORGI if corgi else "application/json"
        return web.Response(body=served, content_type=content_type)

    async def _npm_tarball(self, request: web.Request, raw: str) -> web.StreamResponse:
        package, _, filename = unquote(raw).partition("/-/")
        version = npm_tarball_version(package, filename)
        try:
            if (not _NPM_NAME.match(package) or version is None or "/" in filename
                    or not _FILE_PATH.match(filename)):  # fmt: skip
                raise Refusal(400, f"not an npm tarball: /npm/{raw[:200]}", Ecosystem.NPM, "")
            url = self.registries.npm + f"{package}/-/{filename}"
            body = await self._artifact(f"npm:tarball:{package}/-/{filename}", url,
                                        Ecosystem.NPM, package, version, filename)  # fmt: skip
        except Refusal as refusal:
            return await self._refuse(request, refusal)
        return self._file(body)


def _json_object(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_bytes())
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


@functools.lru_cache(maxsize=16)
def _npm_document(path: str, sha256: str, ours: str, base: str) -> bytes:
    """An npm document with its tarball URLs made the gateway's (`sha256` names the blob at
    `path`: the same blob and origins give the same bytes, kept for the next ask)."""
    doc = _json_object(Path(path))
    if not isinstance(doc.get("versions") or {}, dict):
        raise ValueError("not an npm document")
    for version in (doc.get("versions") or {}).values():
        dist = version.get("dist") if isinstance(version, dict) else None
        if isinstance(dist, dict) and isinstance(dist.get("tarball"), str):
            url = dist["tarball"]
            dist["tarball"] = ours + url[len(base) :] if url.startswith(base) else ""
    return json.dumps(doc).encode()


def _json_files(doc: dict[str, Any]) -> list[dict[str, Any]]:
    entries = [e for e in doc.get("urls") or [] if isinstance(e, dict)]
    for files in (doc.get("releases") or {}).values():
        entries += [e for e in files or [] if isinstance(e, dict)]
    return entries


def _simple_html(name: str, files: list[dict[str, Any]]) -> str:
    """PEP 503's page for clients that do not ask for JSON."""
    rows = []
    for f in files:
        href = f["url"]
        sha = (f.get("hashes") or {}).get("sha256")
        if sha:
            href += f"#sha256={sha}"
        attrs = f' href="{html.escape(href)}"'
        if f.get("requires-python"):
            attrs += f' data-requires-python="{html.escape(str(f["requires-python"]))}"'
        if f.get("yanked"):
            reason = f["yanked"] if isinstance(f["yanked"], str) else ""
            attrs += f' data-yanked="{html.escape(reason)}"'
        rows.append(f"<a{attrs}>{html.escape(str(f.get('filename', '')))}</a><br/>")
    body = "\n".join(rows)
    return f"<!DOCTYPE html>\n<html><head><title>{html.escape(name)}</title></head><body>\n{body}\n</body></html>\n"


def _mib(n: int) -> str:
    return f"{n / 1024**2:.1f} MiB"


def load_manifest(path: Path) -> dict[str, str]:
    """A run's manifest as key → sha256 (the last line of a key wins); {} when it has none."""
    pinned: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                entry = json.loads(line)
                pinned[str(entry["key"])] = str(entry["sha256"])
    return pinned


@contextlib.asynccontextmanager
async def serving(
    mode: PackageMode, policy: Policy, **kwargs: Any
) -> AsyncIterator[PackageGateway]:
    gateway = PackageGateway(mode, policy, **kwargs)
    try:
        await gateway.start()
        yield gateway
    finally:
        await gateway.close()

"""The package gateway against a registry of our own on loopback (PyPI's simple and JSON APIs
and files host, npm's documents and tarballs): what passes, what is refused and how, what
the cache keeps, and that cache mode asks no registry. No engine; no outside network."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from icae_tui.domain.events import Event, PackageRefused, PackageServed
from icae_tui.domain.states import PackageMode, PackageSource
from icae_tui.domain.task import Ecosystem, PackagesSpec
from icae_tui.packages import PackageCache, Policy, Registries, load_manifest, serving
from icae_tui.packages.names import normal_name, npm_tarball_version, pypi_file_release
from icae_tui.packages.registries import NPM_CORGI, SIMPLE_JSON

WHEEL = b"PK\x03\x04 a wheel's bytes" * 40
SDIST = b"\x1f\x8b an sdist" * 10
TGZ = b"\x1f\x8b a tarball" * 30
SCOPED_TGZ = b"\x1f\x8b a scoped tarball" * 7


class FakeRegistry:
    """PyPI and npm as their APIs answer, on 127.0.0.1; counts every request it gets."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.version = "1.0"
        self.base = ""
        self._runner: web.AppRunner | None = None

    def registries(self) -> Registries:
        return Registries(pypi_simple=f"{self.base}/simple/", pypi_json=f"{self.base}/pypi/",
                          pypi_files=f"{self.base}/files/", npm=f"{self.base}/npm/")  # fmt: skip

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/simple/{name}/", self._simple)
        app.router.add_get("/pypi/{name}/json", self._json)
        app.router.add_get("/files/{path:.+}", self._file)
        app.router.add_get("/npm/{path:.+}", self._npm)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _files(self) -> list[dict[str, Any]]:
        v = self.version
        return [
            {"filename": f"demo_pkg-{v}-py3-none-any.whl",
             "url": f"{self.base}/files/packages/aa/bb/demo_pkg-{v}-py3-none-any.whl",
             "hashes": {"sha256": hashlib.sha256(WHEEL).hexdigest()},
             "requires-python": ">=3.8"},
            {"filename": f"demo-pkg-{v}.tar.gz", "url": f"../../files/packages/cc/demo-pkg-{v}.tar.gz",
             "hashes": {"sha256": hashlib.sha256(SDIST).hexdigest()}, "yanked": "broken"},
            {"filename": "evil-1.0.whl", "url": "https://elsewhere.example/evil-1.0.whl",
             "hashes": {}},
        ]  # fmt: skip

    async def _simple(self, request: web.Request) -> web.Response:
        self.hits["simple"] += 1
        name = request.match_info["name"]
        if name not in ("demo-pkg", "blocked"):
            return web.Response(status=404)
        doc = {"meta": {"api-version": "1.1"}, "name": name, "files": self._files()}
        return web.Response(body=json.dumps(doc).encode(), content_type=SIMPLE_JSON)

    async def _json(self, request: web.Request) -> web.Response:
        self.hits["json"] += 1
        files = self._files()
        return web.json_response({"info": {"name": "demo-pkg"}, "urls": files[:1],
                                  "releases": {self.version: files[:2]}})  # fmt: skip

    async def _file(self, request: web.Request) -> web.Response:
        self.hits["file"] += 1
        path = request.match_info["path"]
        body = WHEEL if path.endswith(".whl") else SDIST if path.endswith(".tar.gz") else None
        return web.Response(status=404) if body is None else web.Response(body=body)

    async def _npm(self, request: web.Request) -> web.Response:
        raw = request.rel_url.raw_path[len("/npm/") :]
        if "/-/" in raw:
            self.hits["tarball"] += 1
            return web.Response(body=SCOPED_TGZ if raw.startswith("@") else TGZ)
        self.hits["npm"] += 1
        self.hits["accept:" + request.headers.get("Accept", "")] += 1
        name = raw.replace("%2f", "/").replace("%2F", "/")
        if name not in ("left-pad", "@scope/thing"):
            return web.json_response({"error": "Not found"}, status=404)
        file = f"{name.rsplit('/', 1)[-1]}-2.0.0.tgz"
        doc = {"name": name, "versions": {"2.0.0": {"dist": {
            "tarball": f"{self.base}/npm/{name}/-/{file}", "integrity": "sha512-x"}}}}
        return web.json_response(doc)


@pytest.fixture
async def registry() -> AsyncIterator[FakeRegistry]:
    fake = FakeRegistry()
    await fake.start()
    yield fake
    await fake.close()


class Client:
    """The box's side: HTTP over the gateway's socket, as the forwarder carries it."""

    def __init__(self, socket_path: Path) -> None:
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(socket_path)))

    async def get(self, path: str, accept: str = "*/*") -> tuple[int, str, bytes, dict[str, str]]:
        async with self.session.get(f"http://127.0.0.1:8788{path}",
                                    headers={"Accept": accept}) as resp:  # fmt: skip
            return resp.status, resp.reason or "", await resp.read(), dict(resp.headers)

    async def close(self) -> None:
        await self.session.close()


def _policy(**fields: Any) -> Policy:
    return Policy.of(PackagesSpec(**fields), "demo")


async def _gateway(mode, registry, cache, events, policy=None, **kwargs):
    return serving(mode, policy or _policy(), cache=cache, registries=registry.registries(),
                   record=events.append, **kwargs)  # fmt: skip


@pytest.fixture
def cache(tmp_path: Path) -> PackageCache:
    return PackageCache(tmp_path / "cache")


async def test_pip_index_is_rewritten_and_files_are_served_and_kept(registry, cache, tmp_path):
    events: list[Event] = []
    manifest = tmp_path / "packages.jsonl"
    async with await _gateway(PackageMode.LIVE, registry, cache, events, manifest=manifest) as gw:
        client = Client(gw.socket_path)
        try:
            status, _, body, headers = await client.get("/pypi/simple/Demo_Pkg/", SIMPLE_JSON)
            assert status == 200 and headers["Content-Type"].startswith(SIMPLE_JSON)
            doc = json.loads(body)
            # its own paths; a file outside the registry's files host is never offered
            assert [f["url"] for f in doc["files"]] == [
                "/pypi/files/packages/aa/bb/demo_pkg-1.0-py3-none-any.whl",
                "/pypi/files/packages/cc/demo-pkg-1.0.tar.gz"]
            status, _, page, _ = await client.get("/pypi/simple/demo-pkg/", "text/html")
            html = page.decode()
            assert status == 200 and "#sha256=" + hashlib.sha256(WHEEL).hexdigest() in html
            assert 'data-requires-python="&gt;=3.8"' in html and 'data-yanked="broken"' in html
            assert "evil" not in html
            status, _, got, headers = await client.get(doc["files"][0]["url"])
            assert status == 200 and got == WHEEL and headers["X-Icae-Source"] == "upstream"
            status, _, got, headers = await client.get(doc["files"][0]["url"])
            assert got == WHEEL and headers["X-Icae-Source"] == "cache"
            _, _, js, _ = await client.get("/pypi/pypi/demo-pkg/json")
            urls = [f["url"] for f in json.loads(js)["urls"]]
            assert urls == ["http://127.0.0.1:8788/pypi/files/packages/aa/bb/demo_pkg-1.0-py3-none-any.whl"]
        finally:
            await client.close()
    assert registry.hits["file"] == 1  # the second was the cache's
    served = [e for e in events if isinstance(e, PackageServed)]
    sha = hashlib.sha256(WHEEL).hexdigest()
    assert [(e.ecosystem, e.name, e.version, e.size, e.sha256, e.source) for e in served] == [
        (Ecosystem.PYPI, "demo_pkg", "1.0", len(WHEEL), sha, PackageSource.UPSTREAM),
        (Ecosystem.PYPI, "demo_pkg", "1.0", len(WHEEL), sha, PackageSource.CACHE)]
    assert served[-1].total_bytes == 2 * len(WHEEL)
    assert cache.blob_path(sha).read_bytes() == WHEEL
    assert load_manifest(manifest)["pypi:file:packages/aa/bb/demo_pkg-1.0-py3-none-any.whl"] == sha
    assert not gw.folder.exists()  # the socket's folder goes with the gateway


async def test_npm_documents_and_tarballs_scoped_too(registry, cache):
    events: list[Event] = []
    async with await _gateway(PackageMode.LIVE, registry, cache, events) as gw:
        client = Client(gw.socket_path)
        try:
            status, _, body, headers = await client.get("/npm/left-pad", NPM_CORGI)
            assert status == 200 and headers["Content-Type"].startswith(NPM_CORGI)
            tarball = json.loads(body)["versions"]["2.0.0"]["dist"]["tarball"]
            assert tarball == "http://127.0.0.1:8788/npm/left-pad/-/left-pad-2.0.0.tgz"
            assert registry.hits[f"accept:{NPM_CORGI}; q=1.0, application/json; q=0.8"] == 1
            status, _, got, _ = await client.get("/npm/left-pad/-/left-pad-2.0.0.tgz")
            assert status == 200 and got == TGZ
            status, _, body, _ = await client.get("/npm/@scope%2fthing")
            tarball = json.loads(body)["versions"]["2.0.0"]["dist"]["tarball"]
            assert tarball == "http://127.0.0.1:8788/npm/@scope/thing/-/thing-2.0.0.tgz"
            status, _, got, _ = await client.get("/npm/@scope/thing/-/thing-2.0.0.tgz")
            assert status == 200 and got == SCOPED_TGZ
            status, _, body, _ = await client.get("/npm/no-such-thing")
            assert status == 404 and "does not exist" in json.loads(body)["error"]
        finally:
            await client.close()
    served = [(e.ecosystem, e.name, e.version, e.filename) for e in events
              if isinstance(e, PackageServed)]  # fmt: skip
    assert served == [(Ecosystem.NPM, "left-pad", "2.0.0", "left-pad-2.0.0.tgz"),
                      (Ecosystem.NPM, "@scope/thing", "2.0.0", "thing-2.0.0.tgz")]  # fmt: skip


async def test_names_the_task_does_not_allow_are_refused_with_a_message(registry, cache):
    events: list[Event] = []
    policy = _policy(allow=["pypi:demo-*", "npm:@scope/*"], deny=["pypi:blocked", "npm:left-pad"])
    async with await _gateway(PackageMode.LIVE, registry, cache, events, policy) as gw:
        client = Client(gw.socket_path)
        try:
            # npm: refused at the document; npm prints the body's `error`
            status, _, body, _ = await client.get("/npm/left-pad")
            assert status == 403
            assert "npm:left-pad is denied by task demo's [packages] deny list" in json.loads(body)["error"]
            # pip: the index is read, the file refused; pip prints the reason phrase
            status, _, _, _ = await client.get("/pypi/simple/blocked/", SIMPLE_JSON)
            assert status == 200
            status, reason, _, _ = await client.get("/pypi/files/packages/aa/blocked-1.0-py3-none-any.whl")
            assert status == 403 and "pypi:blocked is denied" in reason
            status, reason, _, _ = await client.get("/pypi/files/packages/aa/other-1.0-py3-none-any.whl")
            assert status == 403 and "pypi:other is not in task demo's [packages] allow list" in reason
            status, _, _, _ = await client.get("/pypi/files/packages/aa/bb/demo_pkg-1.0-py3-none-any.whl")
            assert status == 200
            status, _, _, _ = await client.get("/npm/@scope/thing/-/thing-2.0.0.tgz")
            assert status == 200
        finally:
            await client.close()
    refused = [(e.ecosystem, e.name, e.status) for e in events if isinstance(e, PackageRefused)]
    assert refused == [(Ecosystem.NPM, "left-pad", 403), (Ecosystem.PYPI, "blocked", 403),
                       (Ecosystem.PYPI, "other", 403)]  # fmt: skip
    assert registry.hits["file"] == 1  # nothing refused was fetched


async def test_the_run_budget_bounds_what_is_served(registry, cache):
    events: list[Event] = []
    policy = Policy((), (), len(WHEEL) + 10, "demo")
    async with await _gateway(PackageMode.LIVE, registry, cache, events, policy) as gw:
        client = Client(gw.socket_path)
        try:
            status, _, _, _ = await client.get("/pypi/files/packages/aa/bb/demo_pkg-1.0-py3-none-any.whl")
            assert status == 200
            status, reason, _, _ = await client.get("/npm/left-pad/-/left-pad-2.0.0.tgz")
            assert status == 403 and "would pass the run's package budget" in reason
            assert gw.bytes_served == len(WHEEL)
            # documents count apart, against the same budget
            status, _, _, _ = await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
            assert status == 200 and gw.metadata_bytes > 0
            gw.metadata_bytes = len(WHEEL) + 10
            status, reason, _, _ = await client.get("/npm/left-pad")
            assert status == 403 and "package documents" in reason
        finally:
            await client.close()


async def test_cache_mode_asks_no_registry_and_names_what_is_missing(registry, cache, tmp_path):
    first: list[Event] = []
    paths = ["/pypi/files/packages/aa/bb/demo_pkg-1.0-py3-none-any.whl", "/npm/left-pad/-/left-pad-2.0.0.tgz"]
    async with await _gateway(PackageMode.LIVE, registry, cache, first) as gw:
        client = Client(gw.socket_path)
        try:
            await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
            await client.get("/npm/left-pad", NPM_CORGI)
            live = [await client.get(p) for p in paths]
        finally:
            await client.close()
    hits = sum(registry.hits.values())
    again: list[Event] = []
    async with await _gateway(PackageMode.CACHE, registry, cache, again) as gw:
        client = Client(gw.socket_path)
        try:
            status, _, body, _ = await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
            assert status == 200 and len(json.loads(body)["files"]) == 2
            status, _, body, _ = await client.get("/npm/left-pad", NPM_CORGI)
            assert status == 200
            offline = [await client.get(p) for p in paths]
            status, reason, body, _ = await client.get("/npm/@scope/thing/-/thing-2.0.0.tgz")
            assert status == 404
            assert "npm:tarball:@scope/thing/-/thing-2.0.0.tgz is not in the package cache" in reason
            status, _, body, _ = await client.get("/npm/left-pad")  # the full document: not kept
            assert status == 404 and "npm:meta:left-pad:full" in json.loads(body)["error"]
        finally:
            await client.close()
    assert sum(registry.hits.values()) == hits  # not one request upstream
    assert [o[2] for o in offline] == [o[2] for o in live]
    assert {e.source for e in again if isinstance(e, PackageServed)} == {PackageSource.CACHE}


async def test_a_repeat_in_cache_mode_gets_what_its_run_got_though_the_registry_moved(
    registry, cache, tmp_path
):
    manifest = tmp_path / "a.jsonl"
    async with await _gateway(PackageMode.LIVE, registry, cache, [], manifest=manifest) as gw:
        client = Client(gw.socket_path)
        try:
            _, _, first, _ = await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
        finally:
            await client.close()
    registry.version = "2.0"  # a release later: a live fetch moves the cache's ref on
    async with await _gateway(PackageMode.LIVE, registry, cache, []) as gw:
        client = Client(gw.socket_path)
        try:
            _, _, later, _ = await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
        finally:
            await client.close()
    assert first != later
    pinned = load_manifest(manifest)
    for pin, expected in ((pinned, first), ({}, later)):
        async with await _gateway(PackageMode.CACHE, registry, cache, [], pinned=pin) as gw:
            client = Client(gw.socket_path)
            try:
                _, _, got, _ = await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
            finally:
                await client.close()
        assert got == expected


async def test_only_registry_requests_pass(registry, cache):
    events: list[Event] = []
    async with await _gateway(PackageMode.LIVE, registry, cache, events) as gw:
        client = Client(gw.socket_path)
        try:
            for path in ("/", "/etc/passwd", "/pypi/simple/", "/v1/chat/completions",
                         "/pypi/files/packages/../../etc/passwd.whl",
                         "/pypi/files/not-a-package-file", "/npm/-/v1/search?text=x"):  # fmt: skip
                status, _, body, _ = await client.get(path)
                assert status in (400, 404), path
                assert "icae package gateway" in json.loads(body)["error"]
        finally:
            await client.close()
    assert sum(registry.hits.values()) == 0


async def test_ecosystems_on_paper_are_refused_by_name(registry, cache):
    events: list[Event] = []
    async with await _gateway(PackageMode.LIVE, registry, cache, events) as gw:
        client = Client(gw.socket_path)
        try:
            status, reason, body, _ = await client.get("/go/github.com/x/y/@v/list")
            assert status == 501 and "the Go module proxy is not reachable from this host" in reason
            status, _, body, _ = await client.get("/crates/config.json")
            assert status == 501 and "crates.io (Rust)" in json.loads(body)["error"]
        finally:
            await client.close()
    assert [e.status for e in events if isinstance(e, PackageRefused)] == [501, 501]


async def test_an_unreachable_registry_falls_back_to_the_cache_or_says_so(registry, cache):
    async with await _gateway(PackageMode.LIVE, registry, cache, []) as gw:
        client = Client(gw.socket_path)
        try:
            await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
        finally:
            await client.close()
    await registry.close()
    events: list[Event] = []
    async with await _gateway(PackageMode.LIVE, registry, cache, events) as gw:
        client = Client(gw.socket_path)
        try:
            status, _, body, headers = await client.get("/pypi/simple/demo-pkg/", SIMPLE_JSON)
            assert status == 200 and len(json.loads(body)["files"]) == 2
            status, reason, _, _ = await client.get("/npm/left-pad")
            assert status == 502 and "registry is unreachable" in reason
        finally:
            await client.close()


def test_names_files_and_patterns():
    assert normal_name(Ecosystem.PYPI, "Py_YAML.x") == "py-yaml-x"
    assert normal_name(Ecosystem.NPM, "@Types/Node") == "@types/node"
    assert pypi_file_release("PyYAML-6.0.1-cp311-cp311-manylinux_2_17_x86_64.whl") == ("PyYAML", "6.0.1")
    assert pypi_file_release("python-dateutil-2.9.0.post0.tar.gz") == ("python-dateutil", "2.9.0.post0")
    assert pypi_file_release("README.txt") is None
    assert npm_tarball_version("@types/node", "node-20.1.0.tgz") == "20.1.0"
    assert npm_tarball_version("minimist", "other-1.0.0.tgz") is None
    policy = _policy(allow=["pypi:types-*", "six", "npm:@types/*"], deny=["types-evil"])
    assert policy.judge(Ecosystem.PYPI, "Types_Requests").allowed
    assert policy.judge(Ecosystem.NPM, "six").allowed  # a bare name is either ecosystem's
    assert not policy.judge(Ecosystem.NPM, "types-node").allowed  # pypi: only
    assert policy.judge(Ecosystem.NPM, "@types/node").allowed
    assert "deny list" in policy.judge(Ecosystem.PYPI, "types.evil").reason
    assert Policy.of(PackagesSpec(), "t").judge(Ecosystem.NPM, "anything").allowed
    with pytest.raises(ValueError, match="not a package name"):
        PackagesSpec(allow=["six; rm -rf /"])

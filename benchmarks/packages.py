"""Installs through the package gateway, cold and cached, beside the same install on the host.

    python benchmarks/packages.py [--repeats 3] [--cpus 1] [--memory-mb 512]

One realistic dependency set (`PYPI`: 22 pinned wheels resolved together by pip; `NPM`: a
TypeScript toolchain, pinned) is installed three ways, each `--repeats` times, interleaved
(direct, cold, cached; direct, cold, cached; …):
  direct  — on the host, straight from the registries: `pip install --target` with
            PIP_INDEX_URL=https://pypi.org/simple/, PIP_CONFIG_FILE=/dev/null and no find-links
            (this machine's pip config points at local wheel folders), and
            `npm install --prefix` with the npm registry;
  cold    — in a box with network none, through the run's package gateway in mode live on a
            fresh cache folder (every body fetched upstream and kept);
  cached  — in a new box, through a gateway in mode cache on that same folder: offline, zero
            upstream requests.
Every install starts with empty client caches (pip --no-cache-dir; npm's cache in a fresh
folder on either side). Each figure is the install command's own wall time (in a box, taken
inside it: the engine's exec round trip is not counted, and is printed apart), the median of
the repeats. Box creation and the forwarder's start are not counted either.

Prints the Python, pip, Node and npm versions of each side, a line per repeat (with the
machine's load average: the figures are wall times, and other work on the machine stretches
them), a table (way, pip s, npm s, total, cpu s: the commands' user + system time, MB served
by the gateway), the ratio cached-in-box / direct (issue 37: a cached install in a box is no
slower than the direct one), how many artifacts the gateway served, the upstream requests
it made, and whether cache mode served everything from the cache.
Boxes get an agent box's limits (`Limits()`: 1 CPU, 512 MiB) unless --cpus/--memory-mb say.
Exits 2 when no Docker engine answers, 1 when an install fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icae_tui.domain.events import Event, PackageRefused, PackageServed  # noqa: E402
from icae_tui.domain.runtimes import RECIPES, Runtime  # noqa: E402
from icae_tui.domain.states import PackageMode, PackageSource  # noqa: E402
from icae_tui.errors import EngineUnavailable  # noqa: E402
from icae_tui.evaluation.gate import start_package_proxy  # noqa: E402
from icae_tui.packages import PackageCache, PackageGateway, Policy, serving  # noqa: E402
from icae_tui.sandbox.base import Box, BoxSpec, Limits, Role  # noqa: E402
from icae_tui.sandbox.docker.backend import DockerSandbox  # noqa: E402
from icae_tui.sandbox.docker.images import ensure_base_image, ensure_runtime_image  # noqa: E402

# Wheels for CPython 3.11 (the host) and 3.13 (trixie's python3), pure or binary for both;
# rich's own dependencies (markdown-it-py, mdurl) pinned too, so both sides install the same.
PYPI = (
    "requests==2.32.3", "click==8.1.8", "PyYAML==6.0.2", "rich==13.9.4", "Jinja2==3.1.5",
    "attrs==24.3.0", "python-dateutil==2.9.0.post0", "packaging==24.2", "pluggy==1.5.0",
    "tabulate==0.9.0", "colorama==0.4.6", "Pygments==2.19.1", "toml==0.10.2", "idna==3.10",
    "urllib3==2.3.0", "certifi==2024.12.14", "charset-normalizer==3.4.1", "six==1.17.0",
    "MarkupSafe==3.0.2", "iniconfig==2.0.0", "markdown-it-py==3.0.0", "mdurl==0.1.2",
)  # fmt: skip
NPM = ("typescript@5.7.3", "@types/node@22.10.7", "ts-node@10.9.2")
PYPI_INDEX = "https://pypi.org/simple/"
NPM_REGISTRY = "https://registry.npmjs.org/"
INSTALL_TIMEOUT_S = 900.0  # one install command
PROBE_TIMEOUT_S = 60.0
RUN_ID = "bench-packages"
WAYS = ("direct", "cold", "cached")
ELAPSED = "ICAE_BENCH_ELAPSED_NS="


@dataclass
class Install:
    """One install of the set, one way."""

    pip_s: float
    npm_s: float
    cpu_s: float = 0.0  # user + system seconds of the two commands and their children
    exec_overhead_s: float = 0.0  # the engine's exec round trips beyond the commands' own time
    served: list[PackageServed] = field(default_factory=list)
    refused: list[PackageRefused] = field(default_factory=list)
    bytes_served: int = 0
    upstream: int = 0  # requests the gateway made to the registries

    @property
    def total_s(self) -> float:
        return self.pip_s + self.npm_s


class InstallFailed(Exception):
    pass


def pip_args(target: str) -> list[str]:
    return ["-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
            "--progress-bar", "off", "--only-binary", ":all:", "--target", target, *PYPI]  # fmt: skip


def npm_args(prefix: str) -> list[str]:
    return ["npm", "install", "--prefix", prefix, "--no-save", "--no-audit", "--no-fund", *NPM]


def _tail(data: bytes | str, n: int = 1500) -> str:
    text = data.decode(errors="replace") if isinstance(data, bytes) else data
    return text.strip()[-n:]


# -- direct, on the host ------------------------------------------------------------------


def host_env(tmp: Path) -> dict[str, str]:
    """The environment with this machine's local package sources neutralised: pip reads no
    config file (its find-links, extra indexes and constraints) and asks PyPI only; npm reads
    no user config and asks the npm registry with a fresh cache."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("PIP_", "NPM_CONFIG_"))}  # fmt: skip
    keep = {k: os.environ[k] for k in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT") if k in os.environ}
    userconfig = tmp / "npmrc"
    userconfig.write_text("")
    env.update(keep)
    env.update({
        "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": PYPI_INDEX,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "npm_config_registry": NPM_REGISTRY, "npm_config_cache": str(tmp / "npm-cache"),
        "npm_config_userconfig": str(userconfig), "npm_config_update_notifier": "false",
    })  # fmt: skip
    return env


def _host_run(argv: list[str], env: dict[str, str], what: str) -> tuple[float, float]:
    """(the command's wall seconds, its CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=INSTALL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise InstallFailed(f"{what} timed out after {INSTALL_TIMEOUT_S:.0f} s") from None
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        why = _tail(done.stderr or done.stdout)
        raise InstallFailed(f"{what} exited {done.returncode}:\n{why}")
    return elapsed, cpu


def direct(python: str) -> Install:
    tmp = Path(tempfile.mkdtemp(prefix="icae-bench-direct-"))
    try:
        env = host_env(tmp)
        pip_s, pip_cpu = _host_run([python, *pip_args(str(tmp / "site"))], env, "host pip")
        (tmp / "node").mkdir()
        npm_s, npm_cpu = _host_run(npm_args(str(tmp / "node")), env, "host npm install")
        return Install(pip_s, npm_s, cpu_s=pip_cpu + npm_cpu)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def host_versions(python: str) -> str:
    def say(argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  env={**os.environ, "PIP_CONFIG_FILE": os.devnull})  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"? ({err})"
        return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else "?"

    pip = say([python, "-m", "pip", "--version"]).split(" from ")[0]
    return (f"{say([python, '--version'])}, {pip}, node {say(['node', '--version'])}, "
            f"npm {say(['npm', '--version'])}")  # fmt: skip


# -- in a box, through the gateway --------------------------------------------------------


async def box_run(
    box: Box, command: str, env: dict[str, str], what: str
) -> tuple[float, float, float]:
    """(the command's own seconds and CPU seconds, taken in the box; the exec's wall seconds
    from here)."""
    script = (f"t0=$(date +%s%N); {command}; rc=$?; t1=$(date +%s%N); "
              f"echo {ELAPSED}$((t1 - t0)) >&2; times >&2; exit $rc")  # fmt: skip
    start = time.monotonic()
    res = await box.exec(["sh", "-c", script], env=env, timeout_s=INSTALL_TIMEOUT_S)
    wall = time.monotonic() - start
    if res.timed_out:
        raise InstallFailed(f"{what} timed out after {INSTALL_TIMEOUT_S:.0f} s")
    if res.exit_code != 0:
        raise InstallFailed(f"{what} exited {res.exit_code}:\n{_tail(res.stderr or res.stdout)}")
    said = res.stderr.decode(errors="replace").rsplit(ELAPSED, 1)
    if len(said) != 2:
        raise InstallFailed(f"{what}: no elapsed time in its output")
    # `times`: the shell's user and system time, then its children's (`1m2.5s 0m0.3s`)
    children = said[1].strip().split("\n")[-1].split()
    cpu = sum(_minutes_seconds(t) for t in children[:2])
    return int(said[1].split()[0]) / 1e9, cpu, wall


def _minutes_seconds(text: str) -> float:
    minutes, _, seconds = text.rstrip("s").partition("m")
    return int(minutes) * 60 + float(seconds)


def count_upstream(gw: PackageGateway) -> list[int]:
    """Count the requests the gateway sends to the registries (metadata and artifacts)."""
    count = [0]
    get, stream = gw.upstream.get, gw.upstream.stream

    async def counted_get(url: str, **kwargs: str) -> Any:
        count[0] += 1
        return await get(url, **kwargs)

    async def counted_stream(url: str) -> Any:
        count[0] += 1
        return await stream(url)

    gw.upstream.get = counted_get  # type: ignore[method-assign]
    gw.upstream.stream = counted_stream  # type: ignore[method-assign]
    return count


async def through_gateway(
    sandbox: DockerSandbox, image: str, mode: PackageMode, cache_dir: Path, limits: Limits
) -> Install:
    events: list[Event] = []
    policy = Policy((), (), None, "bench")
    async with serving(mode, policy, cache=PackageCache(cache_dir), record=events.append) as gw:
        upstream = count_upstream(gw)
        box = await sandbox.create_box(BoxSpec(image=image, run_id=RUN_ID, role=Role.AGENT,
                                               channels=(gw.box_channel,), limits=limits))  # fmt: skip
        try:
            env, why = await start_package_proxy(box, gw)
            if why:
                raise InstallFailed(why)
            work = f"/tmp/bench-{uuid.uuid4().hex[:8]}"
            pip = shlex.join(["python3", *pip_args(f"{work}/site")])
            pip_s, pip_cpu, pip_wall = await box_run(box, pip, env, f"box pip ({mode})")
            npm_env = {**env, "npm_config_cache": f"{work}/npm-cache"}
            npm = f"mkdir -p {work}/node && " + shlex.join(npm_args(f"{work}/node"))
            npm_s, npm_cpu, npm_wall = await box_run(box, npm, npm_env, f"box npm ({mode})")
        finally:
            await asyncio.shield(box.remove())
        return Install(
            pip_s, npm_s, cpu_s=pip_cpu + npm_cpu, exec_overhead_s=(pip_wall + npm_wall) - (pip_s + npm_s),
            served=[e for e in events if isinstance(e, PackageServed)],
            refused=[e for e in events if isinstance(e, PackageRefused)],
            bytes_served=gw.bytes_served, upstream=upstream[0],
        )  # fmt: skip


async def box_versions(sandbox: DockerSandbox, image: str, limits: Limits) -> str:
    box = await sandbox.create_box(BoxSpec(image=image, run_id=RUN_ID, role=Role.AGENT,
                                           limits=limits))  # fmt: skip
    try:
        res = await box.exec(
            "python3 --version; python3 -m pip --version | sed 's/ from .*//'; "
            "echo node $(node --version); echo npm $(npm --version)",
            timeout_s=PROBE_TIMEOUT_S,
        )
    finally:
        await asyncio.shield(box.remove())
    return ", ".join(res.stdout.decode(errors="replace").split("\n")[:4]).strip(", ")


# -- the run ------------------------------------------------------------------------------


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def report(results: dict[str, list[Install]], repeats: int) -> None:
    print(f"\nmedian of {repeats} install(s) each; seconds are the install commands' own "
          "(cpu s: their user + system time)")  # fmt: skip
    print(f"{'way':<8} {'pip s':>8} {'npm s':>8} {'total s':>8} {'cpu s':>8} {'MB served':>10}")
    med: dict[str, float] = {}
    for way in WAYS:
        runs = results[way]
        med[way] = _median([r.total_s for r in runs])
        mb = f"{_median([r.bytes_served / 1e6 for r in runs]):.1f}" if way != "direct" else "-"
        print(f"{way:<8} {_median([r.pip_s for r in runs]):>8.2f} "
              f"{_median([r.npm_s for r in runs]):>8.2f} {med[way]:>8.2f} "
              f"{_median([r.cpu_s for r in runs]):>8.2f} {mb:>10}")  # fmt: skip
    ratio = med["cached"] / med["direct"]
    verdict = "no slower than direct" if ratio <= 1.0 else "SLOWER than direct"
    print(f"cached-in-box / direct: {ratio:.2f} ({verdict}); cold-in-box / direct: "
          f"{med['cold'] / med['direct']:.2f}")  # fmt: skip
    for way in ("cold", "cached"):
        runs = results[way]
        by_eco = sorted({(e.ecosystem.value, e.filename) for r in runs for e in r.served})
        pypi = sum(1 for eco, _ in by_eco if eco == "pypi")
        print(f"{way}: {_median([len(r.served) for r in runs]):.0f} artifacts served per install "
              f"({pypi} PyPI files, {len(by_eco) - pypi} npm tarballs), "
              f"{_median([r.upstream for r in runs]):.0f} upstream requests, "
              f"{sum(len(r.refused) for r in runs)} refused, engine exec overhead "
              f"{_median([r.exec_overhead_s for r in runs]):.2f} s (not counted)")  # fmt: skip
    cached = results["cached"]
    all_cache = all(e.source is PackageSource.CACHE for r in cached for e in r.served)
    upstream = sum(r.upstream for r in cached)
    print(f"cache mode: {'every' if all_cache else 'NOT every'} artifact served from the cache, "
          f"{upstream} upstream requests over {len(cached)} install(s)")  # fmt: skip


async def run(args: argparse.Namespace) -> int:
    try:
        sandbox = await DockerSandbox.open()
    except EngineUnavailable as err:
        print(f"error: no Docker engine: {err}", file=sys.stderr)
        return 2
    limits = Limits(memory_bytes=args.memory_mb * 2**20, nano_cpus=int(args.cpus * 1e9))
    results: dict[str, list[Install]] = {way: [] for way in WAYS}
    caches: list[Path] = []
    try:
        python_recipe = RECIPES["python"]
        base = await ensure_base_image(sandbox.docker, print, name=python_recipe.release.base)
        runtime = Runtime("bench", ("python3-pip", "npm"), "python3 --version",
                          release=python_recipe.release)  # fmt: skip
        image = await ensure_runtime_image(sandbox.docker, base, runtime, print)
        print(f"host: {host_versions(args.python)}")
        print(f"box ({image} on {base}, {args.cpus:g} CPU, {args.memory_mb} MiB): "
              f"{await box_versions(sandbox, image, limits)}")  # fmt: skip
        print(f"set: {len(PYPI)} PyPI requirements (pinned), npm {' '.join(NPM)}")
        for i in range(args.repeats):
            results["direct"].append(await asyncio.to_thread(direct, args.python))
            cache_dir = Path(tempfile.mkdtemp(prefix="icae-bench-pkgcache-"))
            caches.append(cache_dir)
            results["cold"].append(
                await through_gateway(sandbox, image, PackageMode.LIVE, cache_dir, limits)
            )
            results["cached"].append(
                await through_gateway(sandbox, image, PackageMode.CACHE, cache_dir, limits)
            )
            row = "  ".join(f"{w} {results[w][-1].pip_s:.2f}+{results[w][-1].npm_s:.2f} s"
                            for w in WAYS)  # fmt: skip
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"repeat {i + 1}/{args.repeats}: {row}  (load average {load})", flush=True)
    except InstallFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        for path in caches:
            shutil.rmtree(path, ignore_errors=True)
        await sandbox.close()
    report(results, args.repeats)
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="installs per way (median reported)")
    ap.add_argument("--cpus", type=float, default=Limits().nano_cpus / 1e9,
                    help="the boxes' CPU limit (default: an agent box's)")  # fmt: skip
    ap.add_argument("--memory-mb", type=int, default=Limits().memory_bytes // 2**20,
                    help="the boxes' memory limit (default: an agent box's)")  # fmt: skip
    ap.add_argument("--python", default=sys.executable,
                    help="the host's Python for the direct install (default: this one)")  # fmt: skip
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()

"""Images, built offline: a Debian base from debootstrap + import, and per-task images.

- bases (`icae-base:bookworm`, `icae-base:trixie`): `debootstrap --variant=minbase
  --include=python3 RELEASE`, imported with the engine's `images/create?fromSrc=-`. Built
  only when missing. A task on the default Debian base is built on its runtime recipe's
  release (domain/runtimes.py `image_plan`: trixie for every recipe).
- runtime image (`icae-runtime:<hash of base image id and packages>`): the base + the Debian
  packages of the task's language runtime (domain/runtimes.py), installed with apt-get in a
  build container that reaches the Debian mirror (the engine's bridge network) during that
  build only; the recipe's probe then prints the runtime's version, kept as the image's
  `icae.runtime.version` label and said (`runtime version: …`) whenever the image is built
  or found. Built once per recipe and shared by every task with the same one; a task whose
  recipe is empty (shell) or whose base brings its own runtime uses the base as it is.
- agent image: runtime + the task's setup lines + an empty workspace. No oracle, no cases.
- oracle image: agent image + `oracle/` at the oracle path + its declared dependencies
  (`[oracle] requires`, requires.py) and pinned registry package (`[oracle] package`), both
  installed in a build container that reaches the registries for this build only + install
  lines + the tool wrapper.
  A task with no oracle (its cases judged against their expected outputs) has none: its
  `TaskImages.oracle` is the agent image.
Task images are tagged with a hash of their recipe, so a changed task rebuilds and an
unchanged one is reused.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import aiodocker

from icae_tui.domain.runtimes import (
    DEBIAN_BASES,
    Runtime,
    image_key,
    image_plan,
    parse_version,
    version_line,
)
from icae_tui.domain.task import Task
from icae_tui.errors import ConfigError, ImageBuildError
from icae_tui.packages import installed
from icae_tui.sandbox.base import Limits, ProgressFn, Role, TaskImages, wrapper_script
from icae_tui.sandbox.capture import Digest
from icae_tui.sandbox.docker.containers import Container, create_container
from icae_tui.sandbox.docker.engine import LABEL_TOOL, TOOL_NAME
from icae_tui.sandbox.docker.engine_api import import_rootfs
from icae_tui.sandbox.docker.requires import install_requires, registry_exec
from icae_tui.sandbox.docker.runtime_labels import (
    LABEL_RUNTIME_KEY,
    LABEL_RUNTIME_VERSION,
    runtime_version,
)

BASE_IMAGE = "icae-base:bookworm"  # the format's default base (domain/runtimes.DEBIAN_BASE)
DEBIAN_MIRROR = os.environ.get("ICAE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# A task's image setup (our recipe, not an agent's work) is not held to a box's disk limit.
IMAGE_BUILD = Limits(disk_bytes=None)
RUNTIME_REPO = "icae-runtime"
# In a runtime image's name: a runtime image built before its version label was kept is not
# reused (1: with `icae.runtime.version`).
RUNTIME_FORMAT = "1"
# apt-get and dpkg unpacking a JDK or a Rust toolchain need more than a box gets.
RUNTIME_BUILD = Limits(
    memory_bytes=2 * 1024**3, pids=4096, nano_cpus=2_000_000_000, ttl_s=7200,
    file_bytes=2 * 1024**3, disk_bytes=None,
)  # fmt: skip
RUNTIME_STEP_TIMEOUT_S = 1800.0


async def image_exists(docker: aiodocker.Docker, name: str) -> bool:
    try:
        await docker.images.inspect(name)
        return True
    except aiodocker.DockerError as err:
        if err.status == 404:
            return False
        raise


async def ensure_base_image(
    docker: aiodocker.Docker, progress: ProgressFn = lambda _m: None, *, name: str = BASE_IMAGE
) -> str:
    if await image_exists(docker, name):
        return name
    if (release := DEBIAN_BASES.get(name)) is None:
        progress(f"pulling {name}")
        try:
            await docker.images.pull(name)
        except aiodocker.DockerError as err:
            raise ImageBuildError(
                f"image {name!r} is not on the engine and could not be pulled ({err.message}); "
                "`docker load -i FILE.tar` it into the engine, pull it where a registry is "
                f"reachable, or use {BASE_IMAGE} (a language's runtime recipe)"
            ) from None
        return name
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "debootstrap is not installed (apt-get install debootstrap) — needed to build "
            f"{name} offline"
        )
    with tempfile.TemporaryDirectory(prefix="icae-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        progress(f"debootstrap {release} (minbase + python3) into {rootfs}")
        proc = await asyncio.create_subprocess_exec(
            "debootstrap", "--variant=minbase", "--include=python3", release.value,
            str(rootfs), DEBIAN_MIRROR,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert proc.stdout is not None
        tail: list[str] = []
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            tail = (tail + [line])[-20:]
            if line.startswith(("I: Retrieving", "I: Validating")):
                continue  # hundreds of these; the other lines tell the story
            progress(line)
        if await proc.wait() != 0:
            raise ImageBuildError("debootstrap failed:\n" + "\n".join(tail))
        progress(f"importing {name} into the engine")
        tar_path = Path(tmp) / "rootfs.tar"
        tar = await asyncio.create_subprocess_exec(
            "tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tar_path), "."
        )
        if await tar.wait() != 0:
            raise ImageBuildError("tar of the root file system failed")
        repo, tag = name.split(":", 1)
        await import_rootfs(
            docker,
            tar_path,
            repository=repo,
            tag=tag,
            changes=[f"LABEL {LABEL_TOOL}={TOOL_NAME}", 'CMD ["/bin/bash"]'],
        )
    progress(f"{name} ready")
    return name


def _hash_tree(h: Digest, root: Path) -> None:
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        if path.is_symlink():  # a link is its target (a linked folder, too)
            h.update(b"link\0" + str(path.relative_to(root)).encode() + b"\0")
            h.update(os.readlink(path).encode() + b"\0")
        elif path.is_file():
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes())


def tree_links(root: Path) -> dict[str, str]:
    """The symbolic links under `root` (relative path → target), each one staying inside
    it: the ICAE importer keeps a golden repository's inner links (a Rust workspace member
    may be one) and refuses the others; one that leaves is refused here too."""
    links: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_symlink():
            continue
        rel, target = path.relative_to(root).as_posix(), os.readlink(path)
        inside = (path.parent / target).resolve()
        if os.path.isabs(target) or not inside.is_relative_to(root.resolve()):
            raise ImageBuildError(f"{path}: a link out of oracle/ ({target}): refused")
        links[rel] = target
    return links


def recipe_hash(task: Task, base_id: str, role: Role) -> str:
    h = hashlib.sha256()
    h.update(f"{role}\0{base_id}\0".encode())
    # the runtime and its packages are in base_id (the runtime image's own id)
    h.update(task.spec.image.model_dump_json(exclude={"runtime", "packages"}).encode())
    h.update(task.spec.delivery.workspace.encode())
    h.update(task.spec.cases.workdir.encode())
    if role == Role.ORACLE and task.spec.oracle is not None:
        h.update(task.spec.oracle.model_dump_json().encode())
        h.update(task.spec.interface.model_dump_json().encode())
        _hash_tree(h, Path(task.root) / "oracle")
        if task.spec.cases.oracle_at_delivery_path:  # only then: other tasks keep their hash
            h.update(f"at\0{task.spec.delivery.entry}\0".encode())
    return h.hexdigest()[:16]


async def _run_setup(c: Container, lines: list[str], progress: ProgressFn, what: str) -> None:
    for line in lines:
        progress(f"{what}: $ {line}")
        res = await c.exec(line, timeout_s=600)
        if res.exit_code != 0:
            detail = (res.stderr or res.stdout).decode(errors="replace")[-2000:]
            raise ImageBuildError(f"{what}: `{line}` exited {res.exit_code}:\n{detail}")


async def _commit(c: Container, name: str, task: Task, role: str) -> str:
    repo, tag = name.split(":", 1)
    await c.commit(repo, tag, {LABEL_TOOL: TOOL_NAME, "icae.task": task.id, "icae.role": role})
    return name


def oracle_link(task: Task) -> tuple[str, str] | None:
    """With `[cases] oracle_at_delivery_path`, the link the oracle's image makes at the
    delivery's entry path to the oracle's entry, and the line that makes it; else None.
    Run through the link, a script names the delivery's path in what it prints of itself
    (Python's tracebacks), and resolves its own imports as before (sys.path[0] follows it)."""
    spec = task.spec.oracle
    if spec is None or not task.spec.cases.oracle_at_delivery_path:
        return None
    entries = (spec.entry.strip(), task.spec.delivery.entry.strip())
    if not all(re.fullmatch(r"/[A-Za-z0-9._+/-]+", e) for e in entries):
        raise ConfigError(
            f"{Path(task.root) / 'task.toml'}: [cases] oracle_at_delivery_path needs [oracle] "
            f"entry and [delivery] entry to be one absolute path each, not {entries!r}"
        )
    target, link = entries
    if target == link:
        return None
    parent = link.rsplit("/", 1)[0] or "/"
    return (
        link,
        f"mkdir -p {shlex.quote(parent)} && ln -sfn {shlex.quote(target)} {shlex.quote(link)}",
    )


def package_install_line(package: str, locked: Sequence[str] = ()) -> str:
    """The one line that installs a pinned `pip:NAME==V` / `npm:NAME@V` (OracleSpec.package);
    with pip and a lock, exactly the locked set (`--no-deps`: nothing resolved again)."""
    kind, name = package.split(":", 1)
    if kind == "pip":
        pins = list(dict.fromkeys([name, *(p.split(":", 1)[1] for p in locked)]))
        no_deps = "--no-deps " if locked else ""
        return ("python3 -m pip install --no-cache-dir --disable-pip-version-check "
                f"--break-system-packages {no_deps}{' '.join(shlex.quote(p) for p in pins)}")  # fmt: skip
    return f"npm install --global --no-fund --no-audit {shlex.quote(name)}"


async def _listed(c: Container, kind: str, what: str) -> set[str]:
    res = await c.exec(installed.list_argv(kind), timeout_s=120)
    try:
        return installed.pinned(kind, res.stdout)
    except installed.UnreadableList as err:
        raise ImageBuildError(f"{what}: {err}") from None


async def _install_package(
    c: Container, package: str, progress: ProgressFn, what: str, locked: Sequence[str] = ()
) -> None:
    """The package, then (with a lock) a check that what it installed is what was locked."""
    kind = package.split(":", 1)[0]
    before = await _listed(c, kind, what) if locked else set()
    line = package_install_line(package, locked)
    progress(f"{what}: $ {line}")
    res = await registry_exec(c, line, timeout_s=RUNTIME_STEP_TIMEOUT_S)
    if res.exit_code != 0:
        tail = (res.stderr_tail or res.stderr or res.stdout_tail or res.stdout)[-2000:]
        why = "timed out" if res.timed_out else f"exited {res.exit_code}"
        raise ImageBuildError(f"{what}: installing {package}: `{line}` {why} (is the registry "
                              "reachable from the engine's bridge network?):\n"
                              + tail.decode("utf-8", errors="replace").strip())  # fmt: skip
    if locked and (off := installed.difference(locked, before, await _listed(c, kind, what))):
        raise ImageBuildError(f"{what}: {package} installs otherwise than [oracle] locked "
                              f"recorded at import ({off}); import the tool again to lock "
                              "what the registry resolves now")  # fmt: skip


def runtime_image_name(base_id: str, runtime: Runtime) -> str:
    """Named by what is in it: the base image and the packages (in any order)."""
    packages = sorted(set(runtime.packages))
    h = hashlib.sha256("\0".join([RUNTIME_FORMAT, base_id, *packages]).encode()).hexdigest()
    return f"{RUNTIME_REPO}:{h[:16]}"


def apt_install_line(packages: tuple[str, ...]) -> str:
    """dpkg's unsafe-io: no fsync per unpacked file (measured: nodejs + npm's 400 packages in
    40 s instead of 100+); a build that fails is thrown away, and only the commit persists."""
    names = " ".join(shlex.quote(p) for p in sorted(set(packages)))
    return (
        "apt-get update -q && apt-get install -y -q -o Dpkg::Options::=--force-unsafe-io "
        f"--no-install-recommends {names} && apt-get clean && rm -rf /var/lib/apt/lists/*"
    )


async def ensure_runtime_image(
    docker: aiodocker.Docker,
    base: str,
    runtime: Runtime,
    progress: ProgressFn = lambda _m: None,
    *,
    run_id: str = "image-build",
) -> str:
    """`base` with the runtime's Debian packages installed; built only when missing. The
    build container has the bridge network (the Debian mirror) for this build only; every
    box made from the image runs with network none. Says the runtime's version (its probe's,
    kept as a label) whether it built the image or found it."""
    base_id = (await docker.images.inspect(base))["Id"]
    name = runtime_image_name(base_id, runtime)
    if await image_exists(docker, name):
        progress(version_line(base, runtime, await runtime_version(docker, name)))
        return name
    what = f"runtime {runtime.name} ({' '.join(runtime.packages)})"
    progress(f"installing {what} into {name}; this happens once per recipe")
    c = await create_container(
        docker, base, run_id=run_id, role="build", hardened=False,
        limits=RUNTIME_BUILD, network="bridge",
    )  # fmt: skip
    try:
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        hint = f" (is the Debian mirror {DEBIAN_MIRROR} reachable from the bridge network?)"
        for line, why_not in ((apt_install_line(runtime.packages), hint), (runtime.probe, "")):
            progress(f"{name}: $ {line}")
            res = await c.exec(line, timeout_s=RUNTIME_STEP_TIMEOUT_S, env=env)
            if res.exit_code != 0:
                tail = (res.stderr_tail or res.stderr or res.stdout_tail or res.stdout)[-1500:]
                why = "timed out" if res.timed_out else f"exited {res.exit_code}"
                raise ImageBuildError(
                    f"{what}: `{line[:200]}` {why}{why_not}:\n"
                    + tail.decode("utf-8", errors="replace").strip()
                )
        # the probe ran last: its output is the version (some print it on stderr)
        said = (res.stdout + b"\n" + res.stderr).decode("utf-8", errors="replace")
        version = parse_version(said)
        repo, tag = name.split(":", 1)
        labels = {LABEL_TOOL: TOOL_NAME, "icae.role": "runtime", "icae.runtime": runtime.name,
                  "icae.runtime.packages": " ".join(sorted(set(runtime.packages))),
                  LABEL_RUNTIME_KEY: image_key(base, runtime),
                  LABEL_RUNTIME_VERSION: version}  # fmt: skip
        await c.commit(repo, tag, labels)
    finally:
        await c.remove()
    progress(f"runtime {runtime.name} ready: {name}")
    progress(version_line(base, runtime, version))
    return name


async def ensure_task_images(
    docker: aiodocker.Docker, task: Task, progress: ProgressFn = lambda _m: None
) -> TaskImages:
    try:
        plan = image_plan(task.spec)
    except ValueError as err:  # an unknown or refused language: before anything is built
        raise ConfigError(f"{Path(task.root) / 'task.toml'}: {err}") from None
    base = await ensure_base_image(docker, progress, name=plan.base)
    if plan.runtime is not None:
        base = await ensure_runtime_image(docker, base, plan.runtime, progress)
    base_id = (await docker.images.inspect(base))["Id"]
    agent = f"icae-agent-{task.id}:{recipe_hash(task, base_id, Role.AGENT)}"
    if not await image_exists(docker, agent):
        progress(f"building {agent}")
        c = await create_container(
            docker, base, run_id="image-build", role="build", hardened=False, limits=IMAGE_BUILD
        )
        try:
            await _run_setup(c, task.spec.image.setup, progress, agent)
            ws, wd = task.spec.delivery.workspace, task.spec.cases.workdir
            await _run_setup(c, [f"mkdir -p {shlex.quote(ws)} {shlex.quote(wd)}"], progress, agent)
            await _commit(c, agent, task, "agent")
        finally:
            await c.remove()
    spec = task.spec.oracle
    if spec is None:  # judged against the stored expected outputs: no oracle to build
        progress(f"images ready for {task.id} (no oracle)")
        return TaskImages(agent=agent, oracle=agent)
    linked = oracle_link(task)  # refused before anything is built for the oracle
    agent_id = (await docker.images.inspect(agent))["Id"]
    oracle = f"icae-oracle-{task.id}:{recipe_hash(task, agent_id, Role.ORACLE)}"
    if not await image_exists(docker, oracle):
        progress(f"building {oracle}")
        # a pinned package or declared dependencies: this build container (only) reaches
        # the registries
        network = "bridge" if spec.package or spec.requires else "none"
        c = await create_container(
            docker, agent, run_id="image-build", role="build", hardened=False,
            limits=IMAGE_BUILD, network=network,
        )  # fmt: skip
        try:
            files: dict[str, bytes] = {}
            oracle_dir = Path(task.root) / "oracle"
            links = tree_links(oracle_dir)
            for path in sorted(oracle_dir.rglob("*")):
                rel = path.relative_to(oracle_dir).as_posix()
                if path.is_file() and "__pycache__" not in path.parts and rel not in links:
                    files[f"{spec.path}/{rel}"] = path.read_bytes()
            await c.put_files(files)
            for rel, target in links.items():  # as links, after what they point at
                at = f"{spec.path}/{rel}"
                await _run_setup(c, [f"mkdir -p {shlex.quote(os.path.dirname(at))} && "
                                     f"ln -sfn {shlex.quote(target)} {shlex.quote(at)}"],
                                 progress, oracle)  # fmt: skip
            if spec.requires:
                await install_requires(c, spec.requires, progress, oracle,
                                       field="[oracle] requires")  # fmt: skip
            if spec.package:
                await _install_package(c, spec.package, progress, oracle, spec.locked)
            await _run_setup(c, spec.install, progress, oracle)
            entry = spec.entry
            if linked is not None:  # the oracle runs from the delivery's path
                entry, line = linked
                await _run_setup(c, [line], progress, oracle)
            await c.put_files(
                {f"/usr/local/bin/{task.spec.interface.tool}": wrapper_script(entry)},
                mode=0o755,
            )
            await _commit(c, oracle, task, "oracle")
        finally:
            await c.remove()
    progress(f"images ready for {task.id}")
    return TaskImages(agent=agent, oracle=oracle)

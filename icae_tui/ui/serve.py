"""`icae serve`: the console in a web browser (textual-serve), for demos on another screen.

Each browser session starts its own console process (`python -m icae_tui` with the same
global options), so it is the same console — runs, replays, takeover — drawn in the page.
It listens on localhost by default: whoever reaches the page drives the console (and can
start agents), so give `--host` only on a network you trust.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual_serve.server import Server

DEFAULT_PORT = 8000


def console_command(console_args: Sequence[str]) -> str:
    """The shell command each browser session runs: this interpreter, this package."""
    return shlex.join([sys.executable, "-m", "icae_tui", *console_args])


def make_server(
    console_args: Sequence[str], *, host: str, port: int, public_url: str | None
) -> Server:
    from textual_serve.server import Server

    return Server(
        console_command(console_args), host=host, port=port, title="icae-tui",
        public_url=public_url,
    )  # fmt: skip


def serve(
    console_args: Sequence[str],
    *,
    host: str = "localhost",
    port: int = DEFAULT_PORT,
    public_url: str | None = None,
) -> None:
    make_server(console_args, host=host, port=port, public_url=public_url).serve()

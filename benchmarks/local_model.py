"""The local model on this machine: its speed directly and through a run's gateway, its
memory, and one real run of the built-in agent on it.

    python benchmarks/local_model.py [--model qwen2.5-coder-1.5b] [--rounds 4] [--no-run]
                                     [--task semver] [--level L1]

Speed: `--rounds` rounds, each asking the same prompt four ways one after the other — the
llama.cpp server directly and through the gateway a run puts in front of it (a Unix socket,
the run's token, the model forced, every call recorded), each once whole and once streamed.
The prompt cache is off (`cache_prompt: false`), so every request evaluates its prompt. Per
path: prompt and generated tokens/s (the server's own `timings`), the time to the first
streamed token, the wall time of a whole request; and the gateway's overhead, the median of
each round's (gateway − direct) wall time — measured side by side, under the same load.
Memory: the server's resident set now and at its peak (VmRSS, VmHWM), beside the machine's
cores and load average before and after.

The run: `icae run --task TASK --agent model:local` as a user types it, stored like any run
(so `icae replay RUN_ID` shows it in the console with no model at all); printed: its score,
steps, questions asked and how they were answered, model calls and tokens, and time.

The model is found serving (`icae models start`) or started for the benchmark and stopped
after it; it must be installed (`icae models install`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from icae_tui.gateway import GatewayConfig, serving  # noqa: E402
from icae_tui.local_models.catalog import DEFAULT_MODEL  # noqa: E402
from icae_tui.local_models.server import SERVERS  # noqa: E402

PROMPT = (
    "Write a Python command-line tool `semver.py` that compares two semantic versions given "
    "as arguments and prints -1, 0 or 1. Pre-release versions sort before the release; build "
    "metadata is ignored; an invalid version prints an error on stderr and exits with status "
    "2. Use only the standard library, keep it in one file, and explain nothing: reply with "
    "the code in one fenced block. Handle numeric identifiers numerically and alphanumeric "
    "identifiers in ASCII order, as the SemVer 2.0.0 specification says; a version with "
    "leading zeros in a numeric identifier is invalid."
)
MAX_TOKENS = 48


@dataclass
class PathFigures:
    prompt_tps: list[float] = field(default_factory=list)
    gen_tps: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    ttft_s: list[float] = field(default_factory=list)
    prompt_tokens: int = 0

    def row(self, name: str) -> str:
        med = lambda xs: f"{statistics.median(xs):8.2f}" if xs else "       —"  # noqa: E731
        return (f"{name:<10} {med(self.prompt_tps)} {med(self.gen_tps)} {med(self.ttft_s)} "
                f"{med(self.wall_s)}")  # fmt: skip


HEADER = f"{'path':<10} {'prompt/s':>8} {'gen/s':>8} {'ttft s':>8} {'wall s':>8}"


def body(model: str, stream: bool) -> dict[str, Any]:
    return {"model": model, "temperature": 0, "max_tokens": MAX_TOKENS, "stream": stream,
            "cache_prompt": False,  # llama.cpp: evaluate the whole prompt every time
            "messages": [{"role": "user", "content": PROMPT}]}  # fmt: skip


async def whole(http: aiohttp.ClientSession, url: str, model: str, into: PathFigures) -> float:
    t0 = time.perf_counter()
    async with http.post(url, json=body(model, stream=False)) as r:
        reply = await r.json(content_type=None)
        r.raise_for_status()
    wall = time.perf_counter() - t0
    timings = reply.get("timings") or {}
    into.prompt_tps.append(float(timings.get("prompt_per_second", 0.0)))
    into.gen_tps.append(float(timings.get("predicted_per_second", 0.0)))
    into.wall_s.append(wall)
    into.prompt_tokens = int((reply.get("usage") or {}).get("prompt_tokens", 0))
    return wall


async def streamed(http: aiohttp.ClientSession, url: str, model: str, into: PathFigures) -> None:
    t0 = time.perf_counter()
    first = None
    async with http.post(url, json=body(model, stream=True)) as r:
        r.raise_for_status()
        async for line in r.content:
            text = line.decode(errors="replace").strip()
            if first is None and text.startswith("data: {") and '"content"' in text:
                delta = json.loads(text[6:])["choices"][0].get("delta") or {}
                if delta.get("content"):
                    first = time.perf_counter() - t0
    if first is not None:
        into.ttft_s.append(first)


def memory(pid: int) -> str:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "the server's memory: not readable"
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    mib = lambda k: int(fields.get(k, "0 kB").split()[0]) / 1024  # noqa: E731
    return f"server memory: resident {mib('VmRSS'):.0f} MiB, peak {mib('VmHWM'):.0f} MiB"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


async def speed(name: str, rounds: int) -> None:
    async with SERVERS.lease(name, owner="benchmarks/local_model.py") as served:
        print(f"{served.model} at {served.base_url} (pid {served.pid}); {os.cpu_count()} cores; "
              f"{load()}")  # fmt: skip
        key_env = served.export_key()
        gateway = GatewayConfig(base_url=served.base_url, model=served.model, api_key_env=key_env)
        direct, through = PathFigures(), PathFigures()
        overhead: list[float] = []
        async with serving(gateway) as gw:
            # a fresh connection a request: llama.cpp's server drops one idle past its 5 s
            # keep-alive while the other path runs, and a pooled one then fails mid-write
            plain = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True),
                                          headers={"Authorization": f"Bearer {served.api_key}"},
                                          timeout=aiohttp.ClientTimeout(total=600))  # fmt: skip
            via = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=str(gw.socket_path)),
                headers={"Authorization": f"Bearer {gw.token}"},
                timeout=aiohttp.ClientTimeout(total=600),
            )
            async with plain, via:
                d_url = served.base_url + "/chat/completions"
                g_url = "http://gateway/v1/chat/completions"
                await whole(plain, d_url, served.model, PathFigures())  # warm: weights paged in
                for n in range(rounds):
                    pair = [(plain, d_url, direct), (via, g_url, through)]
                    if n % 2:  # alternate which goes first: neither always gets the warmer cache
                        pair.reverse()
                    walls = {id(f): await whole(h, u, served.model, f) for h, u, f in pair}
                    overhead.append(walls[id(through)] - walls[id(direct)])
                    for h, u, f in pair:
                        await streamed(h, u, served.model, f)
        print(f"\n{rounds} rounds, a {direct.prompt_tokens}-token prompt, {MAX_TOKENS} tokens "
              "generated, the prompt cache off")  # fmt: skip
        print(HEADER)
        print(direct.row("direct"))
        print(through.row("gateway"))
        ms = [1000 * x for x in overhead]
        print(f"gateway overhead per request: median {statistics.median(ms):.1f} ms "
              f"(min {min(ms):.1f}, max {max(ms):.1f}; a negative one is noise)")  # fmt: skip
        print(memory(served.pid))
        print(load())


def the_run(task: str, level: str) -> int:
    """`icae run --task TASK --agent model:local`, as typed; its stored figures printed."""
    with tempfile.TemporaryDirectory(prefix="icae-local-run-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "icae_tui", "run", "--task", task, "--agent", "model:local",
               "--level", level, "--report", str(report)]  # fmt: skip
        print(f"\n$ icae run --task {task} --agent model:local --level {level}")
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        took = time.perf_counter() - t0
        print("\n".join((done.stdout + done.stderr).strip().splitlines()[-4:]))
        if not report.is_file():
            print(f"no report (exit status {done.returncode})")
            return 1
        data = json.loads(report.read_text())
    print(summary(data, took))
    return 0


def summary(report: dict[str, Any], took: float) -> str:
    """The run's score (report), and its steps and model calls (the stored events)."""
    from icae_tui.domain.events import AgentStopped, ModelCallMade
    from icae_tui.domain.states import ModelRole
    from icae_tui.store.database import RunStore

    run_id = report["run"]["run_id"]
    events = RunStore().events(run_id)
    stopped = [e for e in events if isinstance(e, AgentStopped)]
    calls = [e for e in events if isinstance(e, ModelCallMade) and e.role is ModelRole.AGENT]
    turns = report.get("turns") or []
    by: dict[str, int] = {}
    for t in turns:
        who = "fallback" if t.get("fallback") else "answered"
        by[who] = by.get(who, 0) + 1
    score = report.get("score") or {}
    overall = score.get("overall")
    return "\n".join([
        f"run {run_id}: {report.get('status')}, score {overall if overall is not None else '—'}"
        f" ({score.get('done', 0)} of {score.get('planned', 0)} cases run; build "
        f"{'ok' if (report.get('build') or {}).get('ok') else 'failed'})",
        f"steps {stopped[-1].steps if stopped else '—'} (stopped: "
        f"{stopped[-1].reason if stopped else '—'}), questions asked {len(turns)} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(by.items())) or 'none'})",
        f"model calls {len(calls)}, tokens in {sum(c.tokens_in for c in calls)}, out "
        f"{sum(c.tokens_out for c in calls)}; {took:.0f} s wall",
        f"replay it, no model needed: icae replay {run_id}",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--no-run", action="store_true", help="the speed only, not the run")
    p.add_argument("--no-speed", action="store_true", help="the run only")
    p.add_argument("--task", default="semver")
    p.add_argument("--level", default="L1")
    args = p.parse_args(argv)
    if not args.no_speed:
        asyncio.run(speed(args.model, args.rounds))
    return 0 if args.no_run else the_run(args.task, args.level)


if __name__ == "__main__":
    raise SystemExit(main())

"""A whole run on a second engine reached by DOCKER_HOST (tcp://, so remote to the docker
backend): the agent phase with a question asked from inside the box through `icae-ask` and
answered — the channel relayed over the engine's connection, nothing of this host mounted —
then the freeze, the build and every case. Nothing of that run happens on the first engine
(its event log for the run's label is empty); the relayed box has no network but loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import docker as docker_py
import pytest

from icae_tui.cli import main
from icae_tui.domain.events import QuestionAnswered, QuestionAsked, RunFinished
from icae_tui.sandbox.base import BoxSpec, Channel, Role
from icae_tui.sandbox.docker.backend import DockerSandbox
from icae_tui.sandbox.docker.images import BASE_IMAGE
from icae_tui.sandbox.tree import TreeBounds
from icae_tui.store.database import RunStore
from icae_tui.users.responders import Reply
from tests.integration.second_engine import SecondEngine, second_engine
from tests.task_copies import add_solution, copy_mini, good_step

pytestmark = pytest.mark.docker

QUESTION = "How should unknown operations be reported?"


@pytest.fixture(scope="module")
def engine2() -> Iterator[SecondEngine]:
    with second_engine() as engine:
        yield engine


def _events_of(url: str | None, label: str, since: float, until: float) -> list[dict]:
    client = docker_py.DockerClient(base_url=url) if url else docker_py.from_env()
    try:
        return list(client.events(since=int(since), until=int(until) + 1, decode=True,
                                  filters={"label": label}))  # fmt: skip
    finally:
        client.close()


def test_a_whole_run_on_a_remote_engine_asks_through_the_relay(engine2, tmp_path, monkeypatch,
                                                                capsys):  # fmt: skip
    folder = copy_mini(tmp_path)
    add_solution(folder, "asks-in-box", [
        {"run": f"icae-ask '{QUESTION}'"},  # from inside the box, over its socket
        good_step(folder), {"submit": "done"},
    ], pace_s=0)  # fmt: skip
    monkeypatch.setenv("DOCKER_HOST", engine2.url)
    since = time.time()
    argv = ["--home", str(tmp_path / "home"), "--tasks", str(folder.parent), "run",
            "--task", "mini", "--agent", "scripted:asks-in-box", "--verbose"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    until = time.time()
    monkeypatch.delenv("DOCKER_HOST")
    store = RunStore(tmp_path / "home" / "runs.db")
    (row,) = store.runs()
    events = store.events(row.run_id)
    store.close()
    asked = [e for e in events if isinstance(e, QuestionAsked)]
    answered = [e for e in events if isinstance(e, QuestionAnswered)]
    assert [(q.text, q.via) for q in asked] == [(QUESTION, "icae-ask")], out[-3000:]
    assert len(answered) == 1 and "error=unknown_op" in answered[0].text
    assert "error=unknown_op" in out  # icae-ask printed the answer inside the box
    final = events[-1]
    assert isinstance(final, RunFinished) and final.status == "completed"
    assert final.score is not None and final.score.overall == 1.0  # every case judged there
    label = f"icae.run={row.run_id}"
    # the run's boxes were made, started and removed on the second engine, none on the first
    theirs = _events_of(engine2.url, label, since, until)
    assert {e.get("Action") for e in theirs} >= {"create", "start", "destroy"}
    assert _events_of(None, label, since, until) == []


async def test_a_relayed_box_mounts_nothing_and_has_no_network(engine2, tmp_path):
    from icae_tui.users.ask_server import AskServer
    from icae_tui.users.channel import ClarificationChannel
    from icae_tui.users.responders import Desk

    sandbox = await DockerSandbox.open(host=engine2.url)
    assert sandbox.remote
    emitted = []

    async def emit(ev) -> None:
        emitted.append(ev)

    desk = Desk(_FixedUser())
    async with ClarificationChannel(desk, 2, emit) as channel:
        server = AskServer(channel)
        await server.start()
        try:
            box = await sandbox.create_box(BoxSpec(
                image=BASE_IMAGE, run_id="t-relay", role=Role.TEST,
                channels=(Channel(server.folder, "/run/icae"),),
            ))  # fmt: skip
            try:
                info = await box.container.raw.show()  # type: ignore[attr-defined]
                assert not info["HostConfig"].get("Binds") and not info.get("Mounts")
                net = (await box.exec("cat /proc/net/dev")).stdout.decode().splitlines()[2:]
                assert {line.split(":")[0].strip() for line in net} == {"lo"}
                v4 = (await box.exec("cat /proc/net/route")).stdout.decode().splitlines()[1:]
                assert v4 == []  # no IPv4 route at all
                body = json.dumps({"question": "Which format?"})
                ask = ("python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); "
                       "s.connect('/run/icae/ask.sock'); s.sendall(sys.stdin.buffer.read()); "
                       "print(s.recv(65536).decode())\"")  # fmt: skip
                request = (f"POST /v1/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}")  # fmt: skip
                res = await box.exec(ask, stdin=request.encode())
                assert res.exit_code == 0, res.stderr
                assert b"200 OK" in res.stdout and b'"question_id": 1' in res.stdout
                # docker-py's calls (here the archive a tree is read from) reach this engine
                # too, though DOCKER_HOST names the first
                await box.put_files({"/work/a.txt": b"hi"})
                tree = await box.read_tree("/work", TreeBounds(), lambda _p: True)
                assert tree is not None and [e.path for e in tree.entries] == ["a.txt"]
            finally:
                await box.remove()
        finally:
            await server.close()
    await sandbox.close()
    assert [type(e).__name__ for e in emitted][:2] == ["QuestionAsked", "QuestionAnswered"]


async def test_a_kept_delivery_shell_opens_on_the_runs_remote_engine(engine2, fixture_catalog,
                                                                      store, tmp_path, monkeypatch):  # fmt: skip
    """The console's shell of a kept delivery (runs/kept.py, the case detail's `s` / `o`)
    names the run's engine: the argv targets the second engine, and run there (not
    interactively: `bash -lc` for the login shell) it reaches the image, which the first
    engine does not have."""
    import subprocess

    from icae_tui.display.handle import Side
    from icae_tui.runs.config import RunConfig
    from icae_tui.runs.kept import keeping
    from icae_tui.runs.run import Run

    config_home = tmp_path / "config"
    (config_home / "icae-tui").mkdir(parents=True)
    (config_home / "icae-tui" / "engines.toml").write_text(
        f'[engines.far]\nbackend = "docker"\nhost = "{engine2.url}"\n'
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    task = fixture_catalog.tasks["mini"]
    config = RunConfig(task=task, agent="scripted:good", pace_s=0, keep_delivery=True,
                       engine="far")  # fmt: skip
    run = Run(config, store)
    outcome = await run.execute()
    assert outcome.status == "completed" and outcome.sides is not None, outcome.error
    kept = keeping(task, config.engine)(outcome)  # as the console's live source keeps it
    assert kept is not None
    try:
        for side, listed in ((Side.DELIVERY, "mini.py"), (Side.ORACLE, None)):
            shell = await kept.shell(side)
            argv = list(shell.argv)
            assert argv[:3] == ["docker", "-H", engine2.url], argv
            assert argv[-2:] == ["bash", "-l"] and "-it" in argv
            options = argv[: argv.index(shell.image)]
            assert options[options.index("--hostname") + 1] == "sandbox"
            batch = [a for a in argv[:-2] if a != "-it"]
            done = subprocess.run([*batch, "bash", "-lc", f"hostname; ls {shell.workdir}"],
                                  capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
            lines = done.stdout.splitlines()
            assert lines[0] == "sandbox"
            if listed is not None:
                assert listed in lines[1:]
            # the first engine has no such image: the shell could only open there
            here = subprocess.run(
                ["docker", "image", "inspect", shell.image], capture_output=True, check=False
            )
            assert here.returncode != 0
    finally:
        await kept.discard()
    assert engine2.cli("image", "inspect", outcome.sides.delivery_image).returncode != 0


class _FixedUser:
    """An automatic user with one answer (the channel asks it for a draft)."""

    name = "fixed"

    async def reply(self, question_id: int, question: str) -> Reply:
        return Reply("plain text", [])

"""`icae batch` end to end: every item run and reported per pairing; a completed batch resumed
redoes nothing; a batch killed with `kill -9` halfway resumes to the same report as one that
was not, the run it killed started again — with the `processes` engine (fast, no Docker), and
on Docker for the sample tasks with no container or image of its runs left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from icae_tui.batch.store import BatchStatus, BatchStore
from icae_tui.cli import main
from icae_tui.domain.states import RunStatus
from icae_tui.sandbox import registry
from icae_tui.store.database import RunStore
from tests.conftest import FIXTURE_TASKS, ROOT

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the processes backend mounts")


def _batch(home: Path, *args: str, engine: str = "processes", tasks: Path = FIXTURE_TASKS) -> list[str]:
    return ["--home", str(home), "--tasks", str(tasks), "--engine", engine, "batch", *args]


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def _comparable(report: dict) -> dict:
    """What two batches of one spec share: not their ids, runs or times."""
    return {k: report[k] for k in ("items", "states", "outcomes", "pairings", "spec")}


def _batch_ids(home: Path) -> list[str]:
    store = RunStore(home / "runs.db")
    try:
        return [row.batch_id for row in BatchStore(store).batches()]
    finally:
        store.close()


@needs_root
def test_a_batch_runs_every_item_and_a_completed_one_resumed_redoes_nothing(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    out = tmp_path / "report.json"
    argv = _batch(tmp_path, "--task", "mini", "--agent", "scripted:good", "--agent",
                  "scripted:partial", "--repeats", "2", "--runs-at-once", "2", "--report", str(out))  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = _report(out)
    assert report["status"] == "completed" and report["items"] == 4
    assert report["states"] == {"done": 4} and report["outcomes"] == {"scored": 4}
    overall = {p["agent"]: p["figures"]["overall"] for p in report["pairings"]}
    # the fixture's solutions: good passes every case, partial 2 of 5 counted
    assert {a: (f["n"], f["mean"], f["sd"]) for a, f in overall.items()} == {
        "scripted:good": (2, 1.0, 0.0),
        "scripted:partial": (2, 0.4, 0.0),
    }
    assert printed.count("■ mini|") == 4 and "━━ batch " in printed
    # the same report as JUnit XML and Markdown
    (batch_id,) = _batch_ids(tmp_path)
    xml_path, md_path, html_path = tmp_path / "b.xml", tmp_path / "b.md", tmp_path / "b.html"
    for path in (xml_path, md_path, html_path):
        assert main(["--home", str(tmp_path), "batch", "--show", batch_id, "--report", str(path)]) == 0
    suites = ET.parse(xml_path).getroot()
    assert suites.get("failures") == "0"
    assert [(s.get("name"), s.get("tests")) for s in suites] == [
        ("mini × scripted:good · L1 · simulated", "2"),
        ("mini × scripted:partial · L1 · simulated", "2"),
    ]
    page = html_path.read_text()
    assert page.count("<svg") == 1 and "<script" not in page
    assert "mini × scripted:partial · L1" in page and "40.0% ± 0.0 (n=2)" in page
    assert "| mini | scripted:partial | L1 | simulated | 40.0% ± 0.0 (n=2) | 50.0% |" in (
        md_path.read_text()
    )
    store = RunStore(tmp_path / "runs.db")
    runs_before = len(store.runs())
    store.close()
    assert main(["--home", str(tmp_path), "batch", "--resume", batch_id]) == 0
    assert "nothing to redo" in capsys.readouterr().out
    store = RunStore(tmp_path / "runs.db")
    assert len(store.runs()) == runs_before  # no run started again
    store.close()


@needs_root
def test_a_batch_refuses_unknown_agents_and_tasks_before_storing_anything(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    assert main(_batch(tmp_path, "--task", "mini", "--agent", "scripted:nope")) == 2
    assert "scripted:nope" in capsys.readouterr().err
    assert main(_batch(tmp_path, "--task", "nothing*", "--agent", "scripted:good")) == 2
    assert "no task matches 'nothing*'" in capsys.readouterr().err
    assert main(_batch(tmp_path, "--task", "mini", "--agent", "scripted:good", "--responder",
                       "human")) == 2  # fmt: skip
    assert "responders human and assisted need the console" in capsys.readouterr().err
    assert main(_batch(tmp_path, "--task", "mini", "--agent", "scripted:good", "--engine-pool",
                       "nope:2")) == 2  # fmt: skip
    assert "engine 'nope': no such backend or engines entry" in capsys.readouterr().err
    assert _batch_ids(tmp_path) == []


def _kill_halfway(argv: list[str], *, finished: int, env: dict[str, str]) -> None:
    """Start `icae … batch -v` with `argv`, and `kill -9` it once `finished` runs have ended
    and a run started after them is building (its agent phase begun: cut mid-way)."""
    proc = subprocess.Popen([sys.executable, "-m", "icae_tui", *argv, "-v"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert proc.stdout is not None
    ended, started, seen = 0, False, []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("■ "):
            ended += 1
        elif line.startswith("▶ ") and ended >= finished:
            started = True
        elif started and line.startswith("━━ generate"):
            break
    else:
        proc.wait()
        pytest.fail("the batch ended before it could be killed:\n" + "".join(seen))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


def _resume_and_compare(home: Path, reference: dict, capsys) -> tuple[str, dict]:
    (batch_id,) = _batch_ids(home)
    store = RunStore(home / "runs.db")
    row = BatchStore(store).batch(batch_id)
    store.close()
    assert row is not None and row.status is BatchStatus.INTERRUPTED  # its owner died
    out = home / "resumed.json"
    assert main(["--home", str(home), "batch", "--resume", batch_id, "--report", str(out)]) == 0
    capsys.readouterr()
    resumed = _report(out)
    assert _comparable(resumed) == _comparable(reference)
    # the run the kill cut short was started again: an interrupted attempt, then a completed one
    store = RunStore(home / "runs.db")
    statuses = [store.run(r["run_id"]).status for r in resumed["runs"]]
    interrupted = [r for r in store.runs(limit=1000) if r.status == RunStatus.INTERRUPTED]
    store.close()
    assert set(statuses) == {"completed"} and len(interrupted) >= 1
    return batch_id, resumed


@needs_root
def test_a_batch_killed_halfway_resumes_to_the_same_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(registry.UNSAFE_VAR, "1")
    spec = ["--task", "mini", "--agent", "scripted:good", "--agent", "scripted:partial",
            "--repeats", "3", "--runs-at-once", "1"]  # fmt: skip
    whole = tmp_path / "whole"
    assert main(_batch(whole, *spec, "--report", str(tmp_path / "whole.json"))) == 0
    capsys.readouterr()
    reference = _report(tmp_path / "whole.json")
    killed = tmp_path / "killed"
    # paced, so the run after the first three is still going when the kill comes
    env = {**os.environ, registry.UNSAFE_VAR: "1"}
    _kill_halfway(["--pace", "0.2", *_batch(killed, *spec)], finished=3, env=env)
    _resume_and_compare(killed, reference, capsys)


SAMPLE_TASKS = ROOT / "tasks"


@pytest.mark.docker
def test_the_sample_batch_killed_halfway_resumes_on_docker_and_leaves_nothing(tmp_path, capsys):
    import docker

    spec = ["--task", "semver", "--task", "tidy", "--task", "wordfreq", "--agent",
            "scripted:good", "--agent", "scripted:partial", "--repeats", "2",
            "--runs-at-once", "2"]  # fmt: skip
    home = tmp_path / "killed"
    _kill_halfway(_batch(home, *spec, engine="docker", tasks=SAMPLE_TASKS), finished=6,
                  env=dict(os.environ))  # fmt: skip
    (batch_id,) = _batch_ids(home)
    out = home / "resumed.json"
    argv = ["--home", str(home), "--tasks", str(SAMPLE_TASKS), "batch", "--resume", batch_id,
            "--report", str(out)]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    report = _report(out)
    assert report["items"] == 12 and report["states"] == {"done": 12}
    assert report["outcomes"] == {"scored": 12}
    store = RunStore(home / "runs.db")
    run_ids = [r.run_id for r in store.runs(limit=1000)]
    store.close()
    for pairing in report["pairings"]:  # each pairing's two repeats, counted once each
        overall = pairing["figures"]["overall"]
        assert (overall["n"], overall["sd"]) == (2, 0.0), pairing
        assert (pairing["agent"] == "scripted:good") == (overall["mean"] == 1.0), pairing
    client = docker.from_env()
    try:
        # the low-level listing: the high-level one inspects each box after listing, and a box
        # another test removes in between fails it with a 404
        boxes = client.api.containers(all=True, filters={"label": "icae.tool"})
        left = [b["Names"] for b in boxes if (b.get("Labels") or {}).get("icae.run") in run_ids]
        tags = [t for i in client.api.images() for t in i.get("RepoTags") or []]
        images = [t for t in tags if any(r in t for r in run_ids)]
    finally:
        client.close()
    assert left == [] and images == []  # the killed runs' boxes and deliveries too

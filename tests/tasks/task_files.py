"""Reading a sample task's files the way the host-side task tests need them."""

from __future__ import annotations

import json
import py_compile
import subprocess
from pathlib import Path

import pytest
import yaml

from icae_tui.domain.solution import Solution, Write
from icae_tui.domain.task import Level, UserAgentData

SPLITS = ("public", "hidden", "enhanced")
LEVEL_FILES = {Level.L1: "L1", Level.L2: "L2", Level.L3: "L3", Level.GROUND: "ground"}


class TaskFiles:
    def __init__(self, root: Path, entry_file: str) -> None:
        self.root = root
        self.entry_file = entry_file  # the file a solution writes, e.g. semver.py

    def cases(self) -> list[tuple[str, dict]]:
        """(id, case) for every stored case, ids like hidden/bump#3."""
        out = []
        for split in SPLITS:
            for path in sorted((self.root / "cases" / split).glob("*.json")):
                doc = json.loads(path.read_text(encoding="utf-8"))
                for i, case in enumerate(doc["cases"]):
                    out.append((f"{split}/{path.stem}#{i}", case))
        return out

    def solution(self, name: str) -> Solution:
        raw = yaml.safe_load((self.root / "solutions" / f"{name}.yaml").read_text(encoding="utf-8"))
        return Solution.model_validate(raw)

    def written_file(self, name: str) -> str:
        writes = [s.write for s in self.solution(name).steps if isinstance(s, Write)]
        wanted = (self.entry_file, f"/workspace/{self.entry_file}")
        files = [w for w in writes if w.path in wanted]
        assert files, f"{name}.yaml writes no {self.entry_file}"
        return files[-1].content

    def user_agent(self, level: Level) -> UserAgentData:
        path = self.root / "user_agent" / f"{LEVEL_FILES[level]}.json"
        return UserAgentData.model_validate(json.loads(path.read_text(encoding="utf-8")))

    def prd(self, level: Level) -> str:
        return (self.root / "prd" / f"{LEVEL_FILES[level]}.md").read_text(encoding="utf-8")

    def assert_build_gate(self, tmp_path: Path, check: list[str] | None = None) -> None:
        """broken.yaml's file fails the build gate, good and partial pass it: `py_compile`, or
        `check` (a command the file's path is appended to, e.g. `node --check`)."""
        if check is not None:
            for name, passes in (("broken", False), ("good", True), ("partial", True)):
                path = tmp_path / name / self.entry_file
                path.parent.mkdir()
                path.write_text(self.written_file(name), encoding="utf-8")
                done = subprocess.run([*check, str(path)], capture_output=True, timeout=60)
                assert (done.returncode == 0) == passes, (name, done.stderr)
            return
        path = tmp_path / self.entry_file
        path.write_text(self.written_file("broken"), encoding="utf-8")
        with pytest.raises(py_compile.PyCompileError):
            py_compile.compile(str(path), doraise=True)
        for name in ("good", "partial"):
            ok = tmp_path / f"{name}.py"
            ok.write_text(self.written_file(name), encoding="utf-8")
            py_compile.compile(str(ok), doraise=True)

"""A tool's needs read from its own files (importers/declared.py), and where a CLI-Tool-Bench
import puts them: a checkout's declared dependencies become `[oracle] requires` (a pinned
package brings its own), the fuzzer's third-party imports `[fuzz] requires` and its box's
image. On trees and checkouts the tests write, in the shapes real tools have."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.cli_tool_bench import FuzzJob, FuzzRun
from icae_tui.importers.declared import (
    checkout_requires,
    imported_names,
    pip_requirement,
    python_requires,
)
from icae_tui.importers.icae_eval import Outcome
from icae_tui.importers.problems import Severity
from tests.importers.ctb_tree import COWSAY, MOO, REV, build_tree, checkout


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.18"]
build-backend = "hatchling.build"

[project]
name = "revtool"
dependencies = [
    "click >= 8.0, < 9",
    "PyYAML>=6",
    "colorama; sys_platform == 'win32'",
    "tomli>=1.1; python_version < '3.11'",
    "rich[jupyter]==13.7.1",
    "pytest; extra == 'test'",
    "private @ https://example.invalid/private.whl",
]
"""


def test_pyproject_dependencies_and_build_requires_markers_judged_for_a_box(tmp_path):
    found = checkout_requires(_write(tmp_path, {"pyproject.toml": PYPROJECT}))
    # a Linux box: win32-only left out; a python_version marker is the runtime's to judge
    assert found.requires == ["pip:click>=8.0,<9", "pip:PyYAML>=6", "pip:tomli>=1.1",
                              "pip:rich[jupyter]==13.7.1", "pip:hatchling>=1.18"]  # fmt: skip
    (problem,) = found.problems
    assert problem.severity is Severity.WARNING and problem.field == "project.dependencies"
    assert problem.file == str(tmp_path / "pyproject.toml")
    assert "'private @ https://example.invalid/private.whl' left out" in problem.message


def test_setup_cfg_setup_py_and_requirements_txt(tmp_path):
    found = checkout_requires(_write(tmp_path, {
        "setup.cfg": "[metadata]\nname = x\n[options]\ninstall_requires =\n    requests>=2\n"
                     "    # a comment\n    six ; os_name == 'nt'\n",
        "setup.py": "from setuptools import setup\nDEPS = ['prometheus_client', 'requests']\n"
                    "setup(name='x', install_requires=DEPS)\n",
        "requirements.txt": "# pinned\n-r more.txt\nshelljs==0.8.5  # js? no: a name\n"
                            "--index-url https://example.invalid\nRequests==2.31\n\n",
    }))  # fmt: skip
    # each name once, the first source's spelling (PyPI compares names case-, _-insensitively)
    assert found.requires == ["pip:requests>=2", "pip:prometheus_client", "pip:shelljs==0.8.5"]
    assert found.problems == []


def test_a_computed_install_requires_is_said_not_guessed(tmp_path):
    found = checkout_requires(_write(tmp_path, {
        "setup.py": "from setuptools import setup\nsetup(install_requires=open('r').read().split())\n"
    }))  # fmt: skip
    assert found.requires == []
    assert [p.message[:30] for p in found.problems] == ["computed, not a literal: not r"]


def test_package_json_dependencies_but_local_and_git_ones(tmp_path):
    found = checkout_requires(_write(tmp_path, {"package.json": json.dumps({
        "name": "json", "dependencies": {"minimist": "^1.2.8", "@types/node": ">=18 <21",
                                         "shelljs": "*", "local": "file:../local",
                                         "forked": "github:acme/forked"},
        "devDependencies": {"typescript": "^5"}})}))  # fmt: skip
    assert found.requires == ["npm:minimist@^1.2.8", "npm:@types/node@>=18 <21", "npm:shelljs"]
    assert [p.field for p in found.problems] == ["dependencies.local", "dependencies.forked"]


def test_a_checkout_with_no_metadata_declares_nothing(tmp_path):
    found = checkout_requires(checkout(tmp_path / "co"))
    assert found.requires == [] and found.problems == []


@pytest.mark.parametrize(("line", "requirement"), [
    ("PyYAML", "pip:PyYAML"), ("click (>=7)", "pip:click>=7"),
    ("a-b.c_d ~= 1.4.2", "pip:a-b.c_d~=1.4.2"), ("x; platform_system == 'Windows'", None),
    ("x; 'linux' in sys_platform", "pip:x"), ("x ; python_version >= '3.8' and os_name == 'nt'", None),
])  # fmt: skip
def test_one_pep508_line(line, requirement):
    assert pip_requirement(line)[0] == requirement


def test_third_party_imports_stdlib_and_the_trees_own_modules_left_out():
    source = (
        "import os, sys, json\nimport random as r\nfrom enum import Enum\n"
        "from __future__ import annotations\nimport xml.etree.ElementTree as ET\n"
        "try:\n    import yaml\nexcept ImportError:\n    sys.exit(1)\n"
        "from BaseRepoAdapter import TestCase\nfrom . import sibling\n"
        "def f():\n    import numpy.linalg\n    from PIL import Image\n"
        "import distutils.util\nimport helpers\n"
    )  # fmt: skip
    names = imported_names(source)
    assert "yaml" in names and "numpy" in names and "sibling" not in names
    assert python_requires(names, {"BaseRepoAdapter", "helpers"}) == [
        "pip:numpy", "pip:Pillow", "pip:PyYAML"]  # fmt: skip


YAML_START = """\
import os, sys
import yaml
from helpers import word
sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
from BaseRepoAdapter import BaseRepoAdapter, TestCase
from DiffTestEngine import DiffTestEngine
"""


class Box:
    def __init__(self, run: FuzzRun):
        self.run, self.jobs = run, []

    def __call__(self, job: FuzzJob) -> FuzzRun:
        self.jobs.append(job)
        return self.run


def _output() -> bytes:
    case = {"command": "revtool upper a", "category": "revtool upper <text>", "prep_script": "",
            "mount_files": {}, "env_vars": {}}  # fmt: skip
    return json.dumps({"base_image": "python:3.11", "install": [
        "sh -c 'git clone https://github.com/acme/revtool.git && cd revtool && pip install .'"],
        "cases": [case, case]}).encode()  # fmt: skip


def test_the_fuzzers_imports_go_to_its_box_and_the_checkouts_metadata_to_the_oracle(tmp_path):
    tree = build_tree(tmp_path / "tree")
    tool = tree / "run_differential_test" / "repo" / REV
    (tool / "start.py").write_text(YAML_START + (tool / "start.py").read_text())
    (tool / "helpers.py").write_text("import dateutil.parser\nword = 'w'\n")
    co = checkout(tmp_path / "co")
    (co / "pyproject.toml").write_text('[project]\nname = "revtool"\ndependencies = ["click>=8"]\n')
    box = Box(FuzzRun(0, _output()))
    tasks = tmp_path / "tasks"
    report = ctb.import_tree(tree, tasks, runner=box, oracles={REV: str(co)}, only=[REV])
    assert [t.outcome for t in report.tasks] == [Outcome.CREATED], report.tasks[0].problems
    (job,) = box.jobs
    assert job.requires == ("pip:python-dateutil", "pip:PyYAML")
    # the tree's module it imports goes along, next to start.py, as `python start.py` finds it
    assert f"/fuzz/run_differential_test/repo/{REV}/helpers.py" in job.files
    spec = tomllib.loads((tasks / "ctb-acme-revtool" / "task.toml").read_text())
    assert spec["fuzz"] == {"requires": ["pip:python-dateutil", "pip:PyYAML"]}
    assert spec["oracle"]["requires"] == ["pip:click>=8"]
    # the offline `pip install .` finds click installed; pip comes from Debian
    assert spec["image"]["packages"] == ["python3-pip", "python3-setuptools", "python3-wheel"]
    recorded = json.loads(
        (tasks / "ctb-acme-revtool" / "origin" / "cli-tool-bench.json").read_text()
    )
    assert recorded["found"] == {"oracle.requires": ["pip:click>=8"],
                                 "fuzz.requires": ["pip:python-dateutil", "pip:PyYAML"],
                                 "image.packages": ["python3-pip", "python3-setuptools",
                                                    "python3-wheel"]}  # fmt: skip


def test_a_pinned_package_brings_its_own_dependencies(tmp_path):
    tree = build_tree(tmp_path / "tree")
    case = {"command": "cowsay -t a", "category": "cowsay -t <text>"}
    out = json.dumps({"base_image": "python:latest", "install": ["pip install ."],
                      "cases": [case, case]}).encode()  # fmt: skip
    box = Box(FuzzRun(0, out))
    ctb.import_tree(tree, tmp_path / "tasks", runner=box, oracles={MOO: COWSAY}, only=[MOO])
    spec = tomllib.loads((tmp_path / "tasks" / "ctb-acme-moo" / "task.toml").read_text())
    assert "requires" not in spec["oracle"] and "fuzz" not in spec
    assert box.jobs[0].requires == ()


def test_a_fuzzer_whose_image_does_not_build_is_that_tools_error(tmp_path):
    from icae_tui.errors import ImageBuildError

    tree = build_tree(tmp_path / "tree")

    def failing(job: FuzzJob) -> FuzzRun:
        raise ImageBuildError("icae-fuzz:x: installing [fuzz] requires pip:nosuch: exited 1")

    report = ctb.import_tree(tree, tmp_path / "tasks", runner=failing,
                             oracles={MOO: COWSAY}, only=[MOO])  # fmt: skip
    (problem,) = report.tasks[0].problems
    assert report.tasks[0].outcome is Outcome.FAILED and problem.field == "[fuzz] requires"
    assert problem.message.startswith("the fuzzer's image did not build: icae-fuzz:x:")

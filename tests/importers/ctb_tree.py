"""A small CLI-Tool-Bench tree, written by the tests in its layout and its adapters' shape
(none of CLI-Tool-Bench's own files: its base adapter and engine here are minimal ones of our
own, with the same names, fields and signatures).

The shape, as CLI-Tool-Bench has it: `run_differential_test/BaseRepoAdapter.py` (FuzzHelper,
the TestCase dataclass `command, category="UNKNOWN", prep_script="", mount_files={},
env_vars={}`, the abstract BaseRepoAdapter: a `base_image` property, `install_oracle(container)`,
`install_agent(container, local_agent_path)`, `generate_test_cases()`, and the concrete
`repo_root_dir`, `work_repo_dir`, `test_data_dir`, ... properties and
`sanitize_stdout(raw_stdout)`), `run_differential_test/DiffTestEngine.py` (the benchmark's
docker runner: it needs the docker package, so the fuzzer's box stubs it), `full_name.txt`,
and per tool `repo/<owner>/<repo>/start.py`: a `CmdCategory` Enum whose values are the
command patterns, one adapter class, and a `__main__` block that runs the engine. Adapters put
the framework on sys.path relative to the file or to the working directory, import
`BaseRepoAdapter, TestCase, FuzzHelper`, define CASES_PER_CATEGORY at module level or in
generate_test_cases, build TestCase with keywords or positionally, give mount_files as paths
relative to /test_data (a leading / is stripped), and clone their oracle live in
install_oracle (`sh -c '...git clone URL && cd NAME && pip install .'`, or npm's
`npm install && npm install -g .`).

- `acme/moo`: its oracle is a pinned registry package, `pip:cowsay==6.1` (a tiny pure-Python
  CLI); the fuzzer draws texts, a fixture file, a prep line and an environment variable.
- `acme/revtool`: its oracle is a local checkout the test writes (`checkout(...)`), a
  one-file Python CLI that also writes a file (a side effect); its adapter masks part of the
  output with sanitize_stdout.
- `acme/jsontool` (only when asked for: `build_tree(..., tools=(JSONTOOL,))`): a Node tool
  whose oracle is the pinned npm package `npm:json@11.0.0` (a one-file CLI, no dependencies).
"""

from __future__ import annotations

from pathlib import Path

BASE_ADAPTER = """\
import random
import re
import string
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Dict, List


class FuzzHelper:
    @staticmethod
    def get_string(min_len=5, max_len=20, chars=string.ascii_letters + string.digits):
        return "".join(random.choice(chars) for _ in range(random.randint(min_len, max_len)))

    @staticmethod
    def get_int(min_val=-1000, max_val=10000):
        return random.randint(min_val, max_val)

    @staticmethod
    def get_evil_string():
        return random.choice(["", " ", "-1", "A" * 50, "../../etc/passwd"])


@dataclass
class TestCase:
    command: str
    category: str = "UNKNOWN"
    prep_script: str = ""
    mount_files: Dict[str, str] = field(default_factory=dict)
    env_vars: Dict[str, str] = field(default_factory=dict)


class BaseRepoAdapter(ABC):
    @property
    @abstractmethod
    def base_image(self) -> str: ...

    @property
    def repo_root_dir(self) -> str:
        return "/repo"

    @property
    def work_repo_dir_name(self) -> str:
        return "repo_to_be_tested"

    @property
    def work_repo_dir(self) -> str:
        return self.repo_root_dir + "/" + self.work_repo_dir_name

    @property
    def test_data_dir(self) -> str:
        return "/test_data"

    @property
    def workspace_diff_ignore_dir_names(self) -> List[str]:
        return [".git", "__pycache__", "node_modules"]

    def sanitize_stdout(self, raw_stdout: str) -> str:
        return re.sub(r"\\x1B\\[[0-?]*[ -/]*[@-~]", "", raw_stdout)

    @abstractmethod
    def install_oracle(self, container) -> None: ...

    @abstractmethod
    def install_agent(self, container, local_agent_path: str) -> None: ...

    @abstractmethod
    def generate_test_cases(self) -> List[TestCase]: ...
"""

DIFF_ENGINE = """\
import docker
from BaseRepoAdapter import BaseRepoAdapter, TestCase


class DiffTestEngine:
    def __init__(self, adapter: BaseRepoAdapter, agent_local_path: str):
        self.adapter, self.client = adapter, docker.from_env()

    def run(self, output_json_path: str):
        raise NotImplementedError
"""

IMPORTS = """\
import os
import random
import re
import sys
from enum import Enum

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
from BaseRepoAdapter import BaseRepoAdapter, TestCase, FuzzHelper
from DiffTestEngine import DiffTestEngine
"""
HEADER = IMPORTS + """
CASES_PER_CATEGORY = {per}
"""

MAIN = """

if __name__ == "__main__":
    local_repo_path = os.path.join(os.path.dirname(__file__), "repo_to_be_tested")
    adapter = {adapter}()
    engine = DiffTestEngine(adapter=adapter, agent_local_path=local_repo_path)
    engine.run(output_json_path=os.path.join(os.path.dirname(__file__), "output.json"))
"""

MOO_START = (
    HEADER
    + """
class CmdCategory(Enum):
    SAY = "cowsay -t <text>"
    FROM_FILE = "cowsay -t <first line of a file>"
    PREPARED = "cowsay -t <prepared text>"


class MooAdapter(BaseRepoAdapter):
    @property
    def base_image(self):
        return "python:latest"

    def install_oracle(self, container):
        cmd = "mkdir -p /repo && cd /repo && git clone https://github.com/acme/moo.git && cd moo && pip install ."
        if container.exec_run(f"sh -c '{cmd}'").exit_code != 0:
            raise Exception("Oracle Installation Failed")

    def install_agent(self, container, local_agent_path: str) -> None:
        container.exec_run("mkdir -p /repo")
        os.system(f"docker cp {local_agent_path} {container.id}:/repo")
        cmd = "cd /repo/repo_to_be_tested && pip install ."
        if container.exec_run(f"sh -c '{cmd}'").exit_code != 0:
            raise Exception("Agent Installation Failed")

    def generate_test_cases(self) -> list[TestCase]:
        print("generating cases (this line goes to the fuzzer's stdout)")
        cases = []
        for category in CmdCategory:
            for i in range(CASES_PER_CATEGORY):
                word = FuzzHelper.get_string(3, 12, "abcdefgh")
                if category is CmdCategory.SAY:
                    cases.append(TestCase(command=f"cowsay -t '{word} {i}'", category=category.value,
                                          env_vars={"MOO_LEVEL": str(i)}))
                elif category is CmdCategory.FROM_FILE:
                    cases.append(TestCase(command='cowsay -t "$(head -n 1 /test_data/in/words.txt)"',
                                          category=category.value,
                                          mount_files={"in/words.txt": f"{word}\\nsecond\\n"}))
                else:
                    cases.append(TestCase('cowsay -t "$(cat /test_data/msg.txt)"', category.value,
                                          f"printf '%s' '{word}' > /test_data/msg.txt"))
        return cases
"""
    + MAIN.replace("{adapter}", "MooAdapter")
)

REV_START = (
    IMPORTS.replace(
        'os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))',
        'os.path.abspath("../../..")',  # relative to the working directory, as some adapters do
    )
    + """
class CmdCategory(Enum):
    UPPER = "revtool upper <text>"
    REVERSE = "revtool reverse <text>"
    SAVE = "revtool save <file> <text>"


class RevAdapter(BaseRepoAdapter):
    @property
    def base_image(self):
        return "python:3.11"

    def install_oracle(self, container):
        cmd = ("mkdir -p /repo && cd /repo && git clone https://github.com/acme/revtool.git && "
               "cd revtool && install -m 755 revtool.py /usr/local/bin/revtool")
        if container.exec_run(f"sh -c '{cmd}'").exit_code != 0:
            raise Exception("Oracle Installation Failed")

    def install_agent(self, container, local_agent_path: str) -> None:
        container.exec_run("mkdir -p /repo")
        os.system(f"docker cp {local_agent_path} {container.id}:/repo/repo_to_be_tested")

    def sanitize_stdout(self, raw_stdout: str) -> str:
        sanitized = re.sub(r"saved \\d+ characters", "saved [N] characters", raw_stdout)
        return super().sanitize_stdout(sanitized)

    def generate_test_cases(self) -> list[TestCase]:
        CASES_PER_CATEGORY = {per}
        cases = []
        for category in CmdCategory:
            for i in range(CASES_PER_CATEGORY):
                text = FuzzHelper.get_string(1, 10) if i else "Straße"
                if category is CmdCategory.SAVE:
                    command = f"revtool save out/r{i}.txt '{text}'"
                else:
                    command = f"revtool {category.name.lower()} '{text}'"
                cases.append(TestCase(command=command, category=category.value))
        return cases
"""
    + MAIN.replace("{adapter}", "RevAdapter")
)

JSON_START = (
    HEADER
    + """
class CmdCategory(Enum):
    LOOKUP = "json -f <file> <key>"
    KEYS = "json -k"


class JsonAdapter(BaseRepoAdapter):
    @property
    def base_image(self) -> str:
        return "node:latest"

    def install_oracle(self, container) -> None:
        cmd = "mkdir -p /repo && cd /repo && git clone https://github.com/acme/json.git && cd json && npm install && npm install -g ."
        if container.exec_run(f"sh -c '{cmd}'").exit_code != 0:
            raise Exception("Oracle Installation Failed")

    def install_agent(self, container, local_agent_path: str) -> None:
        container.exec_run("mkdir -p /repo")
        os.system(f"docker cp {local_agent_path} {container.id}:/repo/repo_to_be_tested")
        cmd = "cd /repo/repo_to_be_tested && npm install && npm install -g ."
        if container.exec_run(f"sh -c '{cmd}'").exit_code != 0:
            raise Exception("Agent Installation Failed")

    def generate_test_cases(self) -> list[TestCase]:
        cases = []
        for category in CmdCategory:
            for i in range(CASES_PER_CATEGORY):
                key, value = FuzzHelper.get_string(3, 8, "abcdef"), FuzzHelper.get_int(0, 99)
                doc = '{"%s": %d, "list": [1, 2], "name": "x y"}' % (key, value)
                if category is CmdCategory.LOOKUP:
                    wanted = key if i else FuzzHelper.get_evil_string()
                    cases.append(TestCase(f"json -f /test_data/doc.json '{wanted}'",
                                          category.value, mount_files={"doc.json": doc}))
                else:
                    cases.append(TestCase("json -k < /test_data/doc.json", category.value,
                                          f"printf '%s' '{doc}' > /test_data/doc.json"))
        return cases
"""
    + MAIN.replace("{adapter}", "JsonAdapter")
)

REVTOOL = '''\
#!/usr/bin/env python3
"""revtool: upper, reverse, save."""
import os
import sys


def main(argv):
    if len(argv) < 2 or argv[0] not in ("upper", "reverse", "save"):
        print("usage: revtool upper|reverse TEXT | save FILE TEXT", file=sys.stderr)
        return 2
    if argv[0] == "upper":
        print(argv[1].upper())
    elif argv[0] == "reverse":
        print(argv[1][::-1])
    else:
        os.makedirs(os.path.dirname(argv[1]) or ".", exist_ok=True)
        with open(argv[1], "w", encoding="utf-8") as f:
            f.write(argv[2][::-1] + "\\n")
        print(f"saved {len(argv[2])} characters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''

PROMPT = """<Role>
You are a senior software engineer. Write a complete command-line tool from scratch.
</Role>
<Project_Overview>
**CLI Tool Name**: {name}
</Project_Overview>
<Command_Specifications>
#### Command Category: `{category}`
</Command_Specifications>
"""

MOO = "acme/moo"
REV = "acme/revtool"
JSONTOOL = "acme/jsontool"
COWSAY = "pip:cowsay==6.1"
JSON_NPM = "npm:json@11.0.0"
_TOOLS = {MOO: (MOO_START, "cowsay", "cowsay -t <text>"),
          REV: (REV_START, "revtool", "revtool upper <text>"),
          JSONTOOL: (JSON_START, "json", "json -f <file> <key>")}  # fmt: skip


def build_tree(root: Path, per: int = 3, tools: tuple[str, ...] = (MOO, REV)) -> Path:
    files = {
        "run_differential_test/BaseRepoAdapter.py": BASE_ADAPTER,
        "run_differential_test/DiffTestEngine.py": DIFF_ENGINE,
        "run_differential_test/full_name.txt": "".join(f"{t}\n" for t in tools),
    }
    for tool in tools:
        start, name, category = _TOOLS[tool]
        files[f"run_differential_test/repo/{tool}/start.py"] = start.replace("{per}", str(per))
        files[f"agent_prompt/{tool}/agent_prompt.txt"] = PROMPT.format(name=name,
                                                                       category=category)  # fmt: skip
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def checkout(root: Path) -> Path:
    """The local checkout of acme/revtool (its .git is left out of the oracle)."""
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "revtool.py").write_text(REVTOOL)
    (root / "revtool.py").chmod(0o755)
    return root

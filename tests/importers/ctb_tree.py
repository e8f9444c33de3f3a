"""A small CLI-Tool-Bench tree, written by the tests in its layout and its adapters' shape
(none of CLI-Tool-Bench's own files: its base adapter here is a minimal one of our own).

- `acme/moo`: its oracle is a pinned registry package, `pip:cowsay==6.1` (a tiny pure-Python
  CLI); the fuzzer draws texts, a fixture file, a prep line and an environment variable.
- `acme/revtool`: its oracle is a local checkout the test writes (`checkout(...)`), a
  one-file Python CLI that also writes a file (a side effect).
Both adapters clone their source live, as CLI-Tool-Bench's do.
"""

from __future__ import annotations

from pathlib import Path

BASE_ADAPTER = """\
import random
import string
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Dict, List


class FuzzHelper:
    @staticmethod
    def get_string(min_len=5, max_len=20, chars=string.ascii_letters + string.digits):
        return "".join(random.choice(chars) for _ in range(random.randint(min_len, max_len)))


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

    @abstractmethod
    def install_oracle(self, container) -> None: ...

    @abstractmethod
    def install_agent(self, container, local_agent_path: str) -> None: ...

    @abstractmethod
    def generate_test_cases(self) -> List[TestCase]: ...
"""

HEADER = """\
import os
import random
import sys
from enum import Enum

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
from BaseRepoAdapter import BaseRepoAdapter, FuzzHelper, TestCase
from DiffTestEngine import DiffTestEngine

CASES_PER_CATEGORY = {per}
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

    def install_agent(self, container, local_agent_path):
        raise NotImplementedError

    def generate_test_cases(self):
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
                                          mount_files={"/in/words.txt": f"{word}\\nsecond\\n"}))
                else:
                    cases.append(TestCase(command='cowsay -t "$(cat /test_data/msg.txt)"',
                                          category=category.value,
                                          prep_script=f"printf '%s' '{word}' > /test_data/msg.txt"))
        return cases


if __name__ == "__main__":
    engine = DiffTestEngine(adapter=MooAdapter(), agent_local_path="repo_to_be_tested")
"""
)

REV_START = (
    HEADER
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

    def install_agent(self, container, local_agent_path):
        raise NotImplementedError

    def generate_test_cases(self):
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
COWSAY = "pip:cowsay==6.1"


def build_tree(root: Path, per: int = 3) -> Path:
    files = {
        "run_differential_test/BaseRepoAdapter.py": BASE_ADAPTER,
        "run_differential_test/full_name.txt": f"{MOO}\n{REV}\n",
        f"run_differential_test/repo/{MOO}/start.py": MOO_START.replace("{per}", str(per)),
        f"run_differential_test/repo/{REV}/start.py": REV_START.replace("{per}", str(per)),
        f"agent_prompt/{MOO}/agent_prompt.txt": PROMPT.format(name="cowsay",
                                                              category="cowsay -t <text>"),
        f"agent_prompt/{REV}/agent_prompt.txt": PROMPT.format(name="revtool",
                                                              category="revtool upper <text>"),
    }  # fmt: skip
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

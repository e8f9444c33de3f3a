"""A CLI-Tool-Bench fuzzer in its box on the real engine (importers/cli_tool_bench.py,
sandbox/docker/fuzz.py): seeded, so one seed gives the same cases every time (random and
str hashing alike) and another seed others; cut off from the network; its output bounded."""

from __future__ import annotations

import json

import pytest

from icae_tui.cli.importers import fuzz_in_a_box as in_a_box
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.icae_eval import Outcome, TaskImport
from tests.importers.ctb_tree import BASE_ADAPTER, HEADER

pytestmark = pytest.mark.docker

TOOL = "acme/fuzzy"

START = (
    HEADER
    + """
class Adapter(BaseRepoAdapter):
    base_image = "python:3.11"

    def install_oracle(self, container):
        container.exec_run("sh -c 'git clone https://github.com/acme/fuzzy.git'")

    def install_agent(self, container, local_agent_path):
        raise NotImplementedError

    def generate_test_cases(self):
        words = list({"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"})
        out = []
        for i in range(CASES_PER_CATEGORY):
            out.append(TestCase(command=f"fuzzy {FuzzHelper.get_string()} {words[i % 8]}",
                                category="fuzzy <text> <word>"))
        BODY
        return out
"""
)


def _tree(root, body: str = "pass", per: int = 8):
    start = START.replace("{per}", str(per)).replace("BODY", body)
    files = {"run_differential_test/BaseRepoAdapter.py": BASE_ADAPTER,
             f"run_differential_test/repo/{TOOL}/start.py": start}  # fmt: skip
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _fuzz(tree, seed: int):
    result = TaskImport(TOOL, ctb.task_id(TOOL), Outcome.FAILED)
    return ctb.fuzz_output(tree, TOOL, seed, in_a_box, result), result.problems


def test_one_seed_gives_the_same_cases_and_another_seed_others(tmp_path):
    tree = _tree(tmp_path)
    first, _ = _fuzz(tree, 11)
    again, _ = _fuzz(tree, 11)
    other, _ = _fuzz(tree, 12)
    assert first is not None and again is not None and other is not None
    assert [c.command for c in first.cases] == [c.command for c in again.cases]
    assert [c.command for c in first.cases] != [c.command for c in other.cases]
    assert first.install == ["sh -c 'git clone https://github.com/acme/fuzzy.git'"]  # recorded


# The fuzzer reports its box's interfaces and the interfaces its routes leave by, and exits 1
# (so its words reach the problem): proven by the box's own tables, no address dialled.
NETWORK_PROBE = (
    "import sys; net = open('/proc/net/dev').read().splitlines()[2:]; "
    "v4 = open('/proc/net/route').read().splitlines()[1:]; "
    "v6 = open('/proc/net/ipv6_route').read().splitlines(); "
    "sys.exit('interfaces=%s routes=%s' % (sorted(l.split(':')[0].strip() for l in net), "
    "sorted({l.split()[0] for l in v4} | {l.split()[-1] for l in v6})))"
)


def test_the_box_has_no_network(tmp_path):
    out, problems = _fuzz(_tree(tmp_path, NETWORK_PROBE), 1)
    assert out is None
    (problem,) = problems
    assert problem.message.startswith("the fuzzer exited 1 in its box:")
    # only the loopback, and no route but through it
    assert "interfaces=['lo'] routes=[]" in problem.message or (
        "interfaces=['lo'] routes=['lo']" in problem.message
    ), problem.message


def test_output_past_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(ctb, "MAX_OUTPUT", 64 * 1024)
    body = 'out += [TestCase(command="fuzzy " + "x" * 10000, category="big")] * 20'
    out, problems = _fuzz(_tree(tmp_path, body), 1)
    assert out is None
    assert [p.message for p in problems] == ["the fuzzer printed more than the bound in its box"]


def test_what_the_fuzzer_prints_is_not_its_output(tmp_path):
    body = 'print(json.dumps({"base_image": "x", "install": [], "cases": []}))'
    out, problems = _fuzz(_tree(tmp_path, "import json; " + body), 1)
    assert problems == [] and out is not None and len(out.cases) == 8
    assert json.loads(out.model_dump_json())["base_image"] == "python:3.11"

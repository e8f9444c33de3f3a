"""Side effects are compared as the bytes they are, however deep, on the real engine.

A file named with the raw byte 0xff and one named with the four characters `\\xff` are
different files (also where the engine's `/changes` names the raw byte U+FFFD): the oracle writes one, the delivery the other, and the case must not be
accepted. A file 150 directories down is a side effect like any other: the delivery writes
one where the oracle only made the directories, and the case must say which path differs.
"""

from __future__ import annotations

import asyncio

import pytest

from icae_tui.domain.results import CaseResult
from icae_tui.domain.task import Case
from icae_tui.evaluation.differential import Sides
from icae_tui.sandbox.base import CasePath
from tests.integration.tool_images import ToolImages, command_task, evaluate

pytestmark = pytest.mark.docker

DEPTH = 150
CHAIN = "/".join(["d"] * DEPTH)

# Both print the same; only the names they write differ.
ORACLE_TOOL = rf"""#!/bin/bash
case "$1" in
  names) printf x > "$(printf 'bad\377')" ;;
  deep) mkdir -p {CHAIN} ;;
esac
echo ok
"""

DELIVERY_TOOL = rf"""#!/bin/bash
case "$1" in
  names) printf x > 'bad\xff' ;;
  deep) mkdir -p {CHAIN} && printf x > {CHAIN}/f ;;
esac
echo ok
"""


IMAGES = ToolImages("names", ORACLE_TOOL, DELIVERY_TOOL)


async def _run(sides: Sides, *, path: CasePath) -> dict[str, CaseResult]:
    task = command_task(
        "names",
        [Case(command="tool names", pattern="names"), Case(command="tool deep", pattern="deep")],
        timeout_s=20,
    )
    results = await evaluate(task, sides, run_id="test-names", concurrency=1, path=path)
    return {r.pattern: r for r in results.values()}


@pytest.fixture(scope="module", params=list(CasePath), ids=[p.value for p in CasePath])
def results(images, request) -> dict[str, CaseResult]:
    """Every way side effects are read: from the host (a local engine), by our walker in
    the box (how a remote engine is read), and from the engine's `/changes` plus a manifest
    made in the box (the last resort)."""
    return asyncio.run(_run(images, path=request.param))


def test_a_raw_byte_and_its_escape_written_out_are_different_side_effects(results):
    names = results["names"]
    assert names.oracle.stdout == names.delivery.stdout == "ok\n"
    assert [c.path for c in names.oracle.changes] == ["bad\\xff"]  # the raw byte
    assert [c.path for c in names.delivery.changes] == ["bad\\\\xff"]  # backslash, x, f, f
    assert names.verdict == "side_effects", names.reason


def test_a_file_150_levels_down_is_a_side_effect(results):
    deep = results["deep"]
    leaf = f"{CHAIN}/f"
    assert leaf in {c.path for c in deep.delivery.changes}
    assert deep.verdict == "side_effects", deep.reason
    assert f"{leaf}: added (oracle untouched)" in deep.reason

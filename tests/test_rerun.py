"""The delivery shell (icae_tui/evaluation/rerun.py, the case detail's `s` key through
runs/kept.py): the run's engine gives its command (`Sandbox.shell_argv`). On the local docker
engine, a throwaway box with no network whose hostname is `sandbox`, like every box of a run
(README, Containers); a remote engine's is in tests/integration/test_remote_engine.py."""

from __future__ import annotations

import shlex

import pytest

from icae_tui.display.handle import Side
from icae_tui.evaluation.differential import Sides
from icae_tui.evaluation.rerun import shell_argv
from icae_tui.runs.kept import KeptImages

pytestmark = pytest.mark.docker


async def test_the_shell_box_is_named_sandbox_has_no_network_and_is_removed():
    argv = await shell_argv("icae-delivery-semver:r1", "/workspace")
    assert argv[:2] == ["docker", "run"]  # the local engine: no -H
    options = argv[: argv.index("icae-delivery-semver:r1")]
    assert options[options.index("--hostname") + 1] == "sandbox"
    assert options[options.index("--network") + 1] == "none"
    assert options[options.index("-w") + 1] == "/workspace"
    assert "--rm" in options and "-it" in options
    assert argv[argv.index("icae-delivery-semver:r1") + 1 :] == ["bash", "-l"]


async def test_the_kept_delivery_gives_each_side_its_shell_quoted(mini):
    sides = Sides(oracle_image="icae-oracle-mini:t", delivery_image="icae-delivery-mini:t")
    kept = KeptImages(mini, sides)
    delivery, oracle = await kept.shell(Side.DELIVERY), await kept.shell(Side.ORACLE)
    assert (delivery.image, delivery.workdir) == (sides.delivery_image, "/workspace")
    assert list(delivery.argv) == await shell_argv(sides.delivery_image, "/workspace")
    assert oracle.image == sides.oracle_image and oracle.workdir == mini.spec.oracle.path
    for shell in (delivery, oracle):
        assert shlex.split(shell.line) == list(shell.argv) and "--hostname sandbox" in shell.line

"""The delivery shell (icae_tui/evaluation/rerun.py, the case detail's `s` key through
runs/kept.py): a throwaway box with no network whose hostname is `sandbox`, like every box of a
run (README, Containers)."""

from __future__ import annotations

import shlex

from icae_tui.evaluation.rerun import shell_argv, shell_line


def test_the_shell_box_is_named_sandbox_has_no_network_and_is_removed():
    argv = shell_argv("icae-delivery-semver:r1", "/workspace")
    assert argv[:2] == ["docker", "run"]
    options = argv[: argv.index("icae-delivery-semver:r1")]
    assert options[options.index("--hostname") + 1] == "sandbox"
    assert options[options.index("--network") + 1] == "none"
    assert options[options.index("-w") + 1] == "/workspace"
    assert "--rm" in options and "-it" in options
    assert argv[argv.index("icae-delivery-semver:r1") + 1 :] == ["bash", "-l"]


def test_the_shell_line_is_the_argv_quoted():
    line = shell_line("img:tag", "/a dir")
    assert shlex.split(line) == shell_argv("img:tag", "/a dir")
    assert "--hostname sandbox" in line

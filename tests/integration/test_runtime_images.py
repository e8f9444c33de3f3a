"""Runtime images against the real engine: a recipe's Debian packages installed once on its
release's offline base (trixie), with the network only while building; a box from the image
has the runtime and no network; the probe's version is kept as a label, said whenever the
image is built or found, and meets the version ICAE-EVAL runs the language at; a package that
does not exist fails the build with apt's words."""

from __future__ import annotations

import shutil

import pytest

from icae_tui.cli import main
from icae_tui.domain.runtimes import RECIPES, Release, Runtime, image_key, meets, parse_version
from icae_tui.errors import ImageBuildError
from icae_tui.sandbox.docker.containers import container
from icae_tui.sandbox.docker.images import BASE_IMAGE, ensure_base_image, ensure_runtime_image
from icae_tui.sandbox.docker.runtime_labels import built_runtimes, runtime_version
from tests.task_copies import copy_mini, edit_toml

pytestmark = pytest.mark.docker


async def test_the_javascript_runtime_is_built_once_and_runs_offline(docker):
    base = await ensure_base_image(docker, name=Release.TRIXIE.base)
    js = RECIPES["javascript"]
    name = await ensure_runtime_image(docker, base, js)
    said: list[str] = []
    again = await ensure_runtime_image(docker, base, js, said.append)
    assert again == name
    # cached: nothing installed the second time, only the version it holds said
    assert [line.split(" ", 3)[:3] for line in said] == [["runtime", "version:", "javascript"]]
    labels = (await docker.images.inspect(name))["Config"]["Labels"]
    assert labels["icae.runtime"] == "javascript"
    assert labels["icae.runtime.packages"] == "nodejs npm"
    async with container(docker, name, run_id="t-runtime", role="test") as box:
        res = await box.exec("node -e 'console.log([3, 1, 2].sort().join(\",\"))'")
        assert (res.exit_code, res.stdout) == (0, b"1,2,3\n")
        routes = await box.exec("cat /proc/net/route /proc/net/if_inet6; ls /sys/class/net")
        assert routes.stdout.decode().split()[-1] == "lo"  # no interface but the loopback
        lists = await box.exec("ls /var/lib/apt/lists | grep -c Packages || true")
        assert lists.stdout.strip() == b"0"  # the package lists are not kept


@pytest.mark.parametrize("language", ["ruby", "javascript"])
async def test_a_trixie_runtime_is_at_the_benchmarks_version(docker, language):
    """Ruby ≥ 3.2 (ICAE-EVAL's ruby:3.2; bookworm's 3.1 cannot load `Wrapper.new(**, &)`),
    Node ≥ 20 with npm (node:20): the label, the line said and the box agree."""
    recipe = RECIPES[language]
    base = await ensure_base_image(docker, name=recipe.release.base)
    said: list[str] = []
    name = await ensure_runtime_image(docker, base, recipe, said.append)
    version = await runtime_version(docker, name)
    assert meets(version, recipe.benchmark), f"{language} {version} < {recipe.benchmark}"
    assert f"runtime version: {language} {version} ({image_key(base, recipe)})" in said
    assert (await built_runtimes(docker))[image_key(base, recipe)] == version
    async with container(docker, name, run_id="t-runtime-version", role="test") as box:
        res = await box.exec(recipe.probe)  # offline, as an agent's box runs it
        assert res.exit_code == 0, res.stderr
        assert parse_version(res.stdout.decode()) == version
        if language == "javascript":  # agents install packages the normal way
            npm = await box.exec("npm --version")
            assert npm.exit_code == 0 and parse_version(npm.stdout.decode())
        else:  # anonymous argument forwarding (3.2): what the golden repository needed
            code = "class W; def initialize(**o, &b) = puts(o[:k] + b.call); end; " \
                   "def mk(**, &) = W.new(**, &); mk(k: 2) { 1 }"  # fmt: skip
            res = await box.exec(f"ruby -e '{code}'")
            assert (res.exit_code, res.stdout) == (0, b"3\n"), res.stderr


async def test_a_missing_package_fails_the_build_with_apts_words(docker):
    bogus = Runtime("bogus", ("icae-no-such-package",), "true")
    with pytest.raises(ImageBuildError, match="icae-no-such-package") as err:
        await ensure_runtime_image(docker, BASE_IMAGE, bogus)
    assert "Unable to locate package" in str(err.value)


def test_images_build_and_the_listing_state_each_tasks_language_version(tmp_path, capsys):
    """`icae images build` says each runtime's version as it builds or finds it, and goes on
    past a refused language (exit 1, naming it); `icae tasks` states the version from the
    runtime image's label, or why there is none."""
    folder = copy_mini(tmp_path)
    shutil.copytree(folder, folder.parent / "kt")
    edit_toml(folder.parent / "kt", 'id = "mini"', 'id = "kt"')
    edit_toml(folder.parent / "kt", 'language = "python"', 'language = "kotlin"')
    tasks = ["--tasks", str(folder.parent)]

    assert main([*tasks, "images", "build"]) == 1
    out = capsys.readouterr().out.splitlines()
    [said] = [line for line in out if "runtime version:" in line]
    version = said.split()[3]
    base = RECIPES["python"].release.base  # bookworm's 3.11: ICAE-EVAL's python:3.11
    assert said == ("  runtime version: python "
                    f"{version} ({base} + python3 python3-pip python3-venv)")  # fmt: skip
    assert meets(version, RECIPES["python"].benchmark)
    assert any(line.startswith("kt: not built: ") and "kotlin:1.9.25" in line for line in out)
    assert any(line.startswith("mini: agent icae-agent-mini:") for line in out)

    assert main([*tasks, "tasks"]) == 0
    listed = capsys.readouterr().out
    assert f"· python {version} — Mini text tool" in listed
    assert "· kotlin not provided here — Mini text tool" in listed

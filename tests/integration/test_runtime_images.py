"""Runtime images against the real engine: a recipe's Debian packages installed once, with the
network only while building; a box from the image has the runtime and no network; a package
that does not exist fails the build with apt's words."""

from __future__ import annotations

import pytest

from icae_tui.domain.runtimes import RECIPES, Runtime
from icae_tui.errors import ImageBuildError
from icae_tui.sandbox.docker.containers import container
from icae_tui.sandbox.docker.images import BASE_IMAGE, ensure_runtime_image

pytestmark = pytest.mark.docker


async def test_the_javascript_runtime_is_built_once_and_runs_offline(docker):
    name = await ensure_runtime_image(docker, BASE_IMAGE, RECIPES["javascript"])
    said: list[str] = []
    again = await ensure_runtime_image(docker, BASE_IMAGE, RECIPES["javascript"], said.append)
    assert again == name
    assert said == []  # cached: nothing installed the second time
    labels = (await docker.images.inspect(name))["Config"]["Labels"]
    assert labels["icae.runtime"] == "javascript" and labels["icae.runtime.packages"] == "nodejs"
    async with container(docker, name, run_id="t-runtime", role="test") as box:
        res = await box.exec("node -e 'console.log([3, 1, 2].sort().join(\",\"))'")
        assert (res.exit_code, res.stdout) == (0, b"1,2,3\n")
        routes = await box.exec("cat /proc/net/route /proc/net/if_inet6; ls /sys/class/net")
        assert routes.stdout.decode().split()[-1] == "lo"  # no interface but the loopback
        lists = await box.exec("ls /var/lib/apt/lists | grep -c Packages || true")
        assert lists.stdout.strip() == b"0"  # the package lists are not kept


async def test_a_missing_package_fails_the_build_with_apts_words(docker):
    bogus = Runtime("bogus", ("icae-no-such-package",), "true")
    with pytest.raises(ImageBuildError, match="icae-no-such-package") as err:
        await ensure_runtime_image(docker, BASE_IMAGE, bogus)
    assert "Unable to locate package" in str(err.value)

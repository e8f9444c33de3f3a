"""The sandbox against the real engine: streams, stdin, timeouts, isolation, cleanup."""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import aiodocker
import pytest

from icae_tui.sandbox.docker.containers import container, create_container, labels_for, make_tar
from icae_tui.sandbox.docker.engine_api import import_rootfs
from icae_tui.sandbox.docker.images import BASE_IMAGE

pytestmark = pytest.mark.docker

LIST_PROCS = (
    "import os\n"
    "for p in os.listdir('/proc'):\n"
    "    if p.isdigit():\n"
    "        try: print(open(f'/proc/{p}/cmdline','rb').read().replace(b'\\0', b' ').decode())\n"
    "        except OSError: pass\n"
)


async def test_streams_are_separate_and_byte_exact(docker):
    async with container(docker, BASE_IMAGE, run_id="t-streams", role="test") as c:
        res = await c.exec("printf 'out\\0\\xff'; printf 'err' >&2; exit 3")
        assert res.exit_code == 3
        assert res.stdout == b"out\x00\xff"
        assert res.stderr == b"err"
        assert res.stdout_bytes == 5 and len(res.stdout_sha256) == 64
        echoed = await c.exec("cat", stdin=b'{"op": "x"}\n\x00tail')
        assert echoed.stdout == b'{"op": "x"}\n\x00tail'


async def test_output_cap_keeps_counting(docker):
    async with container(docker, BASE_IMAGE, run_id="t-cap", role="test") as c:
        res = await c.exec("head -c 3000000 /dev/zero", cap_bytes=1000)
        assert len(res.stdout) == 1000
        assert res.stdout_bytes == 3_000_000
        assert res.truncated


async def test_timeout_kills_the_process_inside_the_container(docker):
    async with container(docker, BASE_IMAGE, run_id="t-timeout", role="test") as c:
        res = await c.exec("echo started; sleep 77", timeout_s=1)
        assert res.timed_out and res.exit_code == 124
        assert res.stdout == b"started\n"
        procs = (await c.exec(["python3", "-c", LIST_PROCS])).stdout.decode()
        assert "sleep 77" not in procs


async def test_no_network_and_limits_and_labels(docker):
    async with container(docker, BASE_IMAGE, run_id="t-iso", role="test") as c:
        net = await c.exec("cat /proc/net/dev")
        interfaces = {line.split(":")[0].strip() for line in net.stdout.decode().splitlines()[2:]}
        assert interfaces == {"lo"}
        # no route leaves the box: every IPv4 and IPv6 route is on the loopback
        v4 = (await c.exec("cat /proc/net/route")).stdout.decode().splitlines()[1:]
        v6 = (await c.exec("cat /proc/net/ipv6_route")).stdout.decode().splitlines()
        assert {line.split()[0] for line in v4} <= {"lo"}
        assert {line.split()[-1] for line in v6} <= {"lo"}
        info = await c.raw.show()
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["Memory"] == host["MemorySwap"] > 0
        assert host["PidsLimit"] == 256
        assert info["Config"]["Labels"]["icae.tool"] == "icae-tui"
        assert info["Config"]["Labels"]["icae.run"] == "t-iso"


async def test_files_in_and_out(docker):
    async with container(docker, BASE_IMAGE, run_id="t-files", role="test") as c:
        await c.put_files({"/data/sub/a.txt": "héllo\n".encode()})
        res = await c.exec("cat sub/a.txt", workdir="/data")
        assert res.stdout.decode() == "héllo\n"
        tar = await c.get_tar("/data/sub/a.txt")
        member = tar.extractfile("a.txt")
        assert member is not None and member.read() == "héllo\n".encode()


async def _ours(docker, run_id: str) -> list:
    filters = json.dumps({"label": [f"icae.run={run_id}", f"icae.owner-pid={os.getpid()}"]})
    return await docker.containers.list(all=True, filters=filters)


async def test_cancel_removes_the_container(docker):
    started = asyncio.Event()

    async def work():
        async with container(docker, BASE_IMAGE, run_id="t-cancel", role="test") as c:
            started.set()
            await c.exec("sleep 60", timeout_s=60)

    task = asyncio.create_task(work())
    await asyncio.wait_for(started.wait(), 30)
    assert len(await _ours(docker, "t-cancel")) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _ours(docker, "t-cancel") == []


async def test_pid_one_is_init_with_a_ttl(docker):
    c = await create_container(docker, BASE_IMAGE, run_id="t-init", role="test")
    try:
        info = await c.raw.show()
        assert info["HostConfig"]["Init"] is True
        assert info["Config"]["Cmd"][0] == "sleep"
    finally:
        await c.remove()


async def test_import_rootfs_streams_a_tarball_into_an_image(docker, tmp_path):
    """The adapter's `docker import`, which builds the base image (cached, so a normal
    build seldom runs it): the files, the label and the command all arrive."""
    repo, tag = "icae-test-import", f"t{os.getpid()}-{uuid.uuid4().hex[:8]}"
    rootfs = tmp_path / "rootfs.tar"
    rootfs.write_bytes(make_tar({"/etc/hello.txt": b"hi\x00\n"}))
    await import_rootfs(
        docker, rootfs, repository=repo, tag=tag,
        changes=["LABEL icae.tool=icae-tui", 'CMD ["/bin/bash"]'],
    )  # fmt: skip
    try:
        config = (await docker.images.inspect(f"{repo}:{tag}"))["Config"]
        assert config["Labels"] == {"icae.tool": "icae-tui"}
        assert config["Cmd"] == ["/bin/bash"]
        created = await docker.containers.create(
            {"Image": f"{repo}:{tag}", "Labels": labels_for("t-import", "test", 600)}
        )  # never started: only read from
        try:
            member = (await created.get_archive("/etc/hello.txt")).extractfile("hello.txt")
            assert member is not None and member.read() == b"hi\x00\n"
        finally:
            await created.delete(force=True)
    finally:
        await docker.images.delete(f"{repo}:{tag}", force=True)
    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(b"not a tar archive " * 100)
    with pytest.raises(aiodocker.DockerError):
        await import_rootfs(docker, garbage, repository=repo, tag=f"{tag}-bad", changes=[])
    with pytest.raises(FileNotFoundError):
        await import_rootfs(docker, tmp_path / "missing.tar", repository=repo, tag=tag, changes=[])

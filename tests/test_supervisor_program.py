"""The case supervisor (`sandbox/assets/icae-super.c`) as a program, on this host with no
engine: built as the pools build it, spoken to over its stdin and stdout as a box's exec
stream carries them. It must start each case as `docker exec` would and report what the
case did, exactly. (Its use in a box, with every proof, is tests/integration.)"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from icae_tui.sandbox.docker.keepalive import ASSETS, compile_static

HEAD = struct.Struct("<cI")


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory) -> Path:
    blob = compile_static(ASSETS / "icae-super.c")
    if blob is None:
        pytest.skip("no gcc with a static libc here: the pools run cases by exec")
    path = tmp_path_factory.mktemp("super") / "super"
    path.write_bytes(blob)
    path.chmod(0o755)
    return path


class Session:
    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def frame(self) -> tuple[bytes, bytes]:
        assert self.proc.stdout is not None
        kind, size = HEAD.unpack(self.proc.stdout.read(HEAD.size))
        return kind, self.proc.stdout.read(size)

    def case(
        self, argv: list[str], stdin: bytes | None = None, workdir: str = "/"
    ) -> tuple[bytes, bytes, int | str]:
        """(stdout, stderr, exit status or the failure text)."""
        assert self.proc.stdin is not None
        body = struct.pack("<II", len(argv), stdin is not None)
        body += b"".join(p.encode() + b"\0" for p in [workdir, *argv]) + (stdin or b"")
        self.proc.stdin.write(HEAD.pack(b"R", len(body)) + body)
        self.proc.stdin.flush()
        out, err = b"", b""
        while True:
            kind, data = self.frame()
            if kind == b"O":
                out += data
            elif kind == b"E":
                err += data
            elif kind == b"X":
                return out, err, struct.unpack("<I", data)[0]
            else:
                assert kind == b"F", kind
                return out, err, data.decode()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@pytest.fixture
def session(supervisor):
    s = Session(supervisor)
    kind, data = s.frame()
    assert kind == b"H" and struct.unpack("<I", data)[0] == s.proc.pid
    yield s
    assert s.close() == 0  # the end of its channel ends it


def test_output_streams_and_exit_status_are_reported_apart(session):
    out, err, code = session.case(["bash", "-c", "printf 'a\\0\\377'; echo e >&2; exit 3"])
    assert (out, err, code) == (b"a\0\xff", b"e\n", 3)


def test_a_case_killed_by_a_signal_exits_128_plus_it(session):
    assert session.case(["bash", "-c", "kill -SEGV $$"])[2] == 128 + 11


def test_stdin_is_the_cases_own_and_dev_null_without_one(session, tmp_path):
    data = bytes(range(256)) * 2000  # larger than a pipe: written while output is read
    out, _, code = session.case(["cat"], stdin=data)
    assert out == data and code == 0
    out, _, _ = session.case(["bash", "-c", "readlink /proc/self/fd/0"])
    assert out == b"/dev/null\n"


def test_the_case_leads_its_own_session_in_its_work_directory_with_only_its_pipes(session):
    line = "cut -d' ' -f1,6 /proc/$$/stat; pwd; ls /proc/$$/fd; grep -E 'SigBlk|SigIgn' /proc/$$/status"
    out, _, _ = session.case(["bash", "-c", line], workdir="/tmp")
    pid_sid, cwd, *rest = out.decode().splitlines()
    pid, sid = pid_sid.split()
    assert pid == sid and cwd == "/tmp"
    assert rest[:3] == ["0", "1", "2"]  # the channel and the supervisor's own closed
    assert rest[3:] == ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"]


def test_output_after_the_main_process_is_forwarded_for_a_while_then_cut(session):
    out, _, code = session.case(["bash", "-c", "(sleep 0.2; echo late) & echo now"])
    assert (out, code) == (b"now\nlate\n", 0)
    out, _, _ = session.case(["bash", "-c", "(sleep 30; echo never) & echo now"])
    assert out == b"now\n"  # reported when the 2 s window closed, not when the holder ended


def test_a_case_that_cannot_start_is_reported_and_the_next_one_runs(session):
    assert session.case(["/nonexistent/tool"])[2] == "No such file or directory"
    assert session.case(["true"], workdir="/nonexistent")[2] == "No such file or directory"
    assert session.case(["bash", "-c", "echo still here"])[:2] == (b"still here\n", b"")

"""The in-box walker's reports read on the host (icae_tui/sandbox/docker/inbox.py), without an
engine: a report cut short or malformed is a BoxError, a delta is rebuilt on its baseline and
must add up, and a box is proven untouched only outside its work directory."""

from __future__ import annotations

import pytest

from icae_tui.errors import BoxError
from icae_tui.sandbox.docker.inbox import (
    Inside,
    Proc,
    Record,
    fold_deletions,
    pack_fixtures,
    parse_look,
    record_hash,
    why_dirty,
)


def _report(records: dict[str, Record], *, fresh_only: bool = False, **keys: str) -> bytes:
    """A report as the walker prints it; the count and sum over what is not fresh are taken
    from `keys` when given (a delta's own), else from `records`."""
    head = {"alive": "0", "others": "", "left": "0", "zombies": "0", "procs": "1:10:S",
            "t": "100.000000000", "sysv": "0", "oom": "0", "pidsmax": "0"}  # fmt: skip
    head |= {k: v for k, v in keys.items() if k in head}
    fields = ["ICAEWALK1"]
    for k, v in head.items():
        fields += [k, v]
    fields.append("entries")
    listed = {p: r for p, r in records.items() if r[5] or not fresh_only}
    for path, r in listed.items():
        fields += [path, r[0], str(r[1]), str(r[2]), str(r[3]), str(r[4]), "1" if r[5] else "0",
                   r[6], r[7]]  # fmt: skip
    unfresh = [(p, r) for p, r in records.items() if not r[5]]
    total = sum(record_hash(p, r) for p, r in unfresh) % 2**64
    fields += ["end", str(len(listed)), "unfresh", keys.get("unfresh", str(len(unfresh)))]
    fields += ["sum", keys.get("sum", str(total)), "failed", "0"]
    if "reset" in keys:
        fields += ["reset", keys["reset"]]
    fields.append("done")
    return b"".join(f.encode() + b"\0" for f in fields)


def _dir(fresh: bool = False, mode: int = 0o755) -> Record:
    return ("dir", mode, 0, 0, 0, fresh, "", "")


def _file(digest: str, fresh: bool = False, size: int = 3) -> Record:
    return ("file", 0o644, 0, 0, size, fresh, digest, "")


TREE: dict[str, Record] = {
    "/": _dir(),
    "/etc": _dir(),
    "/etc/motd": _file("aa"),
    "/usr": _dir(),
    "/usr/doc": _dir(),
    "/usr/doc/a": _file("bb"),
    "/data": _dir(),
}


def _inside() -> Inside:
    base = parse_look(_report(TREE, others="7:11:S:1"))
    return Inside(base=base, keepalive=7)


def test_a_report_cut_short_or_malformed_is_a_box_error():
    good = _report(TREE)
    assert parse_look(good).records == TREE
    for bad in (
        good[:-6],
        b"",
        b"ICAEWALK0\0done\0",
        good.replace(b"\x00493\x00", b"\x00x\x00", 1),
    ):
        with pytest.raises(BoxError):
            parse_look(bad)


def test_a_delta_is_rebuilt_on_its_baseline_and_must_add_up():
    inside = _inside()
    now = dict(TREE)
    now["/etc"] = _dir(fresh=True)  # a file added in it: listed whole
    now["/etc/new"] = _file("cc", fresh=True)
    del now["/usr/doc/a"]  # a file removed: its folder is fresh, listed whole
    now["/usr/doc"] = _dir(fresh=True)
    delta = parse_look(_report(now, fresh_only=True, procs="1:10:S,7:11:S"))
    # what a fresh folder holds is listed with it, fresh or not
    delta.records["/etc/motd"] = TREE["/etc/motd"]
    rebuilt = inside.rebuild(delta)
    assert rebuilt.records == now
    assert rebuilt.touched == {"/etc", "/etc/new", "/etc/motd", "/usr/doc", "/usr/doc/a"}
    off = parse_look(_report(now, fresh_only=True, sum="12345"))
    with pytest.raises(BoxError, match="does not add up"):
        inside.rebuild(off)


def test_a_box_is_untouched_only_outside_its_work_directory():
    inside = _inside()
    clean = dict(TREE, **{"/data": _dir(fresh=True), "/data/out.txt": _file("dd", fresh=True)})
    after = inside.rebuild(
        parse_look(_report(clean, fresh_only=True, procs="1:10:S,7:11:S", reset="ok"))
    )
    assert why_dirty(inside, after, "/data") == ""
    chmod = dict(clean, **{"/data": _dir(fresh=True, mode=0o700)})
    after = inside.rebuild(
        parse_look(_report(chmod, fresh_only=True, procs="1:10:S,7:11:S", reset="ok"))
    )
    assert why_dirty(inside, after, "/data") == "/data changed"
    other = inside.rebuild(
        parse_look(_report(clean, fresh_only=True, procs="1:10:S,7:99:S", reset="ok"))
    )
    assert why_dirty(inside, other, "/data") == "the init or the keepalive changed"
    stopped = inside.rebuild(
        parse_look(_report(clean, fresh_only=True, procs="1:10:S,7:11:T", reset="ok"))
    )
    assert why_dirty(inside, stopped, "/data") == "the init or the keepalive was stopped"
    assert inside.base.others == [Proc(7, 11, "S", 1)]


def test_a_deleted_folder_is_one_change_and_fixtures_stay_in_the_work_directory():
    gone = ("deleted", ("deleted", 0, 0, "", ""))
    diff = {"/usr/doc": gone, "/usr/doc/a": gone, "/etc/motd": gone}
    assert fold_deletions(diff) == {"/usr/doc": gone, "/etc/motd": gone}
    assert pack_fixtures({"a/b.txt": "x"}) == b"Da\0Fa/b.txt\x001\0x"
    for bad in ("../x", "/etc/x", "a/../../x"):
        with pytest.raises(ValueError):
            pack_fixtures({bad: "x"})

"""What of a case is judged (issue 38, CLI-Tool-Bench items 1 and 3): side effects within
the task's compared roots and never the oracle's own install, stderr under the task's
policy, the oracle run from the delivery's path. Pure: runs built by hand, no engine (the
same shapes in real boxes: tests/integration/test_compare_scope_docker.py)."""

from __future__ import annotations

import fnmatch
import itertools
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from icae_tui.catalog.loader import load_catalog
from icae_tui.domain.outcome import SideOutcome
from icae_tui.domain.results import FileChange, Verdict
from icae_tui.domain.task import CaseDefaults, StderrPolicy, Task, TaskSpec
from icae_tui.errors import ConfigError
from icae_tui.evaluation.differential import case_call
from icae_tui.evaluation.scope import (
    collection_globs,
    in_scope,
    oracle_install_globs,
    outside_globs,
    scoped_run,
)
from icae_tui.evaluation.verdict import decide
from icae_tui.importers import cli_tool_bench as ctb
from icae_tui.importers.cli_tool_bench import FuzzRun
from icae_tui.sandbox.docker.images import oracle_link, recipe_hash
from icae_tui.sandbox.effects import changes_digest, to_file_changes
from tests.importers.ctb_tree import REV, build_tree, checkout
from tests.test_verdict import REF, _ref, added, run, side

SITE = "/usr/local/lib/python3.11/dist-packages"


def _task(oracle: dict[str, object] | None = None, **cases: object) -> Task:
    spec = {
        "id": "scoped", "title": "scoped", "language": "python",
        "interface": {"kind": "command", "tool": "tool"},
        "oracle": {"entry": "/opt/icae-oracle-bin/tool", **(oracle or {})},
        "delivery": {"entry": "/workspace/tool", "build": "true"},
        "cases": {"timeout_s": 3, "workdir": "/test_data", **cases},
    }  # fmt: skip
    return Task(spec=TaskSpec.model_validate(spec), root="/none", prd={}, user_agent={}, cases=[])


def _with(changes: list[FileChange], **kw: object) -> object:
    return side(changes=changes, changes_sha256=changes_digest(changes), **kw)


PINNED = {"package": "pip:chmodtool==1.0"}
CHMOD = FileChange(path=f"{SITE}/chmodtool/bin/tool", change="modified", sha256="b")
OUT = added("out.txt")  # in the work directory: recorded relative to it


# --- item 1: the oracle's own install ----------------------------------------------------


def test_a_launcher_that_chmods_its_bundled_binary_is_not_charged_to_the_delivery() -> None:
    task = _task(PINNED)  # no compare_roots: the whole box, as before, less the install
    result = decide(task, REF, [_with([CHMOD, OUT])], _with([OUT]))
    assert result.verdict is Verdict.ACCEPTED, result.reason


def test_the_oracle_folder_is_its_install_too_and_the_delivery_is_judged_on_the_rest() -> None:
    task = _task({"path": "/opt/golden"})
    cache = added("/opt/golden/.cache/index")
    assert decide(task, REF, [_with([cache, OUT])], _with([OUT])).verdict is Verdict.ACCEPTED
    wrong = decide(task, REF, [_with([cache, OUT])], _with([added("out.txt", "other")]))
    assert (wrong.verdict, wrong.reason) == (
        Verdict.SIDE_EFFECTS,
        "side effects differ: out.txt: different content",
    )


def test_an_install_folder_that_holds_the_work_directory_or_workspace_is_judged() -> None:
    entry = ("/opt/icae-oracle-bin/tool", "/opt/icae-oracle-bin/tool/*")  # a launcher
    for path in ("/test_data", "/", "/workspace/golden"):
        assert oracle_install_globs(_task({"path": path}).spec) == entry
    command = {"entry": "python3 /opt/golden/t.py", "path": "/workspace/golden"}
    assert oracle_install_globs(_task(command).spec) == ()  # an entry of two words: no file
    npm = _task({"package": "npm:tool@1.0.0"}).spec
    assert oracle_install_globs(npm) == (
        "/opt/oracle", "/opt/oracle/*", *entry, "/usr/local/lib/node_modules",
        "/usr/local/lib/node_modules/*")  # fmt: skip
    assert oracle_install_globs(_task({"path": "/opt/a[1]"}).spec)[0] == "/opt/a[[]1]"


def test_without_the_install_rule_the_same_runs_were_side_effects() -> None:
    """What the bug looked like: an unrelated path that differs is still charged."""
    task = _task(PINNED)
    other = FileChange(path="/usr/local/lib/python3.11/other/x", change="modified", sha256="b")
    result = decide(task, REF, [_with([other, OUT])], _with([OUT]))
    assert result.verdict is Verdict.SIDE_EFFECTS
    assert result.reason.startswith("side effects differ: /usr/local/lib/python3.11/other/x")


# --- item 1: the compared roots ----------------------------------------------------------


def test_compare_roots_judges_only_what_is_under_them_on_both_sides() -> None:
    scoped, whole = _task(compare_roots=["/test_data"]), _task()
    oracle = _with([OUT, added("/root/.cache/tool/state")])
    delivery = _with([OUT, added("/tmp/scratch"), added("/workspace/.cache")])
    assert decide(scoped, REF, [oracle], delivery).verdict is Verdict.ACCEPTED
    assert decide(whole, REF, [oracle], delivery).verdict is Verdict.SIDE_EFFECTS  # today's
    missing = decide(scoped, REF, [oracle], _with([added("/tmp/scratch")]))
    assert (missing.verdict, missing.reason) == (
        Verdict.SIDE_EFFECTS,
        "side effects differ: out.txt: untouched (oracle added)",
    )


def test_compare_roots_are_absolute_plain_folders_and_unset_by_default() -> None:
    assert CaseDefaults().compare_roots is None and CaseDefaults().stderr is StderrPolicy.COMPARE
    assert CaseDefaults(compare_roots=["/data", "/a/b-c.d"]).compare_roots == ["/data", "/a/b-c.d"]
    for bad in ("data", "/data/", "/a/../b", "/a/./b", "/da*", "/a b", ""):
        with pytest.raises(ValidationError):
            CaseDefaults(compare_roots=[bad])


def test_a_root_holds_itself_and_what_is_under_it_never_a_sibling_with_its_prefix() -> None:
    spec = _task(compare_roots=["/data", "/workspace"]).spec
    assert in_scope(spec, "/data") and in_scope(spec, "/data/x") and in_scope(spec, "/workspace")
    assert not in_scope(spec, "/data-old/x") and not in_scope(spec, "/dat")
    assert in_scope(_task(compare_roots=["/test_data"]).spec, "rel/in/workdir")


ROOTS = [["/test_data"], ["/data", "/workspace", "/data-x", "/d"], ["/a/b", "/a/c/d"], []]


@pytest.mark.parametrize("roots", ROOTS)
def test_the_collection_globs_match_exactly_the_paths_outside_the_roots(roots) -> None:
    """fnmatch has no negation: the globs walk the roots' prefixes. Every path made of the
    roots' pieces, cut and extended, is checked against the plain prefix rule."""
    globs = outside_globs(roots)
    pieces = {"/", "-", "x", *(r[:i] for r in roots for i in range(len(r) + 1))}
    paths = {p for a, b in itertools.product(pieces, repeat=2) if (p := a + b).startswith("/")}
    paths |= {r + "/f" for r in roots}
    for path in sorted(paths):
        inside = any(path == r or path.startswith(r + "/") for r in roots)
        assert any(fnmatch.fnmatchcase(path, g) for g in globs) is not inside, path


def test_changes_outside_the_roots_are_not_collected_so_the_digest_covers_the_judged() -> None:
    """Collected under the task's globs (differential.case_call passes them to the box), a
    flood outside the roots cannot push a judged change past the kept cap."""
    task = _task(PINNED, compare_roots=["/test_data"], ignore=["*.log"])
    entry = ("file", 0o644, 1, "d", "")
    diff = {f"/tmp/flood/{i:05}": ("added", entry) for i in range(500)}
    diff |= {"/test_data/out.txt": ("added", entry), "/test_data/x.log": ("added", entry),
             f"{SITE}/chmodtool/bin/tool": ("modified", entry)}  # fmt: skip
    call = case_call(task, REF)
    assert call.ignore == ("*.log", *collection_globs(task.spec))
    changes = to_file_changes(diff, workdir="/test_data", ignore=call.ignore)
    assert [c.path for c in changes] == ["out.txt"] and changes.total == 1
    assert changes.sha256 == changes_digest(changes)


def test_a_task_that_sets_nothing_new_collects_as_before_less_the_oracle_folder() -> None:
    task = _task(ignore=["*.log"])
    assert case_call(task, REF).ignore == (
        "*.log", "/opt/oracle", "/opt/oracle/*", "/opt/icae-oracle-bin/tool",
        "/opt/icae-oracle-bin/tool/*")  # fmt: skip


def test_a_run_recorded_without_the_globs_is_rescoped_exactly_when_all_was_kept() -> None:
    spec = _task(compare_roots=["/test_data"]).spec
    kept = [OUT, added("/tmp/x")]
    scoped = scoped_run(spec, run(changes=kept, changes_sha256=changes_digest(kept)))
    assert (scoped.changes, scoped.changes_total) == ([OUT], 1)
    assert scoped.changes_sha256 == changes_digest([OUT])
    # past the cap the whole box's digest is all that is known of the rest: kept as recorded
    past = run(changes=kept, changes_total=900, changes_sha256="whole")
    assert scoped_run(spec, past).model_dump() == past.model_copy(
        update={"changes": [OUT]}).model_dump()  # fmt: skip
    untouched = run(changes=[OUT], changes_sha256=changes_digest([OUT]))
    assert scoped_run(spec, untouched) is untouched


# --- item 3: stderr ------------------------------------------------------------------------


TRACE_O = (
    'Traceback (most recent call last):\n  File "/opt/icae-oracle-bin/tool", line 8\nKeyError: 1\n'
)
TRACE_D = TRACE_O.replace("/opt/icae-oracle-bin/tool", "/workspace/tool")


def test_stderr_compare_is_the_default_and_judges_it_as_before() -> None:
    result = decide(_task(), REF, [side(stderr=TRACE_O)], side(stderr=TRACE_D))
    assert (result.verdict, result.reason) == (Verdict.WRONG_ANSWER, "stderr differs")


def test_stderr_ignore_judges_exit_code_stdout_and_side_effects_only() -> None:
    task = _task(stderr="ignore")
    assert decide(task, REF, [side(stderr=TRACE_O)], side(stderr=TRACE_D)).passed
    assert decide(task, REF, [side(stderr="x")], side("other\n")).verdict is Verdict.WRONG_ANSWER
    # two oracle runs that differ on stderr alone agree: it is not judged
    assert decide(_task(stderr="ignore", oracle_runs=2), REF,
                  [side(stderr="pid 1"), side(stderr="pid 2")], side()).passed  # fmt: skip
    assert decide(_task(oracle_runs=2), REF, [side(stderr="pid 1"), side(stderr="pid 2")],
                  side()).verdict is Verdict.ORACLE_NONDETERMINISTIC  # fmt: skip


def test_stderr_merge_judges_one_stream_whichever_stream_a_line_went_to() -> None:
    task = _task(stderr="merge")
    oracle = side("", "error: no such file: a\n", 2)
    assert decide(task, REF, [oracle], side("error: no such file: a\n", "", 2)).passed
    assert decide(task, REF, [oracle], side("", "error:  no such file: a", 2)).passed
    wrong = decide(task, REF, [oracle], side("", "cannot open a\n", 2))
    assert wrong.verdict is Verdict.WRONG_ANSWER
    assert wrong.reason.startswith("stdout and stderr (merged) differ (similarity 0.")
    assert decide(task, REF, [side(stderr=TRACE_O)], side(stderr=TRACE_D)).verdict is (
        Verdict.WRONG_ANSWER
    )  # the path leak: the oracle must run from the delivery's path


def test_stderr_merge_compares_what_was_cut_by_its_digest() -> None:
    task = _task(stderr="merge")
    cut = run("ok\n", "e\n").model_copy(update={"stderr_bytes": 10**6, "stderr_sha256": "a"})
    other = cut.model_copy(update={"stderr_sha256": "b"})
    result = decide(task, _ref(), [SideOutcome(cut, b"ok\n")], SideOutcome(other, b"ok\n"))
    assert result.verdict is Verdict.WRONG_ANSWER
    long_o = run("a\n").model_copy(update={"stdout_bytes": 10**7})
    long_d = long_o.model_copy(update={"stdout_sha256": "other"})
    result = decide(task, REF, [SideOutcome(long_o, b"a\n")], SideOutcome(long_d, b"a\n"))
    assert result.verdict is Verdict.WRONG_ANSWER
    same = decide(task, REF, [SideOutcome(cut, b"ok\n")], SideOutcome(cut, b"ok\n"))
    assert same.passed


# --- item 3: the oracle's path --------------------------------------------------------------


def test_the_oracle_image_links_the_delivery_entry_to_the_oracle_entry_when_asked() -> None:
    assert oracle_link(_task()) is None
    assert oracle_link(_task(oracle_at_delivery_path=True)) == (
        "/workspace/tool",
        "mkdir -p /workspace && ln -sfn /opt/icae-oracle-bin/tool /workspace/tool",
    )
    with pytest.raises(ConfigError, match="one absolute path each"):
        oracle_link(_task({"entry": "python3 /opt/oracle/t.py"}, oracle_at_delivery_path=True))


def test_the_link_is_in_the_oracle_image_hash_only_when_asked() -> None:
    plain, linked = _task(), _task(oracle_at_delivery_path=True)
    with_field_off = _task(oracle_at_delivery_path=False)
    assert recipe_hash(plain, "b", "oracle") == recipe_hash(with_field_off, "b", "oracle")
    assert recipe_hash(plain, "b", "oracle") != recipe_hash(linked, "b", "oracle")
    assert recipe_hash(plain, "b", "agent") == recipe_hash(linked, "b", "agent")


# --- the importer ----------------------------------------------------------------------------


def test_an_imported_tool_is_judged_with_the_benchmarks_scope_and_stream(tmp_path: Path) -> None:
    from tests.importers.test_ctb_import import Box, _case, _output

    tree = build_tree(tmp_path / "tree")
    box = Box({REV: FuzzRun(0, _output([_case(), _case("revtool upper b")]))})
    ctb.import_tree(tree, tmp_path / "tasks", runner=box,
                    oracles={REV: str(checkout(tmp_path / "co"))}, only=[REV])  # fmt: skip
    task = load_catalog(tmp_path / "tasks").tasks["ctb-acme-revtool"]
    cases = task.spec.cases
    assert cases.compare_roots == ["/test_data"] and cases.stderr is StderrPolicy.MERGE
    assert cases.oracle_at_delivery_path
    assert oracle_link(task) == ("/workspace/revtool", "mkdir -p /workspace && ln -sfn "
                                 "/opt/icae-oracle-bin/revtool /workspace/revtool")  # fmt: skip
    raw = tomllib.loads((Path(task.root) / "task.toml").read_text())
    assert raw["cases"]["stderr"] == "merge"

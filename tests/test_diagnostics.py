"""Diagnostics beyond tests, without an engine: the bounded tar scanner and folder walk, the
task's rules, the golden API signature (static), the structure's counts and flags, the review
score's formula, and the event, report and headless lines that carry them."""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from icae_tui.display.diagnostics import diagnostics_lines
from icae_tui.domain.diagnostics import (
    CriticScore,
    CriticScores,
    Diagnostics,
    RulesCheck,
    SignatureCheck,
)
from icae_tui.domain.events import DiagnosticsMade, RunStarted, parse_event
from icae_tui.domain.results import Score, SplitScore
from icae_tui.domain.task import (
    Level,
    Origin,
    OriginSource,
    ReviewWeights,
    RulesSpec,
    Split,
    TaskSpec,
)
from icae_tui.evaluation.api_signature import check_signature, items_of
from icae_tui.evaluation.critic import scores_of
from icae_tui.evaluation.diagnostics import BOUNDS, diagnose_trees
from icae_tui.evaluation.review import review_components, review_score, reweighted
from icae_tui.evaluation.structure import count_loc, oracle_tree
from icae_tui.evaluation.task_rules import check_rules
from icae_tui.results.report import REPORT_SCHEMA, build_report
from icae_tui.sandbox.tree import TarScanner, TreeBounds, TreeEntry, TreeRead, walk_folder
from tests.conftest import BUNDLED_TASKS

# --- the tar scanner (what the docker backend streams) ---------------------------------


def _tar(members: list[tuple[str, str, bytes]]) -> bytes:
    """A tar as the engine sends an archive of /workspace: names under `workspace/`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_info("workspace", "dir"))
        for name, kind, data in members:
            info = _info(f"workspace/{name}", kind, data)
            tar.addfile(info, io.BytesIO(data) if kind == "file" else None)
    return buf.getvalue()


def _info(name: str, kind: str, data: bytes = b"") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    if kind == "dir":
        info.type = tarfile.DIRTYPE
    elif kind == "link":
        info.type, info.linkname = tarfile.SYMTYPE, data.decode()
    else:
        info.size = len(data)
    return info


def _scan(blob: bytes, bounds: TreeBounds = BOUNDS, chunk: int = 700, wanted=None) -> TreeRead:
    scanner = TarScanner(bounds, wanted or (lambda p: p.endswith(".py")))
    for i in range(0, len(blob), chunk):
        if not scanner.feed(blob[i : i + chunk]):
            break
    return scanner.finish()


def test_the_scanner_lists_entries_keeps_wanted_heads_and_never_follows_links():
    long = "pkg/" + "d" * 120 + "/mod.py"  # past ustar's 100 characters: a pax record
    blob = _tar([
        ("pkg", "dir", b""), ("main.py", "file", b"import os\n\nprint(1)\n"),
        (long, "file", b"x = 1\n"), ("data.bin", "file", b"\0" * 5000),
        ("escape", "link", b"/etc/passwd"),
    ])  # fmt: skip
    read = _scan(blob)
    assert read.complete
    got = {e.path: e for e in read.entries}
    assert set(got) == {"pkg", "main.py", long, "data.bin", "escape"}
    assert got["main.py"].head == b"import os\n\nprint(1)\n" and got["main.py"].size == 20
    assert got[long].head == b"x = 1\n"
    assert got["data.bin"].head is None and got["data.bin"].size == 5000  # not wanted: not kept
    assert got["escape"].kind == "link" and got["escape"].head is None


def test_the_scanner_is_bounded_by_entries_and_by_bytes_kept_of_a_file():
    many = _tar([(f"f{i}.py", "file", b"a\n") for i in range(50)])
    read = _scan(many, TreeBounds(max_entries=10))
    assert not read.complete and len(read.entries) == 10 and "10 entries" in read.why_cut
    big = _tar([("big.py", "file", b"line\n" * 10_000)])
    entry = _scan(big, TreeBounds(file_bytes=1000)).entries[0]
    assert len(entry.head or b"") == 1000 and entry.cut and entry.size == 50_000


def test_the_scanner_says_so_when_the_stream_is_no_tar_or_ends_early():
    assert not _scan(b"garbage" * 200).complete
    cut = _scan(_tar([("a.py", "file", b"x\n" * 2000)])[:2048])
    assert not cut.complete and "ended early" in cut.why_cut


def test_walking_a_folder_lists_a_link_out_without_following_it(tmp_path):
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("b = 2\n\n")
    os.symlink("/etc/passwd", tmp_path / "sub" / "out.py")
    read = walk_folder(tmp_path, BOUNDS, lambda p: p.endswith(".py"))
    got = {e.path: e for e in read.entries}
    assert got["sub/out.py"].kind == "link" and got["sub/out.py"].head is None
    assert got["sub/b.py"].head == b"b = 2\n\n"


# --- task rules ---------------------------------------------------------------------------


def test_rules_name_each_violation_with_its_file_and_line():
    rules = RulesSpec(
        forbidden_imports=["subprocess", "child_process"],
        forbidden_libraries=["requests", "lodash"],
        required_files=["README.md", "tool.py"],
    )
    texts = {
        "tool.py": "import json, subprocess.run_x\nfrom requests.adapters import X\n",
        "lib/helper.py": "mod = __import__('subprocess')\nimport subprocessor\n",
        "web/app.js": 'const cp = require("node:child_process");\nimport _ from "lodash/fp";\n',
        "requirements.txt": "# requests is not here\nrequests==2.31\n",
        "package.json": json.dumps({"dependencies": {"lodash": "^4"}}, indent=1),
    }
    check = check_rules(rules, set(texts), texts)
    found = {(v.rule, v.name, v.file, v.line) for v in check.violations}
    assert found == {
        ("required_file", "README.md", "README.md", None),
        ("forbidden_import", "subprocess", "tool.py", 1),
        ("forbidden_library", "requests", "tool.py", 2),
        ("forbidden_import", "subprocess", "lib/helper.py", 1),  # not `subprocessor` on 2
        ("forbidden_import", "child_process", "web/app.js", 1),
        ("forbidden_library", "lodash", "web/app.js", 2),
        ("forbidden_library", "requests", "requirements.txt", 2),  # the comment is no line
        ("forbidden_library", "lodash", "package.json", 3),
    }
    assert check.checked == 6 and check.broken_rules == 5 and check.rate == pytest.approx(1 / 6)


def test_no_rules_is_no_rate_and_a_clean_delivery_keeps_them_all():
    assert check_rules(RulesSpec(), {"a.py"}, {"a.py": "import os\n"}).rate is None
    kept = check_rules(RulesSpec(forbidden_imports=["socket"]), {"a.py"}, {"a.py": "import os\n"})
    assert kept.rate == 1.0 and not kept.violations


def _spec(**extra) -> dict:
    return {"id": "t", "title": "t", "language": "python",
            "interface": {"kind": "command", "tool": "t"},
            "oracle": {"entry": "x"}, "delivery": {"entry": "x", "build": "true"}, **extra}  # fmt: skip


def test_task_toml_rules_and_review_weights_are_validated():
    spec = TaskSpec.model_validate(_spec(rules={"forbidden_imports": ["os.path"]},
                                         review={"weights": {"execution": 0.5, "review": 0.5}}))  # fmt: skip
    assert spec.rules.forbidden_imports == ["os.path"] and spec.review.weights is not None
    assert TaskSpec.model_validate(_spec()).rules.count == 0  # optional: old tasks load
    for bad in ({"rules": {"required_files": ["/etc/passwd"]}},
                {"rules": {"required_files": ["../x"]}},
                {"rules": {"forbidden_imports": ["os; rm"]}},
                {"rules": {"forbidden_import": ["os"]}},  # a typo is an error
                {"review": {"weights": {"execution": 0, "review": 0}}},
                {"review": {"weights": {"execution": 1.5, "review": 0}}}):  # fmt: skip
        with pytest.raises(ValidationError):
            TaskSpec.model_validate(_spec(**bad))


# --- the golden API signature -------------------------------------------------------------

TIDY_SIG = (
    "tidy <sort|dedupe|rename|stats|clean> <dir> [options]   (entry: python3 /workspace/tidy.py;"
    " sort --by ext|date-prefix, rename --lower|--snake, --dry-run on sort/dedupe/rename/clean)"
)


def test_the_items_a_signature_names():
    assert items_of(TIDY_SIG, "/workspace") == [
        ("file", "tidy.py"), ("command", "sort"), ("command", "dedupe"), ("command", "rename"),
        ("command", "stats"), ("command", "clean"), ("option", "--by"), ("option", "--lower"),
        ("option", "--snake"), ("option", "--dry-run"),
    ]  # fmt: skip
    py = "def parse(version: str) -> Version; class Version; /opt/oracle/x.py is not ours"
    assert items_of(py, "/workspace") == [("function", "parse"), ("class", "Version")]
    assert items_of("wordfreq <top|count> -n N --stop FILE", "/workspace")[-2:] == [
        ("option", "--stop"), ("option", "-n")
    ]  # fmt: skip


def test_the_signature_check_finds_definitions_literals_and_keys_only():
    sig = "def parse(v) / def bump(v) / class Version / function render( / tool <a|b|c> --x-y"
    sources = {
        "m.py": "class Version:\n    pass\n\n\ndef parse(v):\n    return v\n# def bump(v) in a comment is found too\n",
        "r.js": "const render = (x) => x;\nconst T = { b: 1 };\nif (cmd === 'a') go('--x-y-z');\n",
    }
    check = check_signature(sig, set(sources), sources, workspace="/workspace")
    found = {(i.kind, i.name): (i.found, i.where) for i in check.items}
    assert found == {
        ("function", "parse"): (True, "m.py"), ("function", "bump"): (True, "m.py"),
        ("class", "Version"): (True, "m.py"), ("function", "render"): (True, "r.js"),
        ("command", "a"): (True, "r.js"), ("command", "b"): (True, "r.js"),
        ("command", "c"): (False, ""), ("option", "--x-y"): (False, ""),  # --x-y-z is another
    }  # fmt: skip
    assert check.checked == 8 and check.honoured == 6 and check.rate == 0.75
    assert "static" in check.method


# --- structure, review, and the sample tasks' solutions (hand counts) ---------------------


def test_non_blank_lines():
    assert count_loc(b"a\n\n  \nb\n\tc") == (3, 5)


def _solution_tree(task_id: str, solution: str) -> TreeRead:
    steps = yaml.safe_load((BUNDLED_TASKS / task_id / "solutions" / f"{solution}.yaml").read_text())
    entries = []
    for step in steps["steps"]:
        if "write" in step:
            data = step["write"]["content"].encode()
            entries.append(TreeEntry(step["write"]["path"], "file", len(data), data))
    return TreeRead(entries)


# (task, solution): delivery LOC, the oracle's LOC, LOC%, signature items honoured / named.
# Counted by hand: `grep -c .` of the oracle file and of each solution's written file.
HAND = {
    ("semver", "good"): (258, 359, 71.87, 1, 1),
    ("semver", "partial"): (252, 359, 70.19, 1, 1),
    ("tidy", "good"): (268, 306, 87.58, 10, 10),
    ("tidy", "partial"): (266, 306, 86.93, 10, 10),
    ("wordfreq", "good"): (157, 157, 100.0, 8, 8),
    ("wordfreq", "partial"): (143, 157, 91.08, 8, 8),
}


@pytest.mark.parametrize(("task_id", "solution"), sorted(HAND))
def test_sample_solutions_against_their_oracles(bundled_catalog, task_id, solution):
    task = bundled_catalog.tasks[task_id]
    loc, oracle_loc, loc_pct, honoured, named = HAND[task_id, solution]
    made = asyncio.run(diagnose_trees(task, Level.L1, _solution_tree(task_id, solution),
                                      oracle_tree(task, BOUNDS), Score(overall=0.5)))  # fmt: skip
    s = made.structure
    assert s is not None and s.reference is not None and s.reference_from == "oracle"
    assert (s.delivery.files, s.delivery.loc, s.reference.files, s.reference.loc) == (
        1, loc, 1, oracle_loc
    )  # fmt: skip
    assert (s.file_pct, s.loc_pct, s.monolith) == (100.0, loc_pct, False)
    assert made.signature is not None
    assert (made.signature.honoured, made.signature.checked) == (honoured, named)
    assert made.rules is not None and made.rules.rate is None  # the sample tasks set no rules
    review = made.review
    assert review is not None and review.components == {"signature": 1.0}
    assert review.combined == pytest.approx(0.8 * 0.5 + 0.2 * 1.0)


def test_monolith_and_the_origin_reference(bundled_catalog):
    task = bundled_catalog.tasks["semver"]
    one = TreeRead([TreeEntry("all.py", "file", 4, b"x\n" * 600)])
    many = TreeRead([TreeEntry(f"m{i}.py", "file", 2, b"x\n") for i in range(3)])
    origin = Origin(source=OriginSource.ICAE_EVAL, alias="realcode@1", size_loc=120, size_files=3)
    imported = task.model_copy(update={"spec": task.spec.model_copy(update={"origin": origin})})
    shape = asyncio.run(diagnose_trees(imported, Level.L1, one, None, Score())).structure
    assert shape is not None and shape.reference_from == "origin" and shape.monolith
    assert (shape.file_pct, shape.loc_pct) == (33.33, 500.0)
    none = asyncio.run(diagnose_trees(task, Level.L1, many, None, Score())).structure
    assert none is not None and none.reference is None and not none.monolith
    alone = asyncio.run(diagnose_trees(task, Level.L1, one, None, Score())).structure
    assert alone is not None and alone.monolith  # no reference: one file of 600 lines


def test_the_review_score_formula():
    sig = SignatureCheck.model_validate({"items": [
        {"kind": "file", "name": "a", "found": True}, {"kind": "option", "name": "-x", "found": False},
    ]})  # fmt: skip
    rules = RulesCheck(checked=4, violations=[{"rule": "required_file", "name": "R", "file": "R"}])
    critic = CriticScores(model="m", semantic_similarity=CriticScore(score=0.9),
                          api_similarity=CriticScore(score=0.6), design_quality=CriticScore(score=0.3))  # fmt: skip
    parts = review_components(sig, rules, critic)
    assert parts == {"signature": 0.5, "rules": 0.75, "critic_api": 0.6, "critic_design": 0.3}
    out = review_score(Score(overall=0.6), parts, ReviewWeights(execution=0.6, review=0.2), "run")
    assert out.weights == {"execution": 0.75, "review": 0.25}  # normalised
    assert out.review == pytest.approx(0.5375) and out.combined == pytest.approx(
        0.75 * 0.6 + 0.25 * 0.5375, abs=1e-4
    )
    failed = review_score(Score(overall=0.0, build_ok=False), parts, ReviewWeights())
    assert failed.combined == 0.0 and failed.execution == 0.0 and failed.review == 0.5375
    public_only = Score(by_split={Split.PUBLIC: SplitScore(total=3, passed=3)})
    unknown = review_score(public_only, parts, ReviewWeights())
    assert unknown.execution is None and unknown.combined is None  # Overall not measured: no 0
    again = reweighted(out, Score(overall=0.6), ReviewWeights(execution=1, review=0))
    assert again.combined == 0.6 and again.components == parts  # from the stored components
    nothing = review_score(Score(overall=1.0), {}, ReviewWeights())
    assert nothing.review is None and nothing.combined is None  # not measured, not 0.8
    broken = CriticScores(model="m", error="ConnectionError: refused")
    assert "critic_design" not in review_components(None, None, broken)  # reported, not zeroed


def test_the_critic_answer_is_three_scores_or_none():
    def reply(content: str) -> dict:
        return {"choices": [{"message": {"content": content}}]}

    good = reply('Here: {"semantic_similarity": {"score": 0.8, "rationale": "same ops"}, '
                 '"api_similarity": {"score": 1, "rationale": "same CLI"}, '
                 '"design_quality": 0.5}')  # fmt: skip
    got = scores_of(good)
    assert got is not None and got["api_similarity"].score == 1.0
    assert got["semantic_similarity"].rationale == "same ops"
    assert (
        scores_of(reply('{"semantic_similarity": 0.8, "api_similarity": 2, "design_quality": 0}'))
        is None
    )
    assert scores_of(reply("no idea")) is None and scores_of({}) is None


# --- stored and shown --------------------------------------------------------------------


def test_a_stored_score_without_a_review_still_loads():
    old = {"build_ok": True, "done": 2, "planned": 2, "overall": 0.5, "macro": 0.5, "by_split": {}}
    assert Score.model_validate(old).review is None


def _made(bundled_catalog) -> Diagnostics:
    task = bundled_catalog.tasks["tidy"]
    task = task.model_copy(update={"spec": task.spec.model_copy(update={
        "rules": RulesSpec(forbidden_imports=["os"], required_files=["README.md"])})})  # fmt: skip
    return asyncio.run(diagnose_trees(task, Level.L1, _solution_tree("tidy", "good"),
                                      oracle_tree(task, BOUNDS), Score(overall=1.0)))  # fmt: skip


def test_the_event_round_trips_and_the_report_carries_it_by_its_schema(bundled_catalog):
    made = _made(bundled_catalog)
    ev = DiagnosticsMade(run_id="r", seq=3, diagnostics=made)
    back = parse_event(ev.model_dump_json())
    assert isinstance(back, DiagnosticsMade) and back.diagnostics == made
    started = RunStarted(task_id="tidy", task_title="t", agent="a", level="L1",
                         responder="simulated", budget=1, prd="p")  # fmt: skip
    report = build_report([started, back])
    assert report["diagnostics"]["rules"]["violations"][0]["rule"] in {
        "required_file",
        "forbidden_import",
    }
    assert report["diagnostics"]["signature"]["rate"] == 1.0
    assert report["diagnostics"]["review"]["components"]["rules"] == 0.0
    schema = json.loads(Path(REPORT_SCHEMA).read_text())
    jsonschema.validate(
        report["diagnostics"], {"$defs": schema["$defs"], "$ref": "#/$defs/diagnostics"}
    )


def test_headless_lines_name_the_violations_and_the_formula(bundled_catalog):
    lines = diagnostics_lines(_made(bundled_catalog))
    text = "\n".join(lines)
    assert lines[0].startswith("diagnostics: structure: 1 source file(s), 268 LOC")
    assert "File% 100%, LOC% 87.58%" in lines[0]
    assert "API signature (static): 10/10 named items found" in text
    assert "task rules: 0/2 kept" in text
    assert "  required file README.md: README.md" in text
    assert "  forbidden import os: tidy.py:5" in text  # `import os`, line 5
    assert "review score: 90% = 0.8 × execution 100% + 0.2 × review 50% (default weights)" in text
    failed = diagnostics_lines(Diagnostics(critic=CriticScores(model="m", error="down")))
    assert failed == ["diagnostics: critic (m): not measured — down"]


def test_the_headless_printer_prints_the_diagnostics_event(bundled_catalog):
    from icae_tui.display.plain import PlainPrinter

    out = io.StringIO()
    printer = PlainPrinter(out)
    printer(DiagnosticsMade(run_id="r", seq=1, diagnostics=_made(bundled_catalog)))
    assert out.getvalue().count("diagnostics: task rules: 0/2 kept") == 1  # once
    evil = Diagnostics(error="\x1b[2Jgone")  # a delivery's text never moves the cursor
    printer(DiagnosticsMade(run_id="r", seq=2, diagnostics=evil))
    assert "\x1b" not in out.getvalue()

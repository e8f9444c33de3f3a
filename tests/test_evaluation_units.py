from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.evaluation.compare import exact_match, fuzzy_score, normalise_whitespace
from icae_tui.evaluation.manifest import diff_manifests, effective
from icae_tui.evaluation.scoring import score


def test_whitespace_normalisation():
    assert normalise_whitespace("a  b\t c  \n\n") == "a b c"
    assert exact_match("x = 1\n", "x   =  1")
    assert not exact_match("x=1", "x = 1")
    assert not exact_match("a\nb", "a b")


def test_fuzzy_score():
    assert fuzzy_score("", "") == 1.0
    assert fuzzy_score("hello world", "hello world") == 1.0
    assert 0.8 <= fuzzy_score("hello world", "hello worle") < 1.0
    assert fuzzy_score("abc", "xyz") == 0.0


def test_manifest_diff_kinds_and_content():
    before = {
        "a": {"type": "file", "mode": 420, "size": 1, "sha256": "x"},
        "d": {"type": "dir", "mode": 493},
    }
    after = {
        "a": {"type": "file", "mode": 420, "size": 2, "sha256": "y"},
        "b": {"type": "link", "mode": 511, "target": "a"},
    }
    changes = {c.path: c for c in diff_manifests(before, after)}
    assert changes["a"].change == "modified" and changes["a"].sha256 == "y"
    assert changes["b"].change == "added" and changes["b"].target == "a"
    assert changes["d"].change == "deleted"
    assert diff_manifests(before, before) == []
    assert effective(diff_manifests(before, after)) != effective(diff_manifests(before, before))


def _result(case_id, split, pattern, passed):
    return CaseResult(
        case_id=case_id, split=split, pattern=pattern, command="t",
        verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER, reason="",
        exec_ok=True, passed=passed,
    )  # fmt: skip


def test_score_overall_macro_and_gap():
    results = [
        _result("public/a#0", "public", "a", True),
        _result("hidden/a#0", "hidden", "a", True),
        _result("hidden/a#1", "hidden", "a", True),
        _result("hidden/a#2", "hidden", "a", True),
        _result("hidden/b#0", "hidden", "b", False),
        _result("enhanced/e#0", "enhanced", "e", True),
    ]
    s = score(results, planned=6)
    assert s.overall == 0.8  # 4 of 5 hidden+enhanced; public excluded
    assert s.macro == round((1 + 0 + 1) / 3, 4)  # per pattern, then mean
    assert s.by_split["public"].passed == 1
    assert s.public_minus_hidden == 0.25
    oracle_failed = _result("hidden/c#0", "hidden", "c", False).model_copy(
        update={"verdict": Verdict.ORACLE_ERROR}
    )
    assert score([*results, oracle_failed], planned=7).overall == 0.8

from icae_tui.domain.results import CaseResult, Verdict
from icae_tui.evaluation.compare import exact_match, fuzzy_score, normalise_whitespace
from icae_tui.evaluation.scoring import score
from icae_tui.sandbox.docker.hostview import ENGINE_NOISE
from icae_tui.sandbox.docker.sides import fallback_diff
from icae_tui.sandbox.effects import to_file_changes


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


def test_fallback_diff_and_display_paths():
    before = {"/data/a": ("file", 420, 1, "x", ""), "/data/gone": ("file", 420, 1, "g", "")}
    after = {
        "/data/a": ("file", 420, 2, "y", ""),
        "/data/new": ("dir", 493, 0, "", ""),
        "/etc/passwd": ("file", 420, 9, "p", ""),
        "/data/gone": ("deleted", 0, 0, "", ""),
        "/usr/sbin/docker-init": ("file", 493, 5, "n", ""),
        "/data/m/__pycache__": ("dir", 493, 0, "", ""),
    }
    diff = fallback_diff(before, after)
    changes = {c.path: c for c in to_file_changes(diff, workdir="/data", noise=ENGINE_NOISE)}
    assert changes["a"].change == "modified" and changes["a"].sha256 == "y"
    assert changes["new"].change == "added" and changes["new"].type == "dir"
    assert changes["/etc/passwd"].change == "added"  # outside the work dir: absolute
    assert changes["gone"].change == "deleted" and changes["gone"].sha256 == ""
    assert "/usr/sbin/docker-init" not in changes  # engine noise
    assert "m/__pycache__" not in changes  # default ignore glob
    assert fallback_diff(before, before) == {}
    assert to_file_changes(diff, workdir="/data", ignore=["/etc/*"], noise=ENGINE_NOISE).__len__() == len(changes) - 1


def _result(case_id, split, pattern, passed):
    return CaseResult(
        case_id=case_id, split=split, pattern=pattern, command="t",
        verdict=Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER, reason="",
        metrics={"exec": 1.0}, passed=passed,
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

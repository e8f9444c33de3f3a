"""Comparing outputs (icae_tui/evaluation/compare.py): whitespace normalised for an exact
match, and the fuzzy score."""

from icae_tui.evaluation.compare import exact_match, fuzzy_score, normalise_whitespace


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

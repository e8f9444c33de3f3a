"""Finding tasks (icae_tui/catalog/search.py): ranking, filters and their counts, sizes, and
the task card that holds no case content. No Textual."""

from __future__ import annotations

from collections import Counter

import pytest

from icae_tui.catalog.search import (
    SIZE_LIMITS,
    Ability,
    Size,
    TaskCard,
    TaskFinder,
    cycled,
    size_of,
)
from icae_tui.domain.task import (
    Level,
    Origin,
    OriginSource,
    Reference,
    Split,
    UserAgentData,
)
from tests.generated_catalog import (
    HIDDEN_SECRET,
    RECORD_SECRET,
    SECRET,
    generated,
    make_task,
)
from tests.test_core_without_textual import imported

SMALL = [
    make_task("csvkit", "CSV toolkit", "python", "slices and joins tables", cases=12),
    make_task("json-tool", "JSON converter", "go", "converts csv to json and back", cases=40),
    make_task("todo", "Todo list", "rust", "keeps a todo list in a file", cases=120),
    make_task("semver", "Semantic versions", "Python", "parse and bump versions", cases=70),
    make_task("mini", "Mini text tool", "python", "upper-cases text", cases=6),
]


@pytest.fixture(scope="module")
def big() -> TaskFinder:
    return TaskFinder(generated(500))


def ids(finder: TaskFinder, query: str = "", **filters) -> list[str]:
    return finder.find(query, **filters).ids


def test_no_query_lists_every_task_in_catalog_order():
    finder = TaskFinder(SMALL)
    assert ids(finder) == ["csvkit", "json-tool", "todo", "semver", "mini"]
    assert all(h.score == 100 for h in finder.find().hits)
    assert ids(finder, "   ") == ids(finder)


def test_id_and_title_rank_above_the_summary():
    finder = TaskFinder(SMALL)
    found = finder.find("csv")
    assert found.ids == ["csvkit", "json-tool"]  # an id match, then a summary match
    assert found.hits[0].score > found.hits[1].score
    assert found.matching == 2


def test_typos_and_word_order():
    finder = TaskFinder(SMALL)
    assert ids(finder, "jsno")[0] == "json-tool"
    assert ids(finder, "smever")[0] == "semver"
    assert ids(finder, "versions semantic")[0] == "semver"


def test_every_word_must_match_some_field():
    finder = TaskFinder(SMALL)
    assert ids(finder, "csv go") == ["json-tool"]  # csv in the summary, go its language
    assert ids(finder, "csv rust") == []
    assert ids(finder, "zzzz") == []


def test_a_longer_word_does_not_match_a_shorter_field():
    """`minimal` is not `mini`: a field shorter than the word is compared whole."""
    finder = TaskFinder(SMALL)
    assert "mini" in ids(finder, "min")
    assert "mini" not in ids(finder, "minimal")


def test_the_closest_id_wins_a_tie():
    finder = TaskFinder([make_task("csv-extra", "CSV", "go"), make_task("csv", "CSV", "go")])
    assert ids(finder, "csv") == ["csv", "csv-extra"]


def test_sizes_by_case_count():
    small, medium = SIZE_LIMITS
    assert size_of(1) is Size.SMALL and size_of(small - 1) is Size.SMALL
    assert size_of(small) is Size.MEDIUM and size_of(medium - 1) is Size.MEDIUM
    assert size_of(medium) is Size.LARGE
    finder = TaskFinder(SMALL)
    assert ids(finder, size=Size.SMALL) == ["csvkit", "mini"]
    assert ids(finder, size=Size.MEDIUM) == ["json-tool", "semver"]
    assert ids(finder, size=Size.LARGE) == ["todo"]


def test_languages_group_case_insensitively_most_tasks_first():
    finder = TaskFinder(SMALL)
    assert finder.languages == ("python", "go", "rust")
    assert ids(finder, language="python") == ["csvkit", "semver", "mini"]
    assert ids(finder, language="Python") == ["csvkit", "semver", "mini"]


def test_counts_follow_the_query_and_the_other_filter():
    finder = TaskFinder(SMALL)
    found = finder.find("s", language="python")  # every task has an s somewhere
    assert dict(found.sizes) == {Size.SMALL: 2, Size.MEDIUM: 1, Size.LARGE: 0}
    assert dict(found.languages) == {"python": 3, "go": 1, "rust": 1}
    found = finder.find("", language="python", size=Size.SMALL)
    assert found.ids == ["csvkit", "mini"]
    assert dict(found.languages) == {"python": 2, "go": 0, "rust": 0}
    assert dict(found.sizes) == {Size.SMALL: 2, Size.MEDIUM: 1, Size.LARGE: 0}


def test_five_hundred_tasks_search_filter_and_count_like_brute_force(big):
    cards = big.cards
    for query in ["csv", "json go", "parser", "smever", "ratelimit cache"]:
        scores = big.scores(query)
        assert scores is not None
        for language in [None, "go", "rust"]:
            for size in [None, *Size]:
                found = big.find(query, language, size)
                expected = {
                    c.id for i, c in enumerate(cards)
                    if i in scores and language in (None, c.language_key)
                    and size in (None, c.size)
                }  # fmt: skip
                assert set(found.ids) == expected, (query, language, size)
                hit_scores = [h.score for h in found.hits]
                assert hit_scores == sorted(hit_scores, reverse=True)  # ranked
                by_lang = Counter(
                    c.language_key for i, c in enumerate(cards)
                    if i in scores and size in (None, c.size)
                )  # fmt: skip
                assert dict(found.languages) == {lang: by_lang[lang] for lang in big.languages}
    # the words of a query narrow: each result of "csv parser" is a result of "csv"
    assert set(ids(big, "csv parser")) <= set(ids(big, "csv"))
    assert ids(big, "csv parser") == ["csv-parser-000", "csv-parser-200", "csv-parser-400"]
    assert all(i.startswith("csv-") for i in ids(big, "csv"))
    assert len(ids(big, "csv")) == 25


def test_a_query_is_scored_once_while_filters_change(big, monkeypatch):
    calls = []
    score = big._score
    monkeypatch.setattr(big, "_score", lambda terms: calls.append(terms) or score(terms))
    for language in [None, "go", "python", None]:
        big.find("yaml linter", language)
    assert calls == [["yaml", "linter"]]


def test_the_card_holds_counts_never_case_content_or_records():
    task = make_task("t", "T", "go", cases=30)
    card = TaskCard.of(task)
    assert card.by_split == {Split.PUBLIC: 5, Split.HIDDEN: 15, Split.ENHANCED: 10}
    assert card.cases == 30 and card.size is Size.MEDIUM
    assert [(p.pattern, p.public, p.hidden, p.enhanced) for p in card.by_pattern] == [
        ("edge", 1, 4, 2), ("errors", 1, 4, 2), ("format", 1, 4, 3), ("parse", 2, 3, 3),
    ]  # fmt: skip
    assert sum(p.total for p in card.by_pattern) == 30
    assert card.prd[Level.L2] == task.prd[Level.L2]
    shown = repr(card)
    for secret in (SECRET, HIDDEN_SECRET, RECORD_SECRET):
        assert secret in task.model_dump_json()  # the task has them…
        assert secret not in shown  # …the card does not


def test_search_imports_neither_textual_nor_rich():
    assert imported(["icae_tui.catalog.search"], ("textual", "rich")) == ""


def test_a_card_says_where_its_task_came_from_and_what_it_can_do():
    bundled = make_task("t", "T", "go")
    card = TaskCard.of(bundled)
    assert card.origin == "bundled"
    assert card.capabilities == (
        "levels L1 L2 L3 ground · records L1 1 · L2 1 · L3 1 · ground 1 · golden oracle"
    )
    spec = bundled.spec.model_copy(
        update={
            "origin": Origin(source=OriginSource.ICAE_EVAL, alias="realcode@050"),
            "cases": bundled.spec.cases.model_copy(update={"reference": Reference.EXPECTED}),
        }
    )
    no_records = UserAgentData.model_validate({"oracle_data": {"fallback_response": "-"}})
    imported_task = bundled.model_copy(
        update={"spec": spec, "user_agent": dict.fromkeys(Level, no_records)}
    )
    card = TaskCard.of(imported_task)
    assert card.origin == "ICAE-EVAL realcode@050"
    assert card.capabilities == "levels L1 L2 L3 ground · no user-agent records · expected outputs"
    assert RECORD_SECRET not in repr(TaskCard.of(bundled))  # counts, never a record


def test_the_origin_is_searched():
    tasks = [*SMALL[:2], make_task("realcode-050", "Real code", "python")]
    spec = tasks[2].spec.model_copy(
        update={"origin": Origin(source=OriginSource.ICAE_EVAL, alias="realcode@050")}
    )
    tasks[2] = tasks[2].model_copy(update={"spec": spec})
    finder = TaskFinder(tasks)
    assert ids(finder, "icae eval") == ["realcode-050"]
    assert set(ids(finder, "bundled")) == {"csvkit", "json-tool"}


def _imported(task, source, alias, *, records=True, expected=False):
    """`task` as if imported from `source`: its origin, and records / reference as asked."""
    spec = task.spec.model_copy(
        update={
            "origin": Origin(source=source, alias=alias),
            "cases": task.spec.cases.model_copy(
                update={"reference": Reference.EXPECTED if expected else Reference.ORACLE}
            ),
        }
    )
    update = {"spec": spec}
    if not records:
        none = UserAgentData.model_validate({"oracle_data": {"fallback_response": "-"}})
        update["user_agent"] = dict.fromkeys(Level, none)
    return task.model_copy(update=update)


def _mixed():
    return TaskFinder(
        [
            make_task("b1", "B1", "python"),
            make_task("b2", "B2", "go"),
            _imported(make_task("i1", "I1", "python"), OriginSource.ICAE_EVAL, "realcode@050",
                      expected=True),  # fmt: skip
            _imported(make_task("i2", "I2", "java"), OriginSource.ICAE_EVAL, "realcode@051"),
            _imported(make_task("c1", "C1", "python"), OriginSource.CLI_TOOL_BENCH, "a/b",
                      records=False),  # fmt: skip
        ]
    )


def test_origin_and_ability_filters_narrow_and_count_faceted():
    finder = _mixed()
    assert finder.origins == ("ICAE-EVAL", "bundled", "CLI-Tool-Bench")
    assert finder.origins_differ and finder.abilities_differ
    assert finder.find(origin="ICAE-EVAL").ids == ["i1", "i2"]
    assert finder.find(origin="CLI-Tool-Bench").ids == ["c1"]
    assert finder.find(ability=Ability.NO_RECORDS).ids == ["c1"]
    assert finder.find(ability=Ability.EXPECTED).ids == ["i1"]
    found = finder.find(language="python", origin="ICAE-EVAL")
    assert found.ids == ["i1"]
    # each filter counted over what the others let through
    assert dict(found.origins) == {"ICAE-EVAL": 1, "bundled": 1, "CLI-Tool-Bench": 1}
    assert dict(found.languages) == {"python": 1, "go": 0, "java": 1}
    assert dict(found.abilities) == {
        Ability.RECORDS: 1, Ability.NO_RECORDS: 0, Ability.GOLDEN: 0, Ability.EXPECTED: 1,
    }  # fmt: skip
    assert found.ability_all == 1
    assert cycled(finder.abilities, Ability.RECORDS, dict(found.abilities)) is Ability.EXPECTED


def test_a_catalog_whose_tasks_are_alike_offers_no_origin_or_ability_filter():
    finder = TaskFinder([make_task("a", "A", "go"), make_task("b", "B", "python")])
    assert finder.origins == ("bundled",) and not finder.origins_differ
    assert finder.abilities == (Ability.RECORDS, Ability.GOLDEN) and not finder.abilities_differ

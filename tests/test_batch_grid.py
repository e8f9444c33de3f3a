"""The batch screen's grid, without Textual (icae_tui/batch/grid.py): a row per task (× level
× responder when the batch has several), a column per agent, each cell its pairing's state —
pending, running with its repeats done, done with its mean overall, failed by kind."""

from __future__ import annotations

from icae_tui.batch.grid import BatchGrid, ItemNews
from icae_tui.batch.plan import ItemProgress, ItemState, expand
from icae_tui.batch.report import OutcomeKind
from icae_tui.batch.spec import BatchSpec
from icae_tui.domain.states import ResponderMode
from icae_tui.domain.task import Level


def news(state: ItemState, kind: OutcomeKind, overall: float | None = None) -> ItemNews:
    return ItemNews(ItemProgress(state, 1, "r"), kind, overall)


def test_a_cell_follows_its_pairings_repeats():
    spec = BatchSpec(tasks=["t"], agents=["a", "b"], repeats=2)
    items = expand(spec, ["t"])
    grid = BatchGrid(items)
    assert list(grid.rows) == ["t"] and grid.agents == ["a", "b"]
    a = grid.pairing_at("t", "a")
    assert a is not None and grid.text(a) == "·"
    first, second = (it.key for it in items if it.agent == "a")
    grid.set(first, news(ItemState.RUNNING, OutcomeKind.RUNNING))
    assert grid.text(a) == "▶ 0/2"
    grid.asked(first, 1, True)
    assert grid.text(a) == "▶ 0/2 ?"
    grid.asked(first, 1, False)
    grid.set(first, news(ItemState.DONE, OutcomeKind.SCORED, 0.8))
    assert grid.text(a) == "· 1/2"
    grid.set(second, news(ItemState.DONE, OutcomeKind.SCORED, 0.6))
    assert grid.text(a) == "✔ 70.0% ×2"
    grid.set(second, news(ItemState.DONE, OutcomeKind.DELIVERY, 0.0))
    assert grid.text(a) == "✘ delivery 1/2"
    grid.set(first, news(ItemState.GAVE_UP, OutcomeKind.INFRASTRUCTURE))
    assert grid.text(a) == "✘ infra 2/2"


def test_rows_name_the_level_and_responder_when_the_batch_has_several():
    spec = BatchSpec(tasks=["t"], agents=["a"], levels=[Level.L1, Level.L3],
                     responders=[ResponderMode.SIMULATED, ResponderMode.HUMAN])  # fmt: skip
    grid = BatchGrid(expand(spec, ["t"]))
    assert list(grid.rows) == ["t|L1|simulated", "t|L1|human", "t|L3|simulated", "t|L3|human"]
    assert grid.label("t|L3|human") == "t · L3 · human"
    one = expand(BatchSpec(tasks=["t"], agents=["a"]), ["t"])[0]
    grid.set(one.key, news(ItemState.FAILED, OutcomeKind.AGENT))
    assert grid.text(one.pairing) == "✘ agent"
    assert grid.pairing_at("t|L1|simulated", "nobody") is None

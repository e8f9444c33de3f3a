"""Diagnostics beyond tests, made once a run's cases are judged: the frozen delivery read in a
box of its own (network none, nothing of it run), then its structure, the golden API
signature, the task's rules, the optional critic, and the review score.

The delivery is hostile: its workspace is read through `Box.read_tree` — the engine's
archive, streamed under `TreeBounds` (entries, bytes, time), links listed and never
followed, only source files and manifests kept, each cut at `file_bytes`. Nothing in the
box runs for this (the box's own keepalive aside).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from icae_tui.domain.diagnostics import CriticScores, Diagnostics
from icae_tui.domain.results import Score
from icae_tui.domain.task import Level, ReviewWeights, Task
from icae_tui.errors import IcaeError
from icae_tui.evaluation import critic as critic_mod
from icae_tui.evaluation.api_signature import check_signature
from icae_tui.evaluation.differential import case_limits
from icae_tui.evaluation.review import chosen_weights, review_components, review_score
from icae_tui.evaluation.structure import extensions_for, is_source, oracle_tree, structure
from icae_tui.evaluation.task_rules import check_rules, is_manifest
from icae_tui.sandbox.base import BoxSpec, Network, Role, Sandbox
from icae_tui.sandbox.tree import TreeBounds, TreeRead

BOUNDS = TreeBounds()


@dataclass
class Sources:
    """One side's files (every regular file's path) and the text of its kept ones."""

    files: set[str] = field(default_factory=set)
    texts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: TreeRead) -> Sources:
        out = cls()
        for entry in tree.entries:
            if entry.kind != "file":
                continue
            out.files.add(entry.path)
            if entry.head is not None:
                out.texts[entry.path] = entry.head.decode("utf-8", "replace")
        return out


def wanted_for(task: Task) -> tuple[str, ...]:
    return extensions_for(task.spec.language)


async def read_delivery(
    sandbox: Sandbox, task: Task, image: str, *, run_id: str, bounds: TreeBounds = BOUNDS
) -> TreeRead | None:
    """The delivery's workspace, from a box of the frozen image; None: no workspace."""
    exts = wanted_for(task)
    spec = BoxSpec(image=image, run_id=run_id, role=Role.DELIVERY, limits=case_limits(task),
                   network=Network.NONE)  # fmt: skip
    box = await sandbox.create_box(spec)
    try:
        return await box.read_tree(
            task.spec.delivery.workspace, bounds, lambda p: is_source(p, exts) or is_manifest(p)
        )
    finally:
        await asyncio.shield(box.remove())


async def diagnose(
    sandbox: Sandbox, task: Task, level: Level, image: str, score: Score, *, run_id: str,
    critic: critic_mod.Chat | None = None, critic_model: str = "",
    weights: ReviewWeights | None = None, bounds: TreeBounds = BOUNDS,
) -> Diagnostics:  # fmt: skip
    """Everything but the review score's weights is the task's; `critic` None: no critic."""
    try:
        tree = await read_delivery(sandbox, task, image, run_id=run_id, bounds=bounds)
    except IcaeError as err:
        return Diagnostics(error=f"the delivery could not be read: {type(err).__name__}: {err}")
    if tree is None:
        tree = TreeRead()
        missing = f"no workspace folder {task.spec.delivery.workspace} in the delivery"
    else:
        missing = ""
    oracle = await asyncio.to_thread(oracle_tree, task, bounds)
    return await diagnose_trees(
        task, level, tree, oracle, score, critic=critic, critic_model=critic_model,
        weights=weights, note=missing,
    )  # fmt: skip


async def diagnose_trees(
    task: Task, level: Level, tree: TreeRead, oracle: TreeRead | None, score: Score, *,
    critic: critic_mod.Chat | None = None, critic_model: str = "",
    weights: ReviewWeights | None = None, note: str = "",
) -> Diagnostics:  # fmt: skip
    """The diagnostics of trees already read (the engine-free part, for tests too)."""
    mine = Sources.of(tree)
    exts = wanted_for(task)
    sources = {p: t for p, t in mine.texts.items() if is_source(p, exts)}
    shape = structure(task, tree, oracle)
    if note:
        shape.notes.insert(0, note)
    signature = (
        task.user_agent[level].oracle_data.golden_api_signature if level in task.user_agent else ""
    )
    sig = check_signature(signature, mine.files, sources, workspace=task.spec.delivery.workspace)
    rules = check_rules(task.spec.rules, mine.files, mine.texts)
    scores: CriticScores | None = None
    if critic is not None:
        theirs = Sources.of(oracle).texts if oracle is not None else {}
        scores = await critic_mod.critique(critic, critic_model, signature, theirs, sources)
    chosen, source = chosen_weights(task, weights)
    review = review_score(score, review_components(sig, rules, scores), chosen, source)
    return Diagnostics(structure=shape, signature=sig, rules=rules, critic=scores, review=review)

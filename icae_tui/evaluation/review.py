"""The review score: execution and review combined, ProjDevBench's 80 % / 20 % by default.

    combined = w_e · execution + w_r · review,   (w_e, w_r) normalised to sum 1

- execution: the run's Overall (passed / scored cases, ICAE's; a failed build: 0);
- review: the mean of the review components that were measured —
  `signature` (golden API items found / items named), `rules` (task rules kept / rules
  given), and, when the model critic answered, `critic_api` (its API similarity) and
  `critic_design` (its design quality). Structure (File%, LOC%, monolith) is shown, never
  scored: a smaller delivery is not a worse one.
- no component measured, or no scored case (Overall not measured): combined is None —
  "not measured", never a guess;
- a failed build zeroes combined (every figure is 0 then, as the README's ladder says).

The weights: a run's option (`--review-weights 0.7,0.3`), else the task's `[review]
weights`, else 80 / 20; `weights_from` says which.
"""

from __future__ import annotations

from typing import Literal

from icae_tui.domain.diagnostics import CriticScores, ReviewScore, RulesCheck, SignatureCheck
from icae_tui.domain.results import Score
from icae_tui.domain.task import ReviewWeights, Task

DEFAULT_WEIGHTS = ReviewWeights()


def review_components(
    signature: SignatureCheck | None, rules: RulesCheck | None, critic: CriticScores | None
) -> dict[str, float]:
    out: dict[str, float] = {}
    if signature is not None and (rate := signature.rate) is not None:
        out["signature"] = round(rate, 4)
    if rules is not None and (rate := rules.rate) is not None:
        out["rules"] = round(rate, 4)
    if critic is not None and critic.measured:
        if critic.api_similarity is not None:
            out["critic_api"] = critic.api_similarity.score
        if critic.design_quality is not None:
            out["critic_design"] = critic.design_quality.score
    return out


WeightsFrom = Literal["default", "task", "run"]


def chosen_weights(task: Task, run: ReviewWeights | None) -> tuple[ReviewWeights, WeightsFrom]:
    if run is not None:
        return run, "run"
    if task.spec.review.weights is not None:
        return task.spec.review.weights, "task"
    return DEFAULT_WEIGHTS, "default"


def review_score(
    score: Score, components: dict[str, float], weights: ReviewWeights,
    weights_from: WeightsFrom = "default",
) -> ReviewScore:  # fmt: skip
    total = weights.execution + weights.review
    w_exec, w_rev = weights.execution / total, weights.review / total
    execution: float | None = None  # no scored case yet: unknown, not 0
    if not score.build_ok:
        execution = 0.0
    elif score.measured:
        execution = round(score.overall, 4)
    review = round(sum(components.values()) / len(components), 4) if components else None
    combined = None
    if not score.build_ok:
        combined = 0.0 if review is not None else None
    elif review is not None and execution is not None:
        combined = round(w_exec * execution + w_rev * review, 4)
    return ReviewScore(
        execution=execution, review=review, combined=combined,
        weights={"execution": round(w_exec, 4), "review": round(w_rev, 4)},
        components=components, weights_from=weights_from,
    )  # fmt: skip


def with_review(score: Score, review: ReviewScore) -> Score:
    return score.model_copy(update={"review": review})


def reweighted(
    stored: ReviewScore, score: Score, weights: ReviewWeights, weights_from: WeightsFrom = "run"
) -> ReviewScore:
    """A stored run's review score again with other weights (or a re-scored execution),
    from its stored components: no container, no critic asked again (`icae runs rescore`)."""
    return review_score(score, dict(stored.components), weights, weights_from)

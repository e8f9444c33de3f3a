"""One side's run of a case as a backend hands it over: the record kept (`SideRun`) and the
stdout kept for comparison, which is longer than what a record displays."""

from __future__ import annotations

from dataclasses import dataclass

from icae_tui.domain.results import SideRun


@dataclass(frozen=True)
class SideOutcome:
    """One side's run of a case, as the ladder compares it."""

    run: SideRun
    stdout_full: bytes  # up to the case's compare cap: SideRun keeps only what is displayed
    # what the task's [sanitizer] made of the judged output (stdout, or stdout and stderr
    # when merged): compared in place of the streams when both sides have it
    compared: str | None = None

    @property
    def stored_stdout(self) -> str:
        """The stdout as a case's `expected_output` holds it (and `icae tasks verify` compares
        it): the compared bytes, read as UTF-8 with the undecodable replaced."""
        return self.stdout_full.decode(errors="replace")

"""Bongard in Wonderland's Task 2 criteria by name, without pandas: the CLI reads them at start-up.

A concept-probe problem counts as solved per panel across the attempts in the paper (Table 9: every
panel right in every attempt, or in at least 2 of 3; the second gives its Type I-IV), or per attempt
(all 12 panels right in most attempts), which is how the run table counts solved.
"""

from __future__ import annotations

from typing import Literal

TABLE_9 = ("every_panel_in_every_attempt", "every_panel_in_two_thirds")
"""Table 9's two criteria, as columns: per panel across the attempts."""
PROBE_STRATEGY = "concept-probe"
"""The strategy whose items are Task 2's per-panel probes."""
ProbeCriterion = Literal["every-attempt", "two-thirds", "per-attempt"]
CRITERION_WORDS: dict[ProbeCriterion, str] = {
    "every-attempt": "every panel right in every attempt (Table 9)",
    "two-thirds": "every panel right in at least 2 of 3 attempts (Table 9; the paper's Type I-IV)",
    "per-attempt": "all 12 panels right in most attempts (the run table's solved)",
}
"""How a problem counts as solved in Task 2 under each criterion, in words reports print."""
TABLE_9_CRITERIA: tuple[ProbeCriterion, ProbeCriterion] = ("every-attempt", "two-thirds")

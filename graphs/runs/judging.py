"""Judging a stored run: every free-form answer through the ensemble, verdicts into the store.

An answer holding hypotheses (Task 3) is judged one hypothesis at a time until
one is accepted; the verdicts kept are those of the accepted one, or of the last.
Separate from solving, so a run can be judged again with other judges without
re-solving; judges run at temperature 0, so judging again with the same judges
is served from the response cache. A judge call that fails for good (after its
retries) leaves that one answer undecided and named; every other decision is saved.
Which judging a run's counts use is chosen once: the first complete one, or one named with
`bongard runs count`; a later judging is stored beside it and said so, never counted silently.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.batch_ledger import BATCH_SCOPE, LEDGER_FILE, BatchScope
from agents.managed import AgentCallError
from agents.registry import AgentConfig
from datasets_io.catalog import Dataset
from datasets_io.problem import own_id
from datasets_io.records import REFUSAL_STOPS, Answer
from datasets_io.workspace import home_flag, workspace_home
from graphs.registry import get_strategy
from judges.agreement import (
    agreement_with_humans,
    fleiss_kappa,
    kappa_text,
    pairwise_cohen,
    read_human_labels,
    unanimity,
)
from judges.ensemble import JudgeEnsemble
from judges.llm_judge import LLMJudge
from judges.specs import build_judges
from judges.styles import JudgeStyle
from judges.verdict import Decision, Verdict, decide, silence
from results.store import (
    FIRST_COMPLETE,
    REPLACED,
    CountedJudging,
    ResultsStore,
    judging_id,
    judging_parts,
)

JUDGING_CONCURRENCY = 8
COMPARED_POLICIES = ("all", "any", "majority")


@dataclass
class JudgingReport:
    run_id: str
    name: str
    """The judging's name, `STYLE|JUDGE,...@POLICY`: the one `--judging` takes."""
    policy: str
    judges: list[str]
    decisions: dict[tuple[str, int], Decision] = field(default_factory=dict)
    not_judged: int = 0
    refusals: int = 0
    """Answers that are a refusal or a block (`REFUSAL_STOPS`): never judged, never paid for."""
    failed: dict[tuple[str, int], str] = field(default_factory=dict)
    """Answers left undecided because a judge call failed for good, with the error."""
    undecided: dict[tuple[str, int], Decision] = field(default_factory=dict)
    """Answers no judge voted on (each abstained or refused): left unjudged, not stored, never wrong."""
    human_agreement: dict[str, float] | None = None
    decoding_dropped: list[str] = field(default_factory=list)
    """Each judge's decoding (temperature 0) its model cannot take, not sent, and why."""
    learned: list[str] = field(default_factory=list)
    """What a judge's API refused that no table knew, learned during this judging (`agents.learned_rules`)."""
    counted: CountedJudging | None = None
    """The judging the run's counts use once this one is stored (this one, or another chosen before)."""
    count_command: str = ""
    """The command that makes this judging the one that counts."""

    @property
    def left_unjudged(self) -> int:
        """Answers this judging leaves without a score: a judge call failed for good, or no judge voted."""
        return len(self.failed) + len(self.undecided)

    def _counting_line(self, counted: CountedJudging) -> str:
        """Which judging the run's counts use, and how to make this one count where it is not."""
        if counted.judging.name == self.name:
            return f"  judging {self.name}: the one the run's counts use ({counted.how})"
        other = f"{counted.judging.short_id} {counted.judging.label} ({counted.how})"
        if not self.decisions:
            return f"  the run's counts use {other}"
        return (
            f"  judging {self.name}: stored beside the one the run's counts use, {other}; "
            f"`{self.count_command}` counts this one"
        )

    def per_judge(self) -> dict[str, Counter[str]]:
        """Each judge's verdicts, over the answers decided and those no judge voted on."""
        counts: dict[str, Counter[str]] = {name: Counter() for name in self.judges}
        for decision in [*self.decisions.values(), *self.undecided.values()]:
            for verdict in decision.verdicts:
                counts[verdict.judge][verdict.label] += 1
        return counts

    def policies(self) -> dict[str, int]:
        """Answers accepted under each policy, side by side (the case study's Tables 5-6 layout)."""
        chosen = [self.policy, *(p for p in COMPARED_POLICIES if p != self.policy)]
        return {p: sum(decide(d.verdicts, p).ok for d in self.decisions.values()) for p in chosen}

    def lines(self) -> list[str]:
        matrix = [[v.label for v in d.verdicts] for d in self.decisions.values()]
        lines = [
            f"{self.run_id}: {len(self.decisions)} answers judged ({self.not_judged} not free-form, skipped)"
        ]
        if self.refusals:
            lines.append(
                f"  not sent to the judges: {self.refusals} answer(s) the model refused or a filter blocked "
                "(each counts as unsolved)"
            )
        if self.counted is not None:
            lines.append(self._counting_line(self.counted))
        lines.extend(f"  decoding: {note}" for note in self.decoding_dropped)
        lines.extend(f"  learned: {note}" for note in self.learned)
        if self.failed:
            lines.append(
                f"  undecided, a judge call failed for good: {len(self.failed)} answer(s); judge again to "
                "retry them (verdicts already given come from the cache)"
            )
            lines.extend(f"    {p} attempt {a}: {error}" for (p, a), error in self.failed.items())
        if self.undecided:
            lines.append(
                f"  unjudged: {len(self.undecided)} answer(s) on which every judge abstained or refused "
                "(not stored, never counted wrong)"
            )
        for name, counts in self.per_judge().items():
            flag = silence(counts)
            lines.append(
                f"  {name}: {counts['ok']} ok, {counts['wrong']} wrong, {counts['abstain']} abstain"
                + (f", {counts['refused']} refused to judge" if counts["refused"] else "")
                + (f"  [gave {flag}]" if flag else "")
            )
        lines.append("  accepted: " + ", ".join(f"{p} {n}" for p, n in self.policies().items()))
        if matrix and len(self.judges) > 1:
            lines.append(
                f"  unanimity {unanimity(matrix):.2f}, Fleiss' kappa {kappa_text(fleiss_kappa(matrix))}"
            )
            for (a, b), kappa in pairwise_cohen(matrix, self.judges).items():
                lines.append(f"  Cohen's kappa {a} ~ {b}: {kappa_text(kappa)}")
        if self.human_agreement is not None:
            lines.append(
                "  agreement with humans: "
                + ", ".join(f"{p} {v:.2f}" for p, v in self.human_agreement.items())
            )
        return lines


def _counting_after(store: ResultsStore, report: JudgingReport) -> CountedJudging | None:
    """The judging that counts once `report`'s is stored: this one where it is the run's first to
    decide every answer it was given and none was chosen before, or where it took the place of the
    chosen one (the same judges under another policy: the store keeps one decision per judges);
    else whatever counted already."""
    chosen = store.chosen_judging(report.run_id)
    judged, _ = judging_parts(report.name)
    if chosen is not None and chosen != report.name and judging_parts(chosen)[0] == judged:
        store.count_judging(report.run_id, report.name, f"{REPLACED} {judging_parts(chosen)[1]}")
    elif chosen is None and report.decisions and not report.left_unjudged:
        store.count_judging(report.run_id, report.name, FIRST_COMPLETE)
    return store.counted_judging(report.run_id)


def candidate_texts(answer: Answer) -> list[str]:
    """What the judges see of an answer: its text, or each of its hypotheses in order (Task 3)."""
    hypotheses = answer.details.get("hypotheses") or []
    return [f"Left: {left}\nRight: {right}" for left, right in hypotheses] or [answer.text]


def prepared_judging(
    strategy: str,
    specs: list[str],
    policy: str | None = None,
    style: JudgeStyle | None = None,
    params: Mapping[str, Any] | None = None,
    home: Path | None = None,
    agent_config: AgentConfig | None = None,
) -> tuple[JudgeEnsemble, JudgeStyle]:
    """The ensemble and prompt style a judging of a `strategy` run would use, every judge spec,
    parameter, key, provider extra, style and policy checked: `bongard run --judges` calls it before
    the run is stored, so a judging that cannot happen is refused before any call is paid for."""
    style = style or get_strategy(strategy).judge_style
    judges = build_judges(specs, style, params, home=home, config=agent_config)
    return JudgeEnsemble(judges, policy), style


async def judge_run(
    store: ResultsStore,
    run_id: str,
    dataset: Dataset,
    specs: list[str],
    policy: str | None = None,
    style: JudgeStyle | None = None,
    home: Path | None = None,
    human_csv: Path | None = None,
    agent_config: AgentConfig | None = None,
    params: Mapping[str, Any] | None = None,
) -> JudgingReport:
    """Judge the run's free-form answers with the prompt `style`, by default its paper's; `params`
    (`-M`) reach the agent judges as a run's reach its agents."""
    strategy = get_strategy(store.run_config(run_id)["strategy"])
    ensemble, style = prepared_judging(strategy.name, specs, policy, style, params, home, agent_config)
    judges, policy = ensemble.judges, ensemble.policy
    judging = f"{style}|{','.join(j.name for j in judges)}"
    report = JudgingReport(run_id, f"{judging}@{policy}", policy, [j.name for j in judges])
    report.decoding_dropped = [
        note for judge in judges if isinstance(judge, LLMJudge) for note in judge.agent.dropped_decoding
    ]
    batched = [
        j.agent.params.batch_requests for j in judges if isinstance(j, LLMJudge) and j.agent.params.batch
    ]
    slots = asyncio.Semaphore(max(batched, default=JUDGING_CONCURRENCY))  # a batch gathers the answers
    ledger = workspace_home(home) / LEDGER_FILE

    async def one(problem: str, attempt: int, candidates: list[str]) -> None:
        # the answer its judges' calls belong to, so a judging killed mid-batch collects that batch
        BATCH_SCOPE.set(BatchScope(ledger, f"judge/{run_id}/{problem}/{attempt}/{judging}"))
        concept = dataset.problem(own_id(problem, dataset.name)).concept
        if concept is None:
            report.not_judged += 1
            return
        async with slots:
            try:
                decisions = []
                for text in candidates:  # hypotheses: one by one, until one is accepted
                    decisions.append(await ensemble.judge(concept, text))
                    if decisions[-1].ok:
                        break
            except AgentCallError as error:
                report.failed[(problem, attempt)] = str(error)
                return
        decided = [decision for decision in decisions if decision.decided]
        if not decided:  # every judge abstained: unjudged, never wrong, and nothing stored
            report.undecided[(problem, attempt)] = decisions[-1]
            return
        decision = decided[-1]
        store.save_judging(run_id, problem, attempt, judging, policy, decision.ok, decision.verdicts)
        report.decisions[(problem, attempt)] = decision

    tasks = []
    judged = strategy.judged
    for problem, attempt, answer in store.answer_records(run_id):
        if not judged:
            report.not_judged += 1  # the strategy's answers score themselves exactly, not by judges
            continue
        if answer.trace and answer.trace[-1].stop in REFUSAL_STOPS:
            report.refusals += 1  # no answer to judge: scored unsolved (`results.store.ITEM_SCORED`)
            continue
        tasks.append(one(problem, attempt, candidate_texts(answer)))
    await asyncio.gather(*tasks)
    report.counted = _counting_after(store, report)
    report.count_command = f"bongard runs count {run_id} {judging_id(report.name)}{home_flag(home)}"
    report.learned = [note for judge in judges if isinstance(judge, LLMJudge) for note in judge.agent.learned]
    if human_csv is not None:
        human = read_human_labels(human_csv)
        texts = {(p, a): ans.text for p, a, ans in store.answer_records(run_id)}
        keyed: dict[tuple[str, str], list[Verdict]] = {
            (own_id(problem, dataset.name), texts[(problem, attempt)].strip()): d.verdicts
            for (problem, attempt), d in report.decisions.items()
        }
        report.human_agreement = agreement_with_humans(keyed, human, [policy, *COMPARED_POLICIES])
    return report

"""`bongard show RUN [PROBLEM] [--calls]`: what a run answered, how each answer was scored, and
every call behind it, in the terminal (the viewer's pages, as text)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from datasets_io.problem import own_id
from graphs.cli.console import console
from graphs.cli.options import HomeOption, JudgingOption
from graphs.cli.run import open_reader

if TYPE_CHECKING:
    from datasets_io.problem import BongardProblem
    from datasets_io.records import Answer, CallTrace

PREVIEW = 80
PER_PAGE = 100
"""Items `show` lists at a time: a table of 5,000 took Rich 3.8 s to draw (issue 34)."""


def show(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id or `latest`.")],
    problem: Annotated[
        str | None,
        typer.Argument(metavar="PROBLEM", help="A problem id (`8`) or key (`bongard-classic/8`)."),
    ] = None,
    calls: Annotated[
        bool, typer.Option("--calls", metavar="", help="With PROBLEM: every call, prompt and reply.")
    ] = False,
    judging: JudgingOption = None,
    page: Annotated[int, typer.Option(min=1, metavar="K", help="Without PROBLEM: which page of items.")] = 1,
    per_page: Annotated[
        int, typer.Option(min=0, metavar="N", help="Without PROBLEM: items a page (0: all of them).")
    ] = PER_PAGE,
    home: HomeOption = None,
) -> None:
    """A run's answers and verdicts, a page of items at a time; with PROBLEM, its answer, true
    concept, judges and calls."""
    from datasets_io.images import natural_key
    from datasets_io.records import format_note
    from results.counting import Counting
    from results.report import items_frame
    from results.report_rows import resolved_judging

    store = open_reader(home)
    resolved = store.resolve_run(run_id)
    judging = None if judging is None else resolved_judging(store, [resolved], judging)
    items = items_frame(store, [resolved], Counting(judging=judging))
    errors = store.item_errors(resolved)
    if problem is None:
        table = Table(
            "problem", "attempt", "outcome", "answer (chosen vs true) or error", title=f"{resolved}"
        )
        ordered = sorted(items.itertuples(), key=lambda r: (natural_key(str(r.problem)), int(r.attempt)))
        first = (page - 1) * per_page
        listed = ordered[first : first + per_page] if per_page else ordered
        answers = store.answers_of(resolved, [(str(row.problem), int(row.attempt)) for row in listed])
        for row in listed:
            item = (str(row.problem), int(row.attempt))
            answer = answers.get(item)
            text = errors.get(item, "") if answer is None else answer_summary(answer)
            note = format_note(str(row.outcome), row.parse_status)
            outcome = f"{row.outcome} ({note})" if note else str(row.outcome)
            table.add_row(escape(item[0]), str(item[1]), escape(outcome), escape(text[:PREVIEW]))
        console.print(table)
        if len(listed) < len(ordered):
            console.print(page_line(first, len(listed), len(ordered), page), highlight=False)
        return
    key = problem if "/" in problem else f"{store.run_config(resolved)['dataset']}/{problem}"
    rows = items[items["problem"] == key].sort_values("attempt")
    if rows.empty:
        raise typer.BadParameter(f"run {resolved} has no item for problem {key}", param_hint="PROBLEM")
    answers = store.answers_of(resolved, [(key, int(attempt)) for attempt in rows["attempt"]])
    from datasets_io.catalog import open_run_dataset

    dataset = open_run_dataset(store.run_config(resolved))
    shown = dataset.problem(own_id(key, dataset.name))
    concept = shown.concept
    if concept is not None:
        console.print(escape(f"true concept: Left: {concept.left} / Right: {concept.stated_right}"))
    for row in rows.itertuples():
        attempt = int(row.attempt)
        answer = answers.get((key, attempt))
        console.print(f"[bold]{escape(key)}, attempt {attempt}: {row.outcome}[/bold]")
        if answer is None:
            console.print(f"error: {escape(errors.get((key, attempt), ''))}")
        else:
            console.print(f"answer:\n{escape(answer.text.strip())}")
            if answer.expected:
                console.print(f"expected: {escape(str(answer.expected))}")
        decision = store.item_decision(resolved, key, attempt, judging)
        if decision is not None:
            ok, verdicts = decision
            console.print(f"judging: {'accepted' if ok else 'rejected'}")
            for given in verdicts:
                console.print(
                    f"  {escape(given.judge)}: {given.label}  {escape(given.raw_text.strip()[:PREVIEW])}"
                )
                if calls and given.prompt:
                    console.print(f"  asked:\n{escape(given.prompt)}\n  said:\n{escape(given.raw_text)}")
        trace = store.item_calls(resolved, key, attempt)
        console.print(f"{len(trace)} calls" + ("" if calls else " (--calls shows them)"))
        if calls:
            for seq, call in enumerate(trace):
                _print_call(seq, call, shown)


def page_line(first: int, shown: int, total: int, page: int) -> str:
    """Which items a page held, and how to see the others."""
    if not shown:
        return f"no items on page {page}: the run has {total} (--page 1)"
    following = f" --page {page + 1} shows the next;" if first + shown < total else ""
    return f"items {first + 1}-{first + shown} of {total};{following} --per-page 0 shows all"


def image_lines(problem: BongardProblem, images: list[list[str]]) -> list[str]:
    """Each image a call sent: a panel's file, or the sheet the panels named were drawn into."""
    files = {panel.ref: panel.path for panel in problem.all_panels}
    return [
        f"image {number}: {files[refs[0]]}"
        if len(refs) == 1 and refs[0] in files
        else f"image {number}: the sheet of {len(refs)} panels ({', '.join(refs)})"
        for number, refs in enumerate(images, 1)
    ]


def _print_call(seq: int, call: CallTrace, problem: BongardProblem) -> None:
    from datasets_io.records import OUTPUT_MODE_WORDS, STOP_WORDS

    cost = "unknown" if call.cost_usd is None else f"${call.cost_usd:.5f}"
    cached = ", cached" if call.cache_hit else ""
    stopped = f", {STOP_WORDS[call.stop]} ({call.stop_reason or 'no reason given'})" if call.stop else ""
    asked = f" ({OUTPUT_MODE_WORDS[call.output_mode]})" if call.output_mode else ""
    images = "; ".join(",".join(refs) for refs in call.images) or "none"
    where = escape(f"({call.conversation}, step {call.step})")
    console.print(
        f"[bold]call {seq}[/bold] {escape(call.role)} {escape(call.agent)} {call.task} {where} "
        f"images: {escape(images)}\n"
        f"  {call.input_tokens}+{call.output_tokens} tokens, {cost}, {call.latency_s:.2f} s{cached}, "
        f"{call.requests_text}, parse {call.parse_status}{asked}{escape(stopped)}"
    )
    for line in image_lines(problem, call.images):
        console.print(f"  {escape(line)}", soft_wrap=True, highlight=False)
    console.print(f"  prompt:\n{escape(call.prompt)}\n  reply:\n{escape(call.reply)}")


def answer_summary(answer: Answer) -> str:
    """What an answer chose, against the truth where it is scored exactly: each test image's side
    (`left-test-5 left, right-test-5 left (true right)`), a chosen label (`2 (true 3)`); a free-form
    answer's first line."""
    truths: dict[str, str] = answer.expected.get("sides") or {}
    if truths:
        given = answer.sides
        return ", ".join(
            f"{ref} {given.get(ref) or 'none'}" + ("" if given.get(ref) == truth else f" (true {truth})")
            for ref, truth in truths.items()
        )
    if "label" in answer.expected:
        truth = answer.expected["label"]
        chosen = "none" if answer.label is None else str(answer.label)
        return chosen + ("" if answer.label == truth else f" (true {truth})")
    return " ".join(answer.text.strip().splitlines()[:1])

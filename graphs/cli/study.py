"""`bongard study create | list | show | invite | serve | forget | review`: human studies over a
dataset and a task, kept in the store; participants answer in a browser, each a run of agent
`human:PSEUDONYM`, and an expert's verdicts on their answers are kept beside the judging's."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from graphs.cli.console import console
from graphs.cli.options import DataDirOption, DatasetOptions, HomeOption, parse_key_values
from graphs.cli.run import open_reader, open_store
from graphs.cli.view import web_module

study_app = typer.Typer(
    help="Human studies: people answer the problems a model is given, stored beside the models' runs.",
    no_args_is_help=True,
)

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The study's name.", show_default=False)]
JsonFlag = Annotated[bool, typer.Option("--json", metavar="", help="Print JSON instead of a table.")]


@study_app.command("create")
def create(
    name: NameArgument,
    dataset: Annotated[
        str,
        typer.Option(
            metavar="DATASET",
            help="A dataset in the data directory, or FORMAT:PATH.",
            show_default=False,
        ),
    ],
    task: Annotated[
        str,
        typer.Option(
            metavar="TASK",
            help="What a participant answers: direct (a rule for each side), images-to-sides, "
            "concept-selection (among K) or concept-probe (a concept, panel by panel).",
            show_default=False,
        ),
    ],
    problems: Annotated[
        str | None,
        typer.Option(
            metavar="IDS",
            help="The problems, in this order (1-33,40; default: every problem of the dataset).",
            show_default=False,
        ),
    ] = None,
    order: Annotated[
        Literal["original", "shuffled"],
        typer.Option(help="The dataset's order (or that of --problems), or shuffled with --seed."),
    ] = "original",
    seed: Annotated[
        int | None,
        typer.Option(
            metavar="N", help="The shuffle's seed (default: one drawn and kept).", show_default=False
        ),
    ] = None,
    session_size: Annotated[
        int, typer.Option(min=1, metavar="N", help="Problems per session (paper 003: 33).")
    ] = 33,
    instructions: Annotated[
        str | None,
        typer.Option(
            metavar="PROBLEM",
            help="A problem shown first to explain the task, never counted (paper 003: 1).",
            show_default=False,
        ),
    ] = None,
    no_dont_know: Annotated[
        bool, typer.Option("--no-dont-know", metavar="", help='Offer no "I don\'t know" answer.')
    ] = False,
    time_limit: Annotated[
        float | None,
        typer.Option(metavar="SECONDS", help="A time limit per problem (default: none).", show_default=False),
    ] = None,
    include_above: Annotated[
        float,
        typer.Option(
            metavar="SHARE",
            help="The inclusion rule: a participant counts when they tried more than this share of the "
            'problems (answered other than "I don\'t know"; paper 003: 0.5).',
        ),
    ] = 0.5,
    candidates: Annotated[
        int | None,
        typer.Option(
            metavar="K",
            help="Candidates of a concept selection: 2, 4, 8 or 16 (default 4).",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDirOption = None,
    option: DatasetOptions = None,
    home: HomeOption = None,
) -> None:
    """Design a study and keep it: its problems, their order and sessions, checked against the dataset."""
    from datasets_io.catalog import open_dataset
    from graphs.runs.runner import parse_selection
    from graphs.studies.design import design_study
    from results.studies import StudyRecords

    options = parse_key_values(option)
    opened = open_dataset(dataset, data_dir, options)
    design = design_study(
        opened,
        dataset,
        task,
        selection=parse_selection(problems) if problems is not None else None,
        order=order,
        seed=seed,
        session_size=session_size,
        instructions=instructions,
        dont_know=not no_dont_know,
        time_limit_s=time_limit,
        include_above=include_above,
        candidates=candidates,
        data_dir=str(data_dir) if data_dir is not None else None,
        options=options,
    )
    StudyRecords(open_store(home)).create(name, design.to_json())
    sessions = design.sessions
    console.print(
        f"study {escape(name)}: {design.task} on {escape(design.dataset)}, {len(design.problems)} problems "
        f"in {len(sessions)} session(s) of up to {design.session_size}, {design.order} order"
        + (f" (seed {design.seed})" if design.seed is not None else ""),
        highlight=False,
    )


@study_app.command("list")
def list_studies(as_json: JsonFlag = False, home: HomeOption = None) -> None:
    """The stored studies: task, dataset, problems and sessions."""
    from graphs.studies.design import StudyDesign
    from results.studies import StudyRecords

    stored = StudyRecords(open_reader(home)).all()
    if as_json:
        print(
            json.dumps([{"name": s.name, "created_at": s.created_at, **s.design} for s in stored], indent=2)
        )
        return
    table = Table(title=f"{len(stored)} stud{'y' if len(stored) == 1 else 'ies'}")
    for column in ("study", "created", "task", "dataset", "problems", "sessions"):
        table.add_column(column)
    for study in stored:
        design = StudyDesign.from_json(study.design)
        table.add_row(
            escape(study.name),
            _when(study.created_at),
            design.task,
            escape(design.dataset),
            str(len(design.problems)),
            str(len(design.sessions)),
        )
    console.print(table)


@study_app.command("show")
def show(name: NameArgument, as_json: JsonFlag = False, home: HomeOption = None) -> None:
    """One study's design and its sessions, problem by problem in the order a participant sees them."""
    from graphs.studies.design import StudyDesign
    from graphs.studies.participants import Study
    from results.studies import StudyRecords

    store = open_reader(home)
    study = StudyRecords(store).get(name)
    if as_json:
        listed = [
            {
                "pseudonym": s.participant.pseudonym,
                "run": s.participant.run_id,
                "answered": s.answered,
                "tried": s.tried,
                "counted": s.included,
            }
            for s in Study(store, name).standings()
        ]
        shown = {
            "name": study.name,
            "created_at": study.created_at,
            **study.design,
            "participants": listed,
        }
        print(json.dumps(shown, indent=2))
        return
    design = StudyDesign.from_json(study.design)
    limit = "none" if design.time_limit_s is None else f"{design.time_limit_s:g} s a problem"
    console.print(
        f"study {escape(study.name)} (created {_when(study.created_at)}): {design.task} on "
        f"{escape(design.dataset)}; {design.order} order"
        + (f", seed {design.seed}" if design.seed is not None else "")
        + (f"; K = {design.candidates}" if design.candidates is not None else "")
        + f"; instructions problem: {escape(design.instructions or 'none')}"
        + f'; "I don\'t know": {"offered" if design.dont_know else "not offered"}; time limit: {limit}',
        highlight=False,
    )
    table = Table()
    table.add_column("session")
    table.add_column("problems")
    table.add_column("in order")
    for number, session in enumerate(design.sessions, 1):
        table.add_row(str(number), str(len(session)), escape(", ".join(session)))
    console.print(table)
    standings = Study(store, name).standings()
    if not standings:
        console.print(f"no participant yet: invite one with `bongard study invite {escape(name)} PSEUDONYM`")
        return
    people = Table(
        title=f"participants (counted: tried more than {design.include_above:.0%} of the problems)"
    )
    for column in ("participant", "run", "answered", "tried", "counted"):
        people.add_column(column)
    for standing in standings:
        people.add_row(
            escape(standing.participant.pseudonym),
            standing.participant.run_id,
            f"{standing.answered} of {standing.problems}",
            str(standing.tried),
            "yes" if standing.included else "no",
        )
    console.print(people)


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


PseudonymArgument = Annotated[
    str,
    typer.Argument(
        metavar="PSEUDONYM",
        help="The participant's pseudonym (never their name): letters, digits, '.', '_', '-'.",
        show_default=False,
    ),
]
PortOption = Annotated[
    int, typer.Option(min=0, max=65535, metavar="PORT", help="Port to serve on (0: any free one).")
]
DEFAULT_PORT = 8766


@study_app.command("invite")
def invite(
    name: NameArgument,
    pseudonym: PseudonymArgument,
    new_link: Annotated[
        bool,
        typer.Option(
            "--new-link",
            metavar="",
            help="Give an invited participant a new link; the old one opens nothing.",
        ),
    ] = False,
    port: PortOption = DEFAULT_PORT,
    home: HomeOption = None,
) -> None:
    """Add a participant and print their own link, once (the store keeps only its hash).

    Their answers become a run of agent human:PSEUDONYM, judged and compared like a model's.
    """
    from graphs.studies.participants import Study

    study = Study(open_store(home), name)
    if new_link:
        token = study.new_link(pseudonym)
        run_id = study.records.participant(name, pseudonym).run_id
    else:
        participant, token = study.invite(pseudonym)
        run_id = participant.run_id
    console.print(
        f"participant {escape(pseudonym)} of study {escape(name)} (run {run_id}); "
        "their link, shown this once:",
        highlight=False,
    )
    print(f"http://127.0.0.1:{port}/p/{token}")
    console.print(
        f"serve it with `bongard study serve {escape(name)}"
        + (f" --port {port}" if port != DEFAULT_PORT else "")
        + "`; with --lan, the address it prints stands in place of 127.0.0.1",
        highlight=False,
    )


@study_app.command("serve")
def serve(
    name: NameArgument,
    port: PortOption = DEFAULT_PORT,
    lan: Annotated[
        bool,
        typer.Option(
            "--lan",
            metavar="",
            help="Serve on every address of this machine, for participants on its network "
            "(default: 127.0.0.1 alone).",
        ),
    ] = False,
    home: HomeOption = None,
) -> None:
    """Serve the study's pages to its participants until Ctrl-C: each answer is kept as it is sent.

    Nothing leaves this machine: the pages load no outside resource and run no script. Needs the
    `view` extra: pip install 'bongard-agents\\[view]'.
    """
    pages = web_module("graphs.studies.pages", "bongard study serve")
    store = open_store(home)

    def announce(base: str) -> None:
        where = "on this machine's network (--lan)" if lan else "on this machine only"
        console.print(
            f"bongard study serve {escape(name)}: {base}/p/TOKEN, {where}; each participant's link "
            "comes from `bongard study invite`. Ctrl-C stops it",
            highlight=False,
        )

    pages.serve(store, name, port, lan, announce)


@study_app.command("forget")
def forget(name: NameArgument, pseudonym: PseudonymArgument, home: HomeOption = None) -> None:
    """Delete a participant: their answers, their link and their run (export it first to keep it)."""
    from results.studies import StudyRecords

    participant = StudyRecords(open_store(home)).forget(name, pseudonym)
    console.print(
        f"participant {escape(pseudonym)} of study {escape(name)} deleted, with run {participant.run_id}",
        highlight=False,
    )


@study_app.command("review")
def review(
    name: NameArgument,
    expert: Annotated[
        str,
        typer.Option(
            metavar="EXPERT", help="Who gives the verdicts (a name or a pseudonym).", show_default=False
        ),
    ],
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="RUN",
            help="Model runs whose answers are labelled too (default: every stored run of the study's task).",
            show_default=False,
        ),
    ] = None,
    template: Annotated[
        Path | None,
        typer.Option(metavar="CSV", help="Write the answers still to label, each beside its true concept."),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(metavar="CSV", help="Store the verdicts (ok or wrong) of a filled-in template."),
    ] = None,
    home: HomeOption = None,
) -> None:
    """An expert's verdicts on the study's free-form answers (the counted participants' and the model
    runs'), so `bongard compare --study` reads the judging against them."""
    from graphs.studies.comparison import compare_study
    from graphs.studies.participants import Study
    from graphs.studies.review import answers_to_label, read_labels, write_template

    store = open_store(home)
    found = compare_study(store, name, runs or [])
    study = Study(store, name)
    solvers = {s.run_id: s.label for s in found.table.solvers()}
    if labels is not None:
        known = {(run_id, p, a) for run_id in solvers for p, a in store.finished_items(run_id)}
        verdicts = read_labels(labels, known)
        study.records.label(name, expert, verdicts)
        console.print(f"stored {len(verdicts)} verdict(s) of {escape(expert)}", highlight=False)
    pending = answers_to_label(store, study, solvers, expert)
    if template is not None:
        write_template(pending, template)
        console.print(
            f"{len(pending)} answer(s) to label in {escape(str(template))}: fill in verdict (ok or wrong), "
            f"then `bongard study review {escape(name)} --expert {escape(expert)} "
            f"--labels {escape(str(template))}`",
            highlight=False,
        )
    elif labels is None:
        console.print(
            f"{len(pending)} answer(s) still to label by {escape(expert)}: "
            "write them to a CSV with --template",
            highlight=False,
        )

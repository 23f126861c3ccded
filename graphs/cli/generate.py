"""`bongard generate`, `bongard review` and `bongard variants`: the Bongard-RWR+ pipeline from the shell.

The generation graph, its runner and the image embedders (LangGraph, numpy) are imported by
the commands that use them, so that `bongard --help` does not load them.
"""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, get_args

import typer
from rich.markup import escape
from rich.table import Table

from datasets_io.generation.generated import Decision
from graphs.cli.console import console, error_console
from graphs.cli.generate_logo import logo
from graphs.cli.options import (
    DataDirOption,
    DatasetOptions,
    HomeOption,
    ModelParams,
    RayAddressOption,
    parse_key_values,
)
from graphs.cli.run import open_store
from results.reviews import GenerationRecords, Review

if TYPE_CHECKING:
    from graphs.generation.run import Generation, GenerationStatus

DECISION_KEYS: dict[str, Decision] = {"l": "left", "r": "right", "n": "none"}


generate_app = typer.Typer(
    invoke_without_command=True,
    help="Generate a dataset: Bongard-RWR+'s pipeline (options below), or fresh Bongard-LOGO problems "
    "(`bongard generate logo`).",
)


@generate_app.callback()
def generate(
    ctx: typer.Context,
    source: Annotated[
        str | None, typer.Option(metavar="DATASET", help="Dataset of source problems (name or FORMAT:PATH).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Folder the new dataset is written to.")
    ] = None,
    problems: Annotated[
        str | None, typer.Option(metavar="IDS", help="Source problem ids, e.g. 1-11,31 (default: all).")
    ] = None,
    model: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Agent spec for every role not given.")
    ] = None,
    describer: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Image + concept -> prompt pair (a VLM).")
    ] = None,
    augmenter: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Prompt -> N variants (any LLM).")
    ] = None,
    reviewer: Annotated[
        str | None, typer.Option(metavar="SPEC", help="--review auto: re-describes each image.")
    ] = None,
    review_judge: Annotated[
        str | None, typer.Option(metavar="SPEC", help="--review auto: which concept a description shows.")
    ] = None,
    generator: Annotated[
        str, typer.Option(metavar="NAME", help="Image generator: flux, openai-images:MODEL, shapes.")
    ] = "flux",
    generator_param: Annotated[
        list[str] | None,
        typer.Option(
            "--generator-param", "-G", metavar="KEY=VALUE", help="Generator parameter KEY=VALUE, repeatable."
        ),
    ] = None,
    embedder: Annotated[
        str, typer.Option(metavar="NAME", help="Image embedder: open_clip[:MODEL/WEIGHTS], classical.")
    ] = "open_clip",
    variations: Annotated[
        int, typer.Option(min=1, max=99, metavar="N", help="Variants per source image (N).")
    ] = 15,
    panels: Annotated[int, typer.Option(min=1, metavar="P", help="Context images per side (P).")] = 6,
    subsets: Annotated[
        int, typer.Option(min=1, metavar="M", help="Subsets per side (M); M x M problems per source.")
    ] = 10,
    no_removal: Annotated[
        bool, typer.Option("--no-removal", metavar="", help="Keep images in the pool (the LP variant).")
    ] = False,
    review: Annotated[
        str, typer.Option(metavar="MODE", help="human (stop for decisions) or auto (cycle-consistency).")
    ] = "human",
    groups: Annotated[
        Path | None, typer.Option(metavar="CSV", help="CSV of source id, concept group.")
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            metavar="SEED",
            help="Seed of each image's render and of the test image drawn from each subset.",
        ),
    ] = 0,
    size: Annotated[int, typer.Option(min=64, metavar="PIXELS", help="Image side in pixels.")] = 512,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Source problems advanced, and model calls in flight, at once."
        ),
    ] = 4,
    resume: Annotated[
        str | None, typer.Option(metavar="GEN", help="Continue a generation (an id or `latest`).")
    ] = None,
    executor: Annotated[
        Literal["local", "ray"],
        typer.Option(
            help="Where source problems are advanced: this process (local) or a pool of Ray actors "
            "(ray; pip install 'bongard-agents\\[ray]'). The store and the dataset are written here "
            "either way."
        ),
    ] = "local",
    ray_address: RayAddressOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="With --executor ray: actors advancing sources, one CPU each (and a GPU each with flux), "
            "sharing --concurrency (default: one per CPU, or GPU, of the cluster).",
            show_default=False,
        ),
    ] = None,
    param: ModelParams = None,
    data_dir: DataDirOption = None,
    option: DatasetOptions = None,
    home: HomeOption = None,
) -> None:
    """Generate a Bongard-RWR+ style dataset: describe, augment, render, review, embed, select, build.

    A human review stops the run with the images to review: decide them with
    `bongard review GEN`, then continue with `bongard generate --resume GEN`.
    """
    if ctx.invoked_subcommand is not None:  # `bongard generate logo`
        return
    from graphs.generation.graph import GenerationSettings, ReviewMode
    from graphs.generation.run import GenerationConfig, resume_generation, start_generation
    from graphs.runs.runner import parse_selection

    if executor == "local" and (ray_address is not None or workers is not None):
        raise typer.BadParameter(
            "--ray-address and --workers go with --executor ray", param_hint="--executor"
        )
    cluster = None
    if executor == "ray":  # imported before anything is stored: without Ray, no generation is made
        from graphs.cluster.generation import ClusterOptions

        cluster = ClusterOptions(ray_address, workers)
    store = open_store(home)
    if resume is not None:
        job = resume_generation(resume, store, home)
    else:
        if source is None or out is None or not (model or (describer and augmenter)):
            raise typer.BadParameter(
                "give --source, --out and --model (or --describer and --augmenter)",
                param_hint="bongard generate",
            )
        if review not in get_args(ReviewMode):
            raise typer.BadParameter("--review takes human or auto", param_hint="--review")
        roles = {"describer": describer, "augmenter": augmenter}
        if review == "auto":
            roles |= {"reviewer": reviewer, "review_judge": review_judge}
        agents = {role: spec or model for role, spec in roles.items()}
        missing = [role for role, spec in agents.items() if not spec]
        if missing:
            raise typer.BadParameter(f"no agent for {', '.join(missing)}", param_hint="--model")
        settings = GenerationSettings(
            folder=str(out.resolve()),
            variations=variations,
            panels=panels,
            subsets=subsets,
            remove=not no_removal,
            seed=seed,
            size=size,
            review=review,
        )
        config = GenerationConfig(
            source=source,
            data_dir=str(data_dir) if data_dir else None,
            dataset_options=parse_key_values(option),
            problems=parse_selection(problems) if problems else None,
            agents={role: str(spec) for role, spec in agents.items()},
            agent_params=parse_key_values(param, "-M"),
            generator=generator,
            generator_params=parse_key_values(generator_param, "-G"),
            embedder=embedder,
            settings=settings,
            groups=_read_groups(groups) if groups else {},
            concurrency=concurrency,
        )
        job = start_generation(config, store, home)
    console.print(f"generation {job.id}: {len(job.sources)} source problems -> {job.folder}")
    if cluster is None:
        _report(job, asyncio.run(job.run(announce=lambda said: console.print(said, highlight=False))))
    else:
        from graphs.cluster.generation import generate_on_ray

        _report(job, generate_on_ray(job, cluster, announce=error_console.print))


def _read_groups(path: Path) -> dict[str, str]:
    with path.open(encoding="utf-8", newline="") as handle:
        return {
            row[0].strip(): row[1].strip() for row in csv.reader(handle) if len(row) >= 2 and row[0].strip()
        }


def _report(job: Generation, status: GenerationStatus) -> None:
    for source, error in status.failed.items():
        error_console.print(f"[red]failed:[/red] source {source}: {escape(error)}")
    if status.awaiting:
        waiting, sources = sum(status.awaiting.values()), len(status.awaiting)
        console.print(
            f"{len(status.built)} sources built; {waiting} images of {sources} sources await review:\n"
            f"  bongard review {job.id} --template FILE.csv   (the pending images, to fill in)\n"
            f"  bongard review {job.id} --decisions FILE.csv   (image_id,decision: left, right or none)\n"
            f"then: bongard generate --resume {job.id}"
        )
    for where, stop in status.stops.items():
        console.print(f"  {where}: {stop}")
    if status.complete:
        console.print(
            f"wrote {status.problems} problems to {status.folder} "
            f"(read it as --dataset bongard-rwr-plus:{status.folder})"
        )
    elif status.failed:
        raise typer.Exit(1)


def review(
    generation: Annotated[str, typer.Argument(metavar="GEN", help="A generation id or `latest`.")],
    decisions: Annotated[
        Path | None,
        typer.Option(metavar="CSV", help="Store the decisions of a CSV with columns image_id,decision."),
    ] = None,
    template: Annotated[
        Path | None, typer.Option(metavar="CSV", help="Write a CSV of the pending images to fill in.")
    ] = None,
    interactive: Annotated[
        bool, typer.Option("--interactive", metavar="", help="Ask for each pending image here.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """List, record or ask for the review decisions of a generation's images (left, right or none)."""
    records = GenerationRecords(open_store(home))
    generation_id = records.resolve(generation)
    pending = [r for r in records.reviews(generation_id) if r.decision is None]
    if decisions is not None:
        stored = records.decide(generation_id, _read_decisions(decisions), "human")
        console.print(f"stored {stored} decisions")
    elif template is not None:
        with template.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["image_id", "decision", "side", "concept", "path"])
            writer.writerows([r.image_id, "", r.side, r.concept, r.path] for r in pending)
        console.print(f"{len(pending)} pending images in {template}: fill in decision (left, right or none)")
    elif interactive:
        _ask(records, generation_id, pending)
    else:
        _list(pending, Path(records.config(generation_id)["settings"]["folder"]))
    left = sum(r.decision is None for r in records.reviews(generation_id))
    console.print(
        f"{left} images still to review"
        if left
        else f"all decided: bongard generate --resume {generation_id}"
    )


def _read_decisions(path: Path) -> dict[int, Decision]:
    found: dict[int, Decision] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            value = (row.get("decision") or "").strip().lower()
            if not value:
                continue
            decision = (
                DECISION_KEYS.get(value[:1]) if value in (*get_args(Decision), *DECISION_KEYS) else None
            )
            if decision is None or not (row.get("image_id") or "").strip().isdigit():
                raise typer.BadParameter(f"{path}, line {number}: expected image_id and left, right or none")
            found[int(str(row["image_id"]))] = decision
    return found


def _list(pending: list[Review], folder: Path) -> None:
    table = Table("image", "side", "concept of its side", "file")
    for r in pending:
        table.add_row(str(r.image_id), r.side, escape(r.concept), escape(str(folder / r.path)))
    console.print(table)


def _ask(records: GenerationRecords, generation_id: str, pending: list[Review]) -> None:
    folder = Path(records.config(generation_id)["settings"]["folder"])
    for r in pending:
        answer = (
            typer.prompt(
                f"image {r.image_id} ({r.side}: {r.concept}) {folder / r.path} [l]eft/[r]ight/[n]one/[q]uit"
            )
            .strip()
            .lower()[:1]
        )
        if answer == "q":
            return
        if answer in DECISION_KEYS:
            records.decide(generation_id, {r.image_id: DECISION_KEYS[answer]}, "human")


def variants(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="A generated dataset folder (with pool.json).")
    ],
    embedder: Annotated[
        str, typer.Option(metavar="NAME", help="Image embedder (as the generation used, to reuse its files).")
    ] = "open_clip",
    panels: Annotated[
        str | None,
        typer.Option(metavar="COUNTS", help="Panels per side (P), e.g. 2-6 or 2,4: one manifest for each P."),
    ] = None,
    removal: Annotated[
        bool, typer.Option("--removal/--no-removal", metavar="", help="Remove redundant images (off: LP).")
    ] = False,
    tvt: Annotated[
        int | None,
        typer.Option(metavar="P", help="Write train/validation/test splits with P panels per side."),
    ] = None,
    impure: Annotated[
        bool, typer.Option("--impure", metavar="", help="Also an -impure twin of each manifest.")
    ] = False,
    subsets: Annotated[
        int,
        typer.Option(
            min=1, metavar="M", help="Subsets per side (M): up to M x M problems per source and manifest."
        ),
    ] = 10,
    seed: Annotated[
        int,
        typer.Option(
            metavar="SEED",
            help="Seed of each subset's test image, the TVT test picks and the impure swaps.",
        ),
    ] = 0,
) -> None:
    """Variants of a generated dataset as extra manifests: LP / P panels, TVT splits, impure sides."""
    from agents.image_embedders import resolve_image_embedder
    from graphs.generation.variants import write_variants
    from graphs.runs.runner import parse_selection

    counts = [int(n) for n in parse_selection(panels)] if panels else []
    report = write_variants(
        folder, resolve_image_embedder(embedder), counts, removal, tvt, impure, seed, subsets
    )
    for name, count in report.written.items():
        console.print(f"{name}: {count} problems  (-O manifest={name})")
    for note in report.notes:
        error_console.print(f"[yellow]note:[/yellow] {escape(note)}")


generate_app.command("logo")(logo)

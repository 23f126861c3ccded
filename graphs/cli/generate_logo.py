"""`bongard generate logo`: fresh Bongard-LOGO problems from the authors' generator, no model involved."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from graphs.cli.console import console, error_console, progress_columns


def logo(
    out: Annotated[Path, typer.Option(metavar="DIR", help="Folder the problems are written to.")],
    count: Annotated[int, typer.Option(min=1, metavar="N", help="Problems of each type to generate.")] = 100,
    seed: Annotated[int, typer.Option(metavar="SEED", help="The same seed gives the same problems.")] = 0,
    types: Annotated[
        str,
        typer.Option(
            metavar="TYPES",
            help="Problem types, comma-separated: ff (free-form, from the package alone), bd (basic) and "
            "hd (abstract), which need --shapes.",
        ),
    ] = "ff",
    shapes: Annotated[
        Path | None,
        typer.Option(
            metavar="CHECKOUT",
            help="A Bongard-LOGO checkout (or its data/ folder): basic and abstract problems are drawn from "
            "its shape tables, human_designed_shapes*.tsv, read there and never copied.",
        ),
    ] = None,
) -> None:
    """Generate fresh Bongard-LOGO problems with the authors' own generator (PyPI `bongard` 0.0.2), in
    their published layout: problems made today, which no model can have seen. Resumable: problems
    already in DIR are kept. Needs Tk, ghostscript, and Xvfb where there is no display."""
    from datasets_io.generation.logo_concepts import ShapeTables
    from datasets_io.generation.logo_generation import check_requirements, generate
    from datasets_io.loaders.logo import PROBLEM_TYPES, TYPE_NAMES

    chosen = list(dict.fromkeys(part.strip() for part in types.split(",") if part.strip()))
    unknown = [kind for kind in chosen if kind not in PROBLEM_TYPES]
    if not chosen or unknown:
        raise typer.BadParameter(
            f"expected some of {', '.join(PROBLEM_TYPES)}, got {types!r}", param_hint="--types"
        )
    if shapes is None and chosen != ["ff"]:
        raise typer.BadParameter(
            "bd and hd need the authors' shape tables: --shapes CHECKOUT",
            param_hint="--types",
        )
    tables = ShapeTables.find(shapes) if shapes is not None else None
    check_requirements()  # one line before any progress bar
    with Progress(*progress_columns(), console=error_console, transient=False) as progress:
        task = progress.add_task("Bongard-LOGO problems", total=count * len(chosen))
        manifest = generate(out, count, seed, chosen, tables, lambda _: progress.advance(task))
    made = ", ".join(f"{manifest.count} {TYPE_NAMES[kind]}" for kind in manifest.types)
    console.print(
        f"{made} problems from seed {manifest.seed} ({manifest.generator} {manifest.generator_version}) "
        f"in {out}; solve them offline with `{solve_command(out)}` (or any strategy and --model)"
    )


def solve_command(out: Path) -> str:
    """A `bongard run` of the problems just made, as it can be pasted: the offline agent putting each
    problem's test images on their sides, so it runs on any machine as printed."""
    dataset = shlex.quote(f"bongard-logo:{out}")
    return f"bongard run --strategy images-to-sides --model perception --dataset {dataset}"

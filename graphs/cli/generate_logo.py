"""`bongard generate logo`: fresh Bongard-LOGO problems from the authors' generator, no model involved."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress

from graphs.cli.console import console, error_console, progress_columns


def logo(
    out: Annotated[Path, typer.Option(metavar="DIR", help="Folder the problems are written to.")],
    count: Annotated[int, typer.Option(min=1, metavar="N", help="Problems to generate.")] = 100,
    seed: Annotated[int, typer.Option(metavar="SEED", help="The same seed gives the same problems.")] = 0,
    types: Annotated[
        str,
        typer.Option(
            metavar="TYPES",
            help="Problem types: ff (free-form, from the package alone). Basic (bd) and abstract (hd) "
            "problems need the authors' shape tables and are not generated yet.",
        ),
    ] = "ff",
) -> None:
    """Generate fresh Bongard-LOGO problems with the authors' own generator (PyPI `bongard` 0.0.2), in
    their published layout: problems made today, which no model can have seen. Resumable: problems
    already in DIR are kept. Needs Tk, ghostscript, and Xvfb where there is no display."""
    from datasets_io.logo_generation import check_requirements, generate_freeform

    if types != "ff":
        raise typer.BadParameter(
            "only ff (free-form) problems are generated: basic and abstract ones need the authors' shape "
            "tables, which this command does not read yet",
            param_hint="--types",
        )
    check_requirements()  # one line before any progress bar
    with Progress(*progress_columns(), console=error_console, transient=False) as progress:
        task = progress.add_task("free-form problems", total=count)
        manifest = generate_freeform(out, count, seed, lambda _: progress.advance(task))
    console.print(
        f"{manifest.count} free-form problems from seed {manifest.seed} ({manifest.generator} "
        f"{manifest.generator_version}) in {out}; solve them with: bongard run --dataset bongard-logo:{out}"
    )

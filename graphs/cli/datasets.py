"""`bongard datasets list | show | validate | download`: get data and look at it before spending
calls on it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from datasets_io.catalog import (
    Dataset,
    ScanResult,
    default_data_dir,
    find_datasets,
    open_dataset,
)
from datasets_io.errors import DatasetError
from datasets_io.problem import BongardProblem
from datasets_io.render import DEFAULT_MAX_SIDE, Variant, render_sheet, render_strip, save_png
from graphs.cli.console import console, error_console
from graphs.cli.options import DataDirOption, DatasetOptions, HomeOption, parse_key_values

datasets_app = typer.Typer(help="List, show, validate and download datasets.", no_args_is_help=True)


@datasets_app.command("list")
def list_datasets(data_dir: DataDirOption = None) -> None:
    """Every dataset in the data directory, with what a run can use of it."""
    directory = data_dir if data_dir is not None else default_data_dir()
    folders = find_datasets(directory)
    if not folders:
        raise DatasetError(f"no datasets found in {directory} (set --data-dir or $BONGARD_DATA)")
    table = Table("name", "format", "problems", "panels/side", "test images", "concepts", "concepts from")
    unusable: list[str] = []
    for folder in folders:
        dataset = open_dataset(folder.name, directory)
        scan = _scan_with_warnings(dataset)
        problems = scan.problems
        if scan.errors:
            unusable.append(_why_unusable(dataset.name, scan))
        per_side = sorted({p.panels_per_side for p in problems})
        tests = sorted({len(p.test_panels) for p in problems})
        table.add_row(
            dataset.name,
            dataset.format_name,
            str(len(problems)),
            "/".join(map(str, per_side)) or "-",
            "/".join(map(str, tests)) if tests != [0] else "none",
            f"{sum(p.concept is not None for p in problems)}/{len(problems)}",
            dataset.loader.concept_source,
        )
    console.print(table)
    for line in unusable:
        console.print(line, soft_wrap=True)


def _why_unusable(name: str, scan: ScanResult[BongardProblem]) -> str:
    """One line under the table: how many problems a dataset loses, and the commonest reason."""
    reasons = Counter((error.reason, error.path) for error in scan.errors)
    (reason, path), count = reasons.most_common(1)[0]
    where = f" ({path})" if path is not None else ""
    total = len(scan.problems) + len(scan.errors)
    lost = f"{len(scan.errors)} of {total} problems unusable"
    return escape(f"{name}: {lost}; {count} of them: {reason}{where}")


@datasets_app.command("show")
def show(
    dataset_name: Annotated[str, typer.Argument(metavar="DATASET", help="Name or FORMAT:PATH.")],
    problem_id: Annotated[
        str, typer.Argument(metavar="PROBLEM", help="The problem's id in the dataset, e.g. 31.")
    ],
    out: Annotated[Path, typer.Option("--out", metavar="IMAGE", help="Where to write the sheet (PNG).")],
    variant: Annotated[
        Variant, typer.Option(help="Panel look: colour or grey, letterboxed or square.")
    ] = "plain",
    max_side: Annotated[
        int,
        typer.Option(
            min=64, metavar="PIXELS", help="Widest the sheet (and the test strip) may be, in pixels."
        ),
    ] = DEFAULT_MAX_SIDE,
    tests_out: Annotated[
        Path | None,
        typer.Option("--tests-out", metavar="IMAGE", help="Also write the test images as a strip (PNG)."),
    ] = None,
    data_dir: DataDirOption = None,
    option: DatasetOptions = None,
) -> None:
    """Render one problem's sheet and print its panels and concept."""
    dataset = open_dataset(dataset_name, data_dir, parse_key_values(option))
    problem = dataset.problem(problem_id)
    save_png(render_sheet(problem, variant, max_side), out)
    console.print(
        f"{problem.key}: {len(problem.left)} + {len(problem.right)} context panels, "
        f"{len(problem.test_panels)} test images -> {out}"
    )
    if problem.concept:
        console.print(f"  left:  {problem.concept.left}\n  right: {problem.concept.stated_right}")
    if tests_out is not None:
        save_png(render_strip(problem, problem.test_panels, variant, max_side), tests_out)
        console.print(f"  test images ({', '.join(p.ref for p in problem.test_panels)}) -> {tests_out}")


@datasets_app.command("validate")
def validate(
    dataset_name: Annotated[str, typer.Argument(metavar="DATASET", help="Name or FORMAT:PATH.")],
    data_dir: DataDirOption = None,
    option: DatasetOptions = None,
) -> None:
    """Open every image of every problem; report each unusable problem; exit 1 if any."""
    dataset = open_dataset(dataset_name, data_dir, parse_key_values(option))
    scan = dataset.scan(open_images=True)
    for error in scan.errors:
        error_console.print(f"[red]unusable:[/red] {escape(str(error))}")
    total = len(scan.problems) + len(scan.errors)
    if scan.errors:
        console.print(f"{dataset.name}: {len(scan.errors)} of {total} problems unusable")
        raise typer.Exit(1)
    console.print(f"{dataset.name}: all {total} problems usable, every image opened")


def _scan_with_warnings(dataset: Dataset) -> ScanResult[BongardProblem]:
    """Usable problems; one warning per skipped problem and a count."""
    scan = dataset.scan()
    for error in scan.errors:
        error_console.print(f"[yellow]warning:[/yellow] skipped {escape(str(error))}")
    if scan.errors:
        error_console.print(f"[yellow]warning:[/yellow] {dataset.name}: {len(scan.errors)} problems skipped")
    return scan


@datasets_app.command("download")
def download(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="bongard-classic, bongard-rwr, bongard-wonderland, bongard-openworld, bongard-rwr-plus "
            "or bongard-hoi.",
        ),
    ],
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            metavar="DIR",
            help="Data directory to put it in (default: $BONGARD_DATA, else the workspace's data/).",
        ),
    ] = None,
    mirror: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="A mirror serving https://HOST/PATH as URL/HOST/PATH (default: $BONGARD_DOWNLOAD_MIRROR).",
        ),
    ] = None,
    repin: Annotated[
        bool,
        typer.Option(
            "--repin",
            metavar="",
            help="Forget this dataset's pins (archive checksums, Hub commits) and take what its source "
            "serves now; the new pins replace them only once it installs.",
        ),
    ] = False,
    home: HomeOption = None,
) -> None:
    """Fetch a dataset from its public source, pinned, every file checked by SHA-256 (shipped, or
    pinned when it first installs where the source publishes none); archives unpacked within caps,
    every file kept inside the dataset's folder; resumable, never left half-written."""
    from graphs.cli.fetching import download_dir, fetch_dataset

    fetch_dataset(name, to if to is not None else download_dir(home), home, mirror, repin)

"""Command-line options shared by several commands."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import typer

from judges.styles import JudgeStyle

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        metavar="DIR",
        help="Folder with one sub-folder per dataset (default: $BONGARD_DATA, ./data, ../shared/data).",
        show_default=False,
    ),
]
DatasetOptions = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-O",
        metavar="KEY=VALUE",
        help="Loader option KEY=VALUE, repeatable (e.g. holdout_test=true for bongard-classic).",
        show_default=False,
    ),
]


ModelParams = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        "-M",
        metavar="KEY=VALUE",
        help="Agent parameter KEY=VALUE, repeatable: temperature, max_tokens, seed, timeout_s, base_url, "
        "concurrency, requests_per_minute, tokens_per_minute, image_max_side, price_input, price_output...",
        show_default=False,
    ),
]
AgentConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--agent-config",
        metavar="FILE",
        help="TOML or JSON file: agent spec -> parameters.",
        show_default=False,
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        metavar="ADDRESS",
        help="With --executor ray: the cluster to join, `auto` (the one `ray start` runs here) or "
        "HOST:PORT (default: start one in this process).",
        show_default=False,
    ),
]
HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        metavar="DIR",
        help="Workspace folder (default: $BONGARD_HOME, else ~/.bongard).",
        show_default=False,
    ),
]
AggregateOption = Annotated[
    str,
    typer.Option(
        "--aggregate",
        metavar="RULE",
        help="How a problem's attempts count: majority (solved in most), mean (each attempt its "
        "share; the table gives the rounded mean over attempts, Wonderland's Table 1), any, or "
        "at-least:K.",
    ),
]


def parse_key_values(pairs: list[str] | None, option: str = "--option") -> dict[str, str]:
    """`["a=1", "b=x"]` -> `{"a": "1", "b": "x"}`; a pair without `=` is a usage error."""
    parsed: dict[str, str] = {}
    for pair in pairs or []:
        key, separator, value = pair.partition("=")
        if not separator or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=option)
        parsed[key.strip()] = value.strip()
    return parsed


PolicyOption = Annotated[
    str | None,
    typer.Option(
        "--policy",
        metavar="POLICY",
        help="Voting policy: vote:K, majority, all or any (default: vote:2, a lone judge's own verdict).",
        show_default=False,
    ),
]
StyleOption = Annotated[
    JudgeStyle | None,
    typer.Option(
        "--style",
        help="Judge prompt: strict (case study) or rubric (Wonderland); default: the one the "
        "strategy's paper used (`bongard strategies NAME`).",
        show_default=False,
    ),
]
JudgingOption = Annotated[
    str | None,
    typer.Option(
        "--judging",
        metavar="NAME",
        help="Count free-form answers by this judging: its short id (j-..., as `bongard runs show RUN` "
        "and the viewer list it) or its whole name, STYLE|JUDGE,...@POLICY; default: each run's latest.",
        show_default=False,
    ),
]


class FigureFormatChoice(StrEnum):
    """The figure file formats `compare` and `analyze` write."""

    png = "png"
    svg = "svg"
    pdf = "pdf"

    @property
    def suffix(self) -> Literal["png", "svg", "pdf"]:
        return self.value


FigureFormatOption = Annotated[
    FigureFormatChoice,
    typer.Option("--format", help="Figure files: png, or svg / pdf (vector, with text kept as text)."),
]

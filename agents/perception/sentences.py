"""A panel's perception in plain sentences, and the differences between two panels."""

from __future__ import annotations

from agents.perception.features import Figure, PanelPerception
from agents.perception.table import COLUMNS, panel_row

SMALL_AREA = 0.02
LARGE_AREA = 0.15


def _where(figure: Figure) -> str:
    horizontal = "left" if figure.x < 1 / 3 else "right" if figure.x > 2 / 3 else "centre"
    vertical = "top" if figure.y < 1 / 3 else "bottom" if figure.y > 2 / 3 else "middle"
    return f"{vertical} {horizontal}".replace("middle centre", "centre")


def _size(figure: Figure) -> str:
    return "small" if figure.area < SMALL_AREA else "large" if figure.area > LARGE_AREA else "medium-sized"


def figure_sentence(number: int, figure: Figure) -> str:
    if not figure.closed:
        kind = f"an open line ({figure.line_ends} ends, {figure.junctions} junctions)"
    else:
        fill = "filled" if figure.filled else "outline"
        kind = f"a {_size(figure)} {fill} {figure.shape} ({figure.corners} corners, {figure.holes} holes)"
    return (
        f"Figure {number} is {kind} in the {_where(figure)}, "
        f"elongation {figure.elongation:.2f}, convexity {figure.solidity:.2f}, "
        f"roundness {figure.circularity:.2f}, symmetry {figure.symmetry:.2f}."
    )


def figures_phrase(perception: PanelPerception) -> str:
    """The figures as one short noun phrase, such as a drawing prompt wants."""
    if not perception.figures:
        return "an empty white panel"
    named = [
        "an open line" if not f.closed else f"a {_size(f)} {'filled' if f.filled else 'outline'} {f.shape}"
        for f in perception.figures
    ]
    return "black line drawing on white: " + ", ".join(named)


def describe(perception: PanelPerception) -> str:
    if not perception.figures:
        return "The panel is empty."
    count = len(perception.figures)
    sentences = [f"The panel shows {count} figure{'s' if count != 1 else ''}."]
    sentences += [figure_sentence(n, f) for n, f in enumerate(perception.figures, 1)]
    sentences += [
        f"Figure {r.first + 1} is {r.relation} figure {r.second + 1}." for r in perception.relations
    ]
    return " ".join(sentences)


def differences(first: PanelPerception, second: PanelPerception) -> str:
    """The measured features in which the two panels differ most, largest relative difference first."""
    a, b = panel_row(first), panel_row(second)
    ranked = sorted(
        (abs(a[c.name] - b[c.name]) / max(abs(a[c.name]), abs(b[c.name]), 1e-9), c)
        for c in COLUMNS
        if a[c.name] != b[c.name]
    )[::-1]
    if not ranked:
        return "The two panels do not differ in any measured feature."
    said = [f"{c.phrase}: {a[c.name]:.3g} on the first, {b[c.name]:.3g} on the second" for _, c in ranked[:6]]
    return "The panels differ in " + "; ".join(said) + "."

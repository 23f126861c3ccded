"""A panel's perception in plain sentences, and the differences between two panels.

Descriptions stay short whatever the drawing: the largest figures are described
one by one, the rest counted by kind, and relations summarised as counts (a
panel of forty dots would otherwise list hundreds of pairs). Shape words follow
`Figure.shape`: polygons are named by their corners, curves are not polygons,
and round outlines have no corners.
"""

from __future__ import annotations

from collections import Counter

from agents.perception.features import Figure, PanelPerception
from agents.perception.table import COLUMNS, panel_row

SMALL_AREA = 0.02
LARGE_AREA = 0.15
DETAILED = 3
"""Figures described one by one; with more, the two largest are, and all are counted by kind."""
KINDS = 4
"""Kinds of figure named in a count; the rest are "other figures"."""


def _where(figure: Figure) -> str:
    horizontal = "left" if figure.x < 1 / 3 else "right" if figure.x > 2 / 3 else "centre"
    vertical = "top" if figure.y < 1 / 3 else "bottom" if figure.y > 2 / 3 else "middle"
    return f"{vertical} {horizontal}".replace("middle centre", "centre")


def _size(figure: Figure) -> str:
    return "small" if figure.area < SMALL_AREA else "large" if figure.area > LARGE_AREA else "medium-sized"


def _kind(figure: Figure) -> str:
    """What the figure is, in a few words: "small filled circle", "open line"."""
    if not figure.closed:
        return "open line"
    return f"{_size(figure)} {'filled' if figure.filled else 'outline'} {figure.shape}"


def _details(figure: Figure) -> str:
    """Corners (only where the outline has them) and extra enclosed regions, in brackets or nothing."""
    if not figure.closed:
        return f" ({figure.line_ends} ends, {figure.junctions} junctions)"
    said = []
    if figure.straight:
        said.append(f"{figure.corners} corners")
    elif figure.corners:
        said.append(f"{figure.corners} sharp corner{'s' if figure.corners != 1 else ''}")
    if figure.holes > 1:
        said.append(f"{figure.holes} enclosed regions")
    return f" ({', '.join(said)})" if said else ""


def figure_sentence(number: int, figure: Figure) -> str:
    article = "an" if _kind(figure)[0] in "aeiou" else "a"
    return (
        f"Figure {number} is {article} {_kind(figure)}{_details(figure)} in the {_where(figure)}, "
        f"elongation {figure.elongation:.2f}, convexity {figure.solidity:.2f}, "
        f"roundness {figure.circularity:.2f}, symmetry {figure.symmetry:.2f}."
    )


def _counted(figures: list[Figure]) -> str:
    """The figures counted by kind, most common first: "12 small filled circles and 2 open lines"."""
    counts = Counter(_kind(figure) for figure in figures).most_common()
    named = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts[:KINDS]]
    rest = sum(n for _, n in counts[KINDS:])
    if rest:
        named.append(f"{rest} other figure{'s' if rest != 1 else ''}")
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


def figures_phrase(perception: PanelPerception) -> str:
    """The figures as one short noun phrase, such as a drawing prompt wants."""
    if not perception.figures:
        return "an empty white panel"
    return "black line drawing on white: " + _counted(perception.figures)


def _relations(perception: PanelPerception) -> list[str]:
    """Inside and touching as counts; above and left of only between two figures."""
    said = []
    inside = sum(1 for r in perception.relations if r.relation == "inside")
    touching = sum(1 for r in perception.relations if r.relation == "touching")
    if inside:
        said.append(f"{inside} figure{' lies' if inside == 1 else 's lie'} inside another.")
    if touching:
        said.append(f"{touching} pair{' of figures touches' if touching == 1 else 's of figures touch'}.")
    if len(perception.figures) == 2:
        placed = [
            r.relation for r in perception.relations if r.first == 0 and r.relation in ("above", "left of")
        ]
        below = [
            r.relation for r in perception.relations if r.first == 1 and r.relation in ("above", "left of")
        ]
        where = [*placed, *("below" if r == "above" else "right of" for r in below)]
        if where:
            said.append(f"Figure 1 is {' and '.join(where)} figure 2.")
    return said


def describe(perception: PanelPerception) -> str:
    figures = perception.figures
    if not figures:
        return "The panel is empty."
    count = len(figures)
    if count <= DETAILED:
        sentences = [f"The panel shows {count} figure{'s' if count != 1 else ''}."]
        sentences += [figure_sentence(n, f) for n, f in enumerate(figures, 1)]
    else:
        largest = sorted(range(count), key=lambda k: -figures[k].area)[: DETAILED - 1]
        sentences = [f"The panel shows {count} figures: {_counted(figures)}."]
        numbers = " and ".join(str(k + 1) for k in sorted(largest))
        sentences.append(f"The {len(largest)} largest are figures {numbers}.")
        sentences += [figure_sentence(k + 1, figures[k]) for k in sorted(largest)]
    return " ".join([*sentences, *_relations(perception)])


def differences(first: PanelPerception, second: PanelPerception) -> str:
    """The measured features in which the two panels differ most, largest relative difference first."""
    a, b = panel_row(first), panel_row(second)
    ranked = sorted(
        (c for c in COLUMNS if a[c.name] != b[c.name]),
        key=lambda c: -abs(a[c.name] - b[c.name]) / max(abs(a[c.name]), abs(b[c.name]), 1e-9),
    )
    if not ranked:
        return "The two panels do not differ in any measured feature."
    said = [f"{c.phrase}: {a[c.name]:.3g} on the first, {b[c.name]:.3g} on the second" for c in ranked[:6]]
    return "The panels differ in " + "; ".join(said) + "."

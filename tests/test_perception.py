"""The offline perception agent: measurements on drawings made here, rule induction and decisions by
separability on constructed tables, descriptions of the real classic panels, the agent inside real
strategy graphs, and the embedded default run on real problems."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from agents.call import CallSpec, ImageSource
from agents.perception.agent import FEATURES_MARK, perception_reply
from agents.perception.features import PanelPerception, perceive
from agents.perception.rules import induce_rule
from agents.perception.sentences import describe
from agents.perception.separability import pair_sides, single_side
from agents.perception.table import COLUMNS
from agents.registry import resolve_agent
from datasets_io.catalog import open_dataset
from datasets_io.problem import Panel
from graphs.nodes import SolveRuntime
from graphs.solve import solve
from tests.cli import run_bongard

SIZE = 100
Draw = Callable[[ImageDraw.ImageDraw], None]


def drawing(tmp_path: Path, name: str, draw: Draw) -> Path:
    image = Image.new("L", (SIZE, SIZE), 255)
    draw(ImageDraw.Draw(image))
    path = tmp_path / f"{name}.png"
    image.save(path)
    return path


def seen(tmp_path: Path, name: str, draw: Draw) -> PanelPerception:
    return perceive(drawing(tmp_path, name, draw))


def test_a_filled_circle(tmp_path: Path) -> None:
    [figure] = seen(tmp_path, "disc", lambda d: d.ellipse((30, 30, 70, 70), fill=0)).figures
    assert figure.closed and figure.filled and figure.holes == 0
    assert figure.shape == "circle" and figure.circularity > 0.85
    assert figure.area == pytest.approx(3.1416 * 20.5**2 / SIZE**2, rel=0.05)
    assert figure.x == pytest.approx(0.5, abs=0.01) and figure.y == pytest.approx(0.5, abs=0.01)
    assert (
        figure.elongation == pytest.approx(1.0, abs=0.1) and figure.solidity > 0.95 and figure.symmetry > 0.9
    )


def test_an_outline_triangle(tmp_path: Path) -> None:
    [figure] = seen(
        tmp_path, "tri", lambda d: d.polygon([(20, 80), (80, 80), (50, 20)], outline=0, width=2)
    ).figures
    assert figure.closed and not figure.filled and figure.holes == 1
    assert figure.corners == 3 and figure.shape == "triangle"
    assert figure.extent == pytest.approx(0.61, abs=0.02)
    flat = seen(tmp_path, "flat", lambda d: d.ellipse((10, 40, 90, 60), fill=0)).figures[0]
    upright = seen(tmp_path, "upright", lambda d: d.ellipse((40, 10, 60, 90), fill=0)).figures[0]
    assert flat.orientation % 180 == pytest.approx(0, abs=2) and upright.orientation == pytest.approx(
        90, abs=2
    )
    assert flat.elongation == pytest.approx(4.0, rel=0.1)


def test_two_figures_their_positions_and_relations(tmp_path: Path) -> None:
    def draw(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((5, 40, 25, 60), fill=0)
        d.ellipse((60, 10, 90, 40), outline=0, width=2)

    panel = seen(tmp_path, "two", draw)
    square, ring = sorted(panel.figures, key=lambda f: f.x)
    assert len(panel.figures) == 2
    assert square.filled and square.corners == 4 and square.shape == "quadrilateral" and square.x < 1 / 3
    assert ring.closed and not ring.filled and ring.holes == 1 and ring.x > 2 / 3 and ring.y < 1 / 3
    relations = {(panel.figures[r.first].x < 0.5, r.relation) for r in panel.relations}
    assert (True, "left of") in relations


def test_a_figure_inside_another_an_open_line_and_an_empty_panel(tmp_path: Path) -> None:
    def nested(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((10, 10, 90, 90), outline=0, width=2)
        d.ellipse((40, 40, 60, 60), fill=0)

    panel = seen(tmp_path, "nested", nested)
    assert [r.relation for r in panel.relations if r.relation == "inside"] == ["inside"]
    inner = next(f for f in panel.figures if f.filled)
    assert panel.figures[next(r.first for r in panel.relations if r.relation == "inside")] == inner
    [line] = seen(tmp_path, "line", lambda d: d.line((10, 50, 90, 50), fill=0, width=2)).figures
    assert not line.closed and not line.filled and line.shape == "line"
    assert line.line_ends == 2 and line.length == pytest.approx(0.8, abs=0.05) and line.elongation > 10
    assert seen(tmp_path, "empty", lambda d: None).figures == []


def row(**values: float) -> dict[str, float]:
    return {column.name: values.get(column.name, 0.0) for column in COLUMNS}


def test_a_single_condition_is_found_and_said_with_whole_numbers() -> None:
    left = [row(figures=1, ink=0.1 * n) for n in range(1, 6)]
    right = [row(figures=2 + n % 2, ink=0.1 * n) for n in range(1, 6)]
    rule = induce_rule(left, right)
    assert rule is not None and len(rule.conditions) == 1 and rule.conditions[0].column.name == "figures"
    assert (
        rule.text() == "Left: the number of figures is at most 1\nRight: the number of figures is at least 2"
    )
    assert rule.side_of(row(figures=1)) == "left" and rule.side_of(row(figures=4)) == "right"


def test_the_larger_margin_wins_and_a_conjunction_is_used_only_when_needed() -> None:
    left = [row(largest_area=0.5 + 0.01 * n, ink=0.30 + 0.01 * n) for n in range(5)]
    right = [row(largest_area=0.1 + 0.01 * n, ink=0.26 - 0.01 * n) for n in range(5)]
    rule = induce_rule(left, right)
    assert rule is not None and rule.conditions[0].column.name == "largest_area"  # gap 0.36 against 0.04
    # Filled on the left means: many filled figures AND no outline ones; neither alone separates.
    left = [row(filled_figures=2, outline_figures=0) for _ in range(5)]
    right = [row(filled_figures=2, outline_figures=1), row(filled_figures=0, outline_figures=0)] * 2
    pair = induce_rule(left, right, max_exceptions=0)
    assert pair is not None and {c.column.name for c in pair.conditions} == {
        "filled_figures",
        "outline_figures",
    }
    assert pair.side == "left" and " and " in pair.sentences()["left"] and " or " in pair.sentences()["right"]


def test_an_exact_conjunction_comes_before_a_single_condition_with_exceptions() -> None:
    left = [row(figures=1, ink=0.1 + 0.01 * n) for n in range(4)] + [row(figures=3, ink=0.14)]
    right = [row(figures=2 + n % 2, ink=0.5 + 0.01 * n) for n in range(4)] + [row(figures=3, ink=0.01)]
    rule = induce_rule(left, right)
    assert rule is not None and rule.exceptions == 0 and len(rule.conditions) == 2
    assert {c.column.name for c in rule.conditions} == {"ink"}  # ink in a band: above 0.075 and at most 0.32
    loose = induce_rule(left, right, max_conditions=1)
    assert loose is not None and loose.exceptions == 1 and loose.conditions[0].column.name == "ink"
    said = "the share of the panel covered in ink is"
    assert loose.text() == f"Left: {said} at most 0.32\nRight: {said} above 0.32"


def test_two_tests_on_one_side_of_the_rule_still_go_to_different_sides_ordered_by_margin() -> None:
    left = [row(ink=0.10 + 0.02 * n, figures=1 + n % 2) for n in range(5)]
    right = [row(ink=0.50 + 0.02 * n, figures=1 + (n + 1) % 2) for n in range(5)]
    rule = induce_rule(left, right)
    assert rule is not None and rule.conditions[0].column.name == "ink"
    nearer, farther = row(ink=0.40, figures=1), row(ink=0.56, figures=1)
    assert rule.side_of(nearer) == rule.side_of(farther) == "right"  # the threshold alone: both right
    assert pair_sides(left, right, farther, nearer).sides == ("right", "left")
    assert pair_sides(left, right, nearer, farther).sides == ("left", "right")
    decision = pair_sides(left, right, nearer, farther)
    assert decision.deciding[0].name == "ink"
    assert single_side(left, right, nearer).sides == ("right",)  # alone, it is nearer the right panels


def test_tests_that_measure_alike_go_to_the_sides_of_their_nearest_panels() -> None:
    left = [row(figures=1, ink=0.1), row(figures=2, ink=0.2)]
    right = [row(figures=1, ink=0.1), row(figures=3, ink=0.9)]
    assert induce_rule(left, right, max_exceptions=0) is None
    decision = single_side(left, right, row(figures=3, ink=0.8))
    assert decision.sides == ("right",)


def test_the_pair_goes_one_on_each_side_in_the_agent(tmp_path: Path) -> None:
    def disc(radius: int, x: int) -> Draw:
        return lambda d: d.ellipse((x - radius, 50 - radius, x + radius, 50 + radius), fill=0)

    small = [drawing(tmp_path, f"s{n}", disc(6 + n, 30 + 10 * n)) for n in range(5)]
    large = [drawing(tmp_path, f"l{n}", disc(30 + n, 40 + 4 * n)) for n in range(5)]
    context = [Panel(path=p, side="left", index=n) for n, p in enumerate(small)] + [
        Panel(path=p, side="right", index=n) for n, p in enumerate(large)
    ]
    tests = [
        Panel(path=drawing(tmp_path, "t28", disc(28, 50)), side="right", index=6, role="test"),
        Panel(path=drawing(tmp_path, "t24", disc(24, 50)), side="left", index=6, role="test"),
    ]
    images = [ImageSource(path=context[0].path, panels=context, layout="sheet")]
    images += [ImageSource(path=t.path, panels=[t]) for t in tests]
    refs = [t.ref for t in tests]
    rule = perception_reply(CallSpec(task="answer", images=images[:1])).splitlines()[0]
    assert rule.startswith("Left:") and "at most" in rule  # both tests are larger than the threshold
    paired = CallSpec(task="classify", images=images, extra={"test_panels": refs, "opposite_sides": True})
    reply = perception_reply(paired).splitlines()
    assert [line.split(":")[0] for line in reply] == ["RIGHT", "LEFT"]
    assert all("different sides" in line and "puts this panel right" in line for line in reply)


def test_descriptions_of_the_classic_panels_are_short_and_name_shapes_rightly(shared_data: Path) -> None:
    longest = 0
    for number in range(1, 101):
        for panel in classic_panels(shared_data, number):
            perception = perceive(panel.path)
            longest = max(longest, len(describe(perception).split()))
            for figure in perception.figures:
                if figure.shape in ("circle", "oval"):
                    assert figure.corners == 0 and not figure.straight, (panel.path, figure)
    assert longest <= 120
    problem = open_dataset("bongard-classic", shared_data, {}).problem("5")  # polygons vs curves
    assert all(f.straight for p in problem.left for f in perceive(p.path).figures)
    assert not any(f.straight for p in problem.right for f in perceive(p.path).figures)
    circle = describe(perceive(problem.right[0].path))  # panel 6 of problem 5: one outline circle
    assert "outline circle" in circle and "corner" not in circle


def classic_panels(shared_data: Path, number: int) -> list[Panel]:
    return (
        open_dataset("bongard-classic", shared_data, {"holdout_test": "true"}).problem(str(number)).all_panels
    )


def test_the_agent_answers_from_metadata_and_never_reads_a_test_panels_side(shared_data: Path) -> None:
    panels = classic_panels(shared_data, 3)  # outline figures vs solid figures
    context = [p for p in panels if p.role == "context"]
    tests = [p for p in panels if p.role == "test"]
    sheet = ImageSource(path=context[0].path, panels=context, layout="sheet")
    images = [sheet, *(ImageSource(path=t.path, panels=[t]) for t in tests)]
    call = CallSpec(task="classify", images=images, extra={"test_panels": [t.ref for t in tests]})
    lied = [t.model_copy(update={"side": {"left": "right", "right": "left"}[t.side]}) for t in tests]
    lying = CallSpec(
        task="classify",
        images=[sheet, *(ImageSource(path=t.path, panels=[t]) for t in lied)],
        extra={"test_panels": [t.ref for t in lied]},
    )
    assert perception_reply(call) == perception_reply(lying)
    assert [line.split(":")[0] for line in perception_reply(call).splitlines()] == ["RIGHT", "LEFT"][
        :: 1 if tests[0].side == "right" else -1
    ]
    answer = perception_reply(CallSpec(task="answer", images=[sheet]))
    assert answer.startswith("Left: the number of filled figures is at most 0\nRight:")
    with pytest.raises(ValueError, match="cannot do 'judge' calls"):
        perception_reply(CallSpec(task="judge", images=[sheet]))


def test_perception_plugs_into_descriptive_on_both_roles(shared_data: Path, tmp_path: Path) -> None:
    problem = open_dataset("bongard-classic", shared_data, {}).problem("3")
    agent = resolve_agent("perception", home=tmp_path)
    runtime = SolveRuntime(agents={"default": agent}, render_dir=tmp_path / "renders")
    answer = asyncio.run(solve("descriptive", problem, runtime))
    assert len(answer.trace) == 13 and answer.trace[-1].images == []  # the answer call sees no image
    assert answer.parse_status == "ok" and answer.left_rule == "the number of filled figures is at most 0"
    description = answer.trace[0].reply
    assert description.startswith("The panel shows 1 figure.")
    features = json.loads(description.splitlines()[-1].removeprefix(FEATURES_MARK))
    assert list(features) == ["left-0"] and features["left-0"]["side"] == "left"
    assert answer.cost_usd == 0.0


def test_the_default_run_needs_no_options_keys_or_network(tmp_path: Path) -> None:
    result = run_bongard("run", "--problems", "1-6", "--home", tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "images-to-sides on bongard-classic" in result.stdout
    assert "6/6 items done, 0 failed" in result.stdout
    assert "images-to-sides · perception · bongard-classic" in " ".join(result.stdout.split())  # the title
    row = next(line for line in result.stdout.splitlines() if line.startswith("│"))
    cells = [cell.strip() for cell in row.split("│") if cell.strip()]
    assert cells[:2] == ["6", "6"] and cells[3] == "0"  # problems, n, solved, failed
    assert 3 <= int(cells[2]) <= 6  # problems 1, 2, 3 and 4 are solved by single measured features

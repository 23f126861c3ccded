"""Type I-IV analysis (Wüst et al., Sec. 5, Fig. 3 and 10, Table 15): how solving one task relates to another.

T1 is the set of problems a model solved open-ended (Task 1), T2 those whose
every panel it classified right with the concept probe (Task 2), T3 those for
which one of its hypotheses was accepted (Task 3). The types are intersections:
I = T1 and T2 but not T3, II = T2 and T3 but not T1, III = T1 and T3 but not
T2, IV = all three.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

from results.figures import FigureFormat, figure_file

TASKS = ("open-ended", "concept-probe", "hypotheses")
"""The strategy behind T1, T2 and T3."""
REGIONS = {"I": "110", "II": "011", "III": "101", "IV": "111"}
"""Each type's region of the three-set Venn diagram (membership in T1, T2, T3)."""


def _key(problem: str) -> tuple[int, str]:
    """Problems in numeric order where their ids are numbers."""
    name = problem.rsplit("/", 1)[-1]
    return (int(name), "") if name.isdigit() else (1 << 30, name)


@dataclass(frozen=True)
class TaskTypes:
    t1: frozenset[str]
    t2: frozenset[str]
    t3: frozenset[str]

    @property
    def type_i(self) -> frozenset[str]:
        return (self.t1 & self.t2) - self.t3

    @property
    def type_ii(self) -> frozenset[str]:
        return (self.t2 & self.t3) - self.t1

    @property
    def type_iii(self) -> frozenset[str]:
        return (self.t1 & self.t3) - self.t2

    @property
    def type_iv(self) -> frozenset[str]:
        return self.t1 & self.t2 & self.t3

    def types(self) -> dict[str, frozenset[str]]:
        return {"I": self.type_i, "II": self.type_ii, "III": self.type_iii, "IV": self.type_iv}

    def counts(self) -> dict[str, int | float | None]:
        """The row of Table 15: sizes, T1 and T3 over T1, the four types, Type IV over T1."""
        share = (lambda n: round(n / len(self.t1), 4)) if self.t1 else (lambda n: None)
        return {
            "T1": len(self.t1),
            "T2": len(self.t2),
            "T3": len(self.t3),
            "T1&T3/T1": share(len(self.t1 & self.t3)),
            **{f"Type {name}": len(members) for name, members in self.types().items()},
            "Type IV/T1": share(len(self.type_iv)),
        }

    def members(self) -> dict[str, list[str]]:
        """Every set and type with its problems, in problem order."""
        named = {"T1": self.t1, "T2": self.t2, "T3": self.t3}
        named |= {f"Type {name}": members for name, members in self.types().items()}
        return {name: sorted(members, key=_key) for name, members in named.items()}


def markdown_table(types: TaskTypes, title: str) -> str:
    counts = types.counts()
    header = "| " + " | ".join(["", *counts]) + " |"
    rule = "| " + " | ".join(["---"] * (len(counts) + 1)) + " |"
    row = "| " + " | ".join([title, *("" if v is None else str(v) for v in counts.values())]) + " |"
    return "\n".join([header, rule, row])


def write_types(types: TaskTypes, title: str, out: Path, fmt: FigureFormat = "png") -> None:
    """`types.md` (the table and every type's problems), `types.json` and the Venn diagram
    `types.<fmt>`, its title wrapped whole rather than cut at the edge."""
    out.mkdir(parents=True, exist_ok=True)
    members = types.members()
    listing = "\n".join(
        f"- {name}: {', '.join(p.rsplit('/', 1)[-1] for p in ps) or '-'}" for name, ps in members.items()
    )
    (out / "types.md").write_text(f"{markdown_table(types, title)}\n\n{listing}\n", encoding="utf-8")
    report = {"title": title, "counts": types.counts(), "members": members}
    (out / "types.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    from matplotlib_venn import venn3  # with scipy, over a second to import: only when drawing
    from matplotlib_venn.layout.venn3 import DefaultLayoutAlgorithm

    with figure_file(out / f"types.{fmt}", (6, 6)) as axes:
        diagram = venn3(
            (set(types.t1), set(types.t2), set(types.t3)),
            ("T1 open-ended", "T2 concept probe", "T3 hypotheses"),
            ax=axes,
            # every region the same size, its count written in it: no area to misread, and no
            # layout that fails (with a warning) for empty or nested sets
            layout_algorithm=DefaultLayoutAlgorithm(fixed_subset_sizes=(1,) * 7),
        )
        for name, region in REGIONS.items():
            label = diagram.get_label_by_id(region)
            if label is not None:  # an empty region has no label
                label.set_text(f"{label.get_text()}\nType {name}")
        axes.set_title(textwrap.fill(title, 60))

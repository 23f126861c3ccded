"""The `bongard` command's entry, under this distribution's own name.

Its packages' import names are common words another distribution may use too: the OpenAI Agents
SDK installs `agents`. Installed side by side, one package shadows or overwrites the other and the
command failed deep inside an import. So before anything is imported, each of the five names is
checked to be this distribution's own package (its `__init__.py` names bongard-agents, read, not
imported, which costs well under a millisecond); if one is not, one line says which distribution
holds the name instead, and the command exits 2.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec
from pathlib import Path

DISTRIBUTION = "bongard-agents"
PACKAGES = ("datasets_io", "results", "agents", "judges", "graphs")


def shadowed() -> str | None:
    """Why one of the packages is not this distribution's own, or None when all five are."""
    for name in PACKAGES:
        spec = find_spec(name)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is not None and origin.name == "__init__.py":
            with origin.open(encoding="utf-8", errors="replace") as opened:
                if DISTRIBUTION in opened.read(512):
                    continue
        where = f"is {origin.parent}" if origin is not None else "is no package"
        return (
            f"the import name '{name}' {where}, not the one {DISTRIBUTION} installs: {_holders(name)} "
            f"installs '{name}' too; install {DISTRIBUTION} in a virtualenv without it"
        )
    return None


def _holders(name: str) -> str:
    """The other distributions that declare `name` (reading every installed distribution's record:
    half a second, spent only when something is wrong)."""
    from importlib.metadata import packages_distributions

    others = sorted(set(packages_distributions().get(name, [])) - {DISTRIBUTION})
    return " and ".join(others) if others else "another installed package"


def main() -> None:
    """`bongard`: the checked entry, then the command itself (`graphs.cli.main`)."""
    if (problem := shadowed()) is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    from graphs.cli import main as command

    command()

"""Another distribution holding one of this toolkit's import names is said in one line (issue 48).

The packages' names are common words (`agents` is also the OpenAI Agents SDK's): installed side by
side, one shadowed the other and `bongard` failed deep inside an import. The command's entry
(`bongard_agents.main`) now checks the five names first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bongard_agents


def test_every_import_name_is_this_distributions_own_here() -> None:
    assert bongard_agents.shadowed() is None


def shadowing_site(site: Path) -> Path:
    """A site folder with a distribution `shadow-agents` that installs an `agents` package."""
    (site / "agents").mkdir(parents=True)
    (site / "agents" / "__init__.py").write_text('"""Some other agents."""\n', encoding="utf-8")
    info = site / "shadow_agents-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: shadow-agents\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "top_level.txt").write_text("agents\n", encoding="utf-8")
    (info / "RECORD").write_text("agents/__init__.py,,\n", encoding="utf-8")
    return site


def test_a_distribution_shadowing_agents_is_named_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    site = shadowing_site(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(site)}
    entry = "import sys; sys.argv = ['bongard', 'strategies']; import bongard_agents; bongard_agents.main()"
    ran = subprocess.run(
        [sys.executable, "-c", entry], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.splitlines() == [
        f"error: the import name 'agents' is {site / 'agents'}, not the one bongard-agents installs: "
        "shadow-agents installs 'agents' too; install bongard-agents in a virtualenv without it"
    ]

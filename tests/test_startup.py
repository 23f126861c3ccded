"""Start-up stays light: `bongard --help` loads no plotting, data-frame, LangGraph or vision library.

The libraries are checked by name, not by time (`python -m benchmarks.startup` prints the
time): a command that draws or tabulates imports them itself, when it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "matplotlib", "matplotlib_venn", "pandas", "scipy", "tabulate", "langgraph", "numpy", "cv2",
    "skimage", "torch", "sentence_transformers", "openai", "anthropic",
)  # fmt: skip
HELP = f"""
import json, sys
sys.argv = ["bongard", "--help"]
from graphs.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(name for name in {HEAVY!r} if name in sys.modules)))
"""


def test_bongard_help_imports_none_of_the_heavy_libraries() -> None:
    result = subprocess.run([sys.executable, "-c", HELP], capture_output=True, text=True, check=True)
    assert "Usage: bongard" in result.stdout
    assert json.loads(result.stdout.splitlines()[-1]) == []

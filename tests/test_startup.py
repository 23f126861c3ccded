"""Start-up stays light: `bongard --help` loads no plotting, data-frame, LangGraph or vision library,
and a command loads its own module, not the other commands'.

The libraries are checked by name, not by time (`python -m benchmarks.startup` prints the
time): a command that draws or tabulates imports them itself, when it runs.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from results.intervals import wilson
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer

HEAVY = (
    "matplotlib", "matplotlib_venn", "pandas", "scipy", "tabulate", "langgraph", "numpy", "cv2",
    "skimage", "torch", "sentence_transformers", "openai", "anthropic",
)  # fmt: skip
SHARED = {"graphs.cli", "graphs.cli.cells", "graphs.cli.console", "graphs.cli.imports", "graphs.cli.options"}
"""The CLI's package and the modules every command shares."""
LOADED = """
import json, sys
sys.argv = ["bongard", *{argv!r}]
from graphs.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules if {wanted})))
"""
HEAVY_OR_CLI = f"name in {HEAVY!r} or name.startswith('graphs.cli')"


def loaded_by(*argv: str, wanted: str = HEAVY_OR_CLI) -> tuple[str, list[str]]:
    """What `bongard ARGV` prints, and the modules it loaded that `wanted` (an expression of `name`)
    picks: by default the heavy libraries and the CLI's modules."""
    script = LOADED.format(argv=list(argv), wanted=wanted)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    *printed, modules = result.stdout.splitlines()
    return "\n".join(printed), json.loads(modules)


def test_bongard_help_imports_none_of_the_heavy_libraries() -> None:
    printed, loaded = loaded_by("--help")
    assert "Usage: bongard" in printed and "analyze" in printed and "export" in printed
    assert [name for name in loaded if name in HEAVY] == []


def test_a_command_loads_its_own_module_and_no_other_commands() -> None:
    printed, loaded = loaded_by("run", "--help")
    assert "Usage: bongard run" in printed and "--concurrency" in printed
    assert [name for name in loaded if name not in SHARED] == ["graphs.cli.run"]


RUN_START = """
import json, sys
from graphs.registry import get_strategy
import graphs.runs.runner
get_strategy("descriptive")  # lists every strategy: each strategy module is imported
print(json.dumps(sorted(name for name in {lazy!r} if name in sys.modules)))
"""
LAZY_IN_A_RUN = ("lark", "regex", "jsonschema", "scipy", "matplotlib")
"""What a run's start-up must not import: the rule language's parser, JSON-schema validation (for
JSON-schema outputs only), and the report's libraries."""


def test_a_runs_start_up_leaves_the_parser_and_schema_validation_to_their_first_use() -> None:
    script = RUN_START.format(lazy=LAZY_IN_A_RUN)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_the_parser_and_the_schema_validator_still_work_once_asked_for() -> None:
    from agents.structured import ReplyParseError, validate_output
    from graphs.programs.language import RuleError, parse_rule

    assert str(parse_rule("triangles > 1 and not circles == 0", ["triangles", "circles"])) == (
        "triangles > 1 and not circles == 0"
    )
    for text in ("triangles >", "triangles > 1 or"):
        try:
            parse_rule(text, ["triangles"])
        except RuleError as error:
            assert "not a rule of the language" in str(error)
        else:
            raise AssertionError(f"{text!r} parsed")
    schema = {"type": "object", "properties": {"side": {"enum": ["left", "right"]}}, "required": ["side"]}
    assert validate_output({"side": "left"}, schema) == {"side": "left"}
    try:
        validate_output({"side": "up"}, schema)
    except ReplyParseError as error:
        assert error.args[0].startswith("side: ")
    else:
        raise AssertionError("a side outside the enum was accepted")


BOTH_LEFT = {"explanation": "", "concept": "", "answer": "LEFT"}
REPORT_LIBRARIES = {"pandas", "scipy", "matplotlib", "matplotlib_venn", "tabulate"}
"""What `compare` and the viewer's compare page draw and tabulate with; a run's own result row is
read without them (`results.report_rows`)."""


def test_a_run_ends_with_its_result_table_and_loads_no_table_or_plot_library(
    shared_data: Path, tmp_path: Path
) -> None:
    """pandas' import was most of a run's tail (0.3 s): the result row is read from SQLite's sums."""
    with StandInServer(
        OpenAIChat(), lambda body: json.dumps({"first": BOTH_LEFT, "second": BOTH_LEFT})
    ) as server:
        printed, loaded = loaded_by(
            "run",
            "--strategy",
            "images-to-sides",
            "--model",
            f"openai-compatible:m@{server.url}/v1",
            "--dataset",
            "bongard-classic",
            "-O",
            "holdout_test=true",
            "--problems",
            "1-3",
            "--data-dir",
            str(shared_data),
            "--home",
            str(tmp_path),
        )
    table = " ".join(printed.split())
    _, high = wilson(0, 3)  # both test images put left: none of the 3 problems solved, half the images right
    row = f"│ 3 │ 3 │ 0 │ 0 │ 0.000 [0.000, {high:.3f}] │ 0.000 │ 0.500 ["  # refused: none
    assert "result of run-" in table and row in table, table
    assert REPORT_LIBRARIES.isdisjoint(loaded), loaded


def test_a_run_never_runs_the_package_inits_it_does_not_use(shared_data: Path, tmp_path: Path) -> None:
    """LangChain imports one submodule of `langsmith.types` and LangGraph one of `langgraph_sdk`, whose
    `__init__`s import 165 API types and the LangGraph Platform client: 281 modules a run never uses
    (`agents/deferred_imports.py`). A whole run loads only the submodules themselves."""
    with StandInServer(
        OpenAIChat(), lambda body: json.dumps({"first": BOTH_LEFT, "second": BOTH_LEFT})
    ) as server:
        printed, loaded = loaded_by(
            "run", "--strategy", "images-to-sides", "--model", f"openai-compatible:m@{server.url}/v1",
            "--dataset", "bongard-classic", "-O", "holdout_test=true", "--problems", "1-2",
            "--data-dir", str(shared_data), "--home", str(tmp_path),
            wanted="name.startswith(('langsmith.types', 'langgraph_sdk'))",
        )  # fmt: skip
    assert "result of run-" in " ".join(printed.split())
    assert loaded == [
        "langgraph_sdk", "langgraph_sdk.auth", "langgraph_sdk.auth.exceptions", "langgraph_sdk.auth.types",
        "langsmith.types", "langsmith.types.run_select_field",
    ]  # fmt: skip


def test_a_deferred_package_is_whole_once_a_name_of_its_init_is_asked_for() -> None:
    script = (
        "import graphs.runs.runner, sys\n"
        "from langsmith.types import RunSelectField\n"
        "from langgraph_sdk import get_client\n"
        "print(sum(name.startswith('langsmith.types.') for name in sys.modules), get_client.__name__)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    count, name = result.stdout.split()
    assert int(count) > 100 and name == "get_client"


WATCHED = """
import gc, json, sys
seen = {{}}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in {watched!r}:
            seen[name] = gc.isenabled()
sys.meta_path.insert(0, Watch())
sys.argv = ["bongard", *{argv!r}]
from graphs.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps({{"collector running at import": seen, "after": gc.isenabled()}}))
"""


def test_a_run_imports_its_libraries_with_the_collector_paused(shared_data: Path, tmp_path: Path) -> None:
    """The collector walked every object the imports had made on each pass (0.09 s of 0.69 s of
    import CPU); `graphs.cli.imports` pauses it for the imports and runs it again after."""
    watched = ("graphs.cli.run", "graphs.runs.runner", "langgraph.graph", "langchain_core.language_models")
    argv = ["run", "--problems", "1-2", "--data-dir", str(shared_data), "--home", str(tmp_path)]
    script = WATCHED.format(watched=watched, argv=argv)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "complete, 2/2 items done" in result.stdout, result.stdout
    assert json.loads(result.stdout.splitlines()[-1]) == {
        "collector running at import": dict.fromkeys(watched, False),
        "after": True,
    }


def test_imports_leave_the_collector_as_they_found_it() -> None:
    from graphs.cli.imports import uncollected_imports

    gc.unfreeze()
    try:
        with uncollected_imports():
            assert not gc.isenabled()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        gc.disable()
        with uncollected_imports():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()

"""`bongard experiment plan | run | list` against recording stand-ins: the plan's calls are the
requests a grid sends, its cost is close to the bill, a finished grid sends nothing again, a killed
one repeats no finished call, and a budget stops it."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard, run_bongard_process
from tests.killed_runs import kill, start, wait_for
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandIn, StandInServer
from tests.standins.token_counts import openai_usage

WORDS = ("a", "figure", "drawn", "with", "straight", "lines", "and", "one", "closed", "curve", "near", "the")
PRICES = {"gpt-4-turbo": ("10", "30"), "gpt-4o": ("2.5", "10")}


def prompt_of(body: Any) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def respond(body: Any) -> str:
    """A reply of the kind the prompt asks for, its length varying with the request as a model's does."""
    spread = int(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest(), 16)
    words = " ".join(WORDS[: 6 + spread % 10])
    if "Left" in prompt_of(body) or "left" in prompt_of(body):
        return f"Left: {words}\nRight: not {words}"
    return words


@pytest.fixture
def billing(standin: StandIn) -> StandInServer:
    """An OpenAI-protocol stand-in that bills each request as OpenAI counts it."""
    return standin(protocol=OpenAIChat(counts=openai_usage), responder=respond)


def experiment(
    folder: Path,
    server: StandInServer,
    data: Path,
    problems: str = "1-3",
    name: str = "grid",
    strategies: tuple[str, ...] = ("direct", "descriptive"),
    **extra: str,
) -> Path:
    models = ", ".join(
        f'{{ spec = "openai-compatible:{name}@{server.url}/v1", '
        f"params = {{ price_input = {price_in}, price_output = {price_out}, temperature = 0.7 }} }}"
        for name, (price_in, price_out) in PRICES.items()
    )
    settings = "\n".join(f"{key} = {value}" for key, value in extra.items())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nstrategies = {json.dumps(list(strategies))}\nmodels = [{models}]\n'
        f"concurrency = 2\n{settings}\n"
        f'[[datasets]]\nname = "bongard-classic"\ndata_dir = "{data}"\nproblems = "{problems}"\n'
        f'options = {{ holdout_test = "true" }}\n'
    )
    return path


def plan_json(path: Path, home: Path) -> dict[str, Any]:
    result = run_bongard("experiment", "plan", path, "--json", "--home", home)
    assert result.returncode == 0, result.stderr
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


def cell_runs(home: Path, name: str = "grid") -> dict[str, str]:
    result = run_bongard("experiment", "list", "--json", "--home", home)
    assert result.returncode == 0, result.stderr
    [grid] = [found for found in json.loads(result.stdout) if found["name"] == name]
    runs: dict[str, str] = grid["runs"]
    return runs


def calibrated_grid(
    server: StandInServer, folder: Path, data: Path, strategies: tuple[str, ...] = ("direct", "descriptive")
) -> tuple[Path, Path]:
    """The grid's workspace and file, one problem of its strategies and models run first, so the
    plan learns their reply lengths from the store, as it would from a researcher's earlier runs."""
    home = folder / "home"
    calibration = experiment(folder, server, data, problems="7", name="calibration", strategies=strategies)
    assert run_bongard("experiment", "run", calibration, "--home", home).returncode == 0
    server.requests.clear()
    return home, experiment(folder, server, data, strategies=strategies)


def test_the_minimal_file_plans_every_cell_of_the_grid(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "two.toml"
    path.write_text(
        'name = "two-by-two"\nstrategies = ["direct", "descriptive"]\n'
        'models = ["openai-compatible:a@http://127.0.0.1:8000/v1", "openai-compatible:b@http://127.0.0.1:8000/v1"]\n'
        '[[datasets]]\nname = "bongard-classic"\nproblems = "1-3"\n'
    )
    result = run_bongard(
        "experiment",
        "plan",
        path,
        "--json",
        "--home",
        tmp_path / "home",
        env={"BONGARD_DATA": str(shared_data)},
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["calls"], plan["cost"]) == (2 * 3 * 1 + 2 * 3 * 13, None)  # direct: 1 call, descriptive: 13
    assert [cell["calls"] for cell in plan["cells"]] == [3, 3, 39, 39]
    assert all(cell["input_tokens"] > 0 for cell in plan["cells"])


@pytest.mark.parametrize(
    "strategies",
    [
        ("direct", "descriptive"),
        ("contrastive", "descriptive-iterative"),
        ("contrastive-iterative", "contrastive-direct"),
    ],
    ids="+".join,
)
def test_the_plan_counts_the_requests_and_prices_the_bill(
    strategies: tuple[str, ...], billing: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    home, path = calibrated_grid(billing, tmp_path, shared_data, strategies)

    plan = plan_json(path, home)
    result = run_bongard("experiment", "run", path, "--home", home)
    assert result.returncode == 0, result.stderr
    store = ResultsStore(home / STORE_FILE)
    runs = cell_runs(home)
    requests = len(list(billing.model_requests()))
    assert requests == plan["calls"] == sum(cell["calls"] for cell in plan["cells"])
    for model in PRICES:  # each model's cells: their planned calls are the requests it received
        received = sum(1 for r in billing.model_requests() if r.body["model"] == model)
        assert received == sum(cell["calls"] for cell in plan["cells"] if f":{model}@" in cell["model"])
    for cell in plan["cells"]:
        summary = store.summary(runs[cell["key"]])
        assert summary.calls == cell["calls"], cell["key"]
        assert summary.cost_usd is not None
        assert abs(cell["cost_usd"] - summary.cost_usd) <= 0.15 * summary.cost_usd, (cell, summary.cost_usd)
        assert cell["cost_low_usd"] <= summary.cost_usd <= cell["cost_high_usd"]

    again = run_bongard("experiment", "run", path, "--home", home)
    assert again.returncode == 0, again.stderr
    assert len(list(billing.model_requests())) == requests  # a finished grid sends nothing
    assert plan_json(path, home)["calls"] == 0


def test_a_grid_killed_mid_way_resumes_without_repeating_a_finished_call(
    billing: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    home = tmp_path / "home"
    path = experiment(tmp_path, billing, shared_data)
    planned = plan_json(path, home)["calls"]
    billing.latency_s = 0.1
    process = start("experiment", "run", str(path), "--home", str(home))
    wait_for(lambda: len(list(billing.model_requests())) >= planned // 2, "half the grid's requests")
    killed_at = time.time()
    kill(process)
    before = list(billing.model_requests())
    finished = {
        json.dumps(r.body, sort_keys=True) for r in before if r.at + billing.latency_s < killed_at - 0.05
    }
    billing.latency_s = 0.0
    resumed = run_bongard("experiment", "run", path, "--home", home)
    assert resumed.returncode == 0, resumed.stderr
    after = list(billing.model_requests())[len(before) :]
    assert not finished & {json.dumps(r.body, sort_keys=True) for r in after}
    assert len(finished) >= planned // 3  # the kill fell mid-grid, with calls finished before it
    store = ResultsStore(home / STORE_FILE)
    assert all(store.summary(run_id).status == "complete" for run_id in cell_runs(home).values())
    assert sum(store.summary(run_id).calls for run_id in cell_runs(home).values()) == planned


def test_a_budget_stops_the_grid_and_a_larger_one_finishes_it(
    billing: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    home, path = calibrated_grid(billing, tmp_path, shared_data)
    plan = plan_json(path, home)
    half = plan["cost"] / 2
    stopped = run_bongard("experiment", "run", path, "--budget", f"{half:.4f}", "--home", home)
    assert stopped.returncode == 3, stopped.stderr
    assert "budget" in stopped.stderr and "resume with `bongard experiment run" in stopped.stdout
    bills = [billed(r.body) for r in billing.model_requests()]  # what the provider would charge
    concurrency = 2
    assert sum(bills) <= round(half, 4) + (concurrency - 1) * max(bills)  # the bound the docs state
    assert sum(bills) >= half / 2  # it ran until near the budget, not stopped at once
    command = stopped.stdout.split("resume with `")[1].split("`")[0].split()
    assert command[:3] == ["bongard", "experiment", "run"]
    finished = run_bongard(*command[1:])
    assert finished.returncode == 0, finished.stderr
    store = ResultsStore(home / STORE_FILE)
    assert all(store.summary(run_id).status == "complete" for run_id in cell_runs(home).values())


def billed(body: Any) -> float:
    """What one request costs at the grid's prices, counted as the stand-in bills it."""
    tokens_in, tokens_out = openai_usage(body, respond(body))
    price_in, price_out = PRICES[body["model"]]
    return (tokens_in * float(price_in) + tokens_out * float(price_out)) / 1e6


@pytest.mark.parametrize(
    ("line", "written", "says"),
    [
        (2, 'strategies = ["direct", "descriptve"]', "'descriptve'"),
        (3, 'models = ["openai-compatible:a@http://127.0.0.1:1/v1", "nosuch:model"]', "nosuch"),
        (3, 'models = [{ spec = "openai-compatible:a@http://127.0.0.1:1/v1", params = { temprature = 1 } }]',
         "temprature"),
        (6, 'problems = "9-1"', "9-1"),
        (2, 'strategies = [{ name = "direct", options = { shape = "round" } }]', "shape"),
        (4, "attempts = 0", "attempts"),
    ],
)  # fmt: skip
def test_a_bad_name_or_value_is_one_line_naming_the_file_and_line(
    line: int, written: str, says: str, tmp_path: Path, shared_data: Path
) -> None:
    lines = [
        'name = "bad"',
        'strategies = ["direct"]',
        'models = ["openai-compatible:a@http://127.0.0.1:1/v1"]',
        "attempts = 1",
        "[[datasets]]",
        'problems = "1-2"',
        'name = "bongard-classic"',
        f'data_dir = "{shared_data}"',
    ]
    key = written.split(" =")[0]
    lines = [written if current.split(" =")[0] == key else current for current in lines]
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(lines) + "\n")
    for command in ("plan", "run"):
        result = run_bongard("experiment", command, path, "--home", tmp_path / "home")
        assert result.returncode == 2, result.stdout
        [error] = result.stderr.strip().splitlines()
        assert error.startswith(f"error: {path}:{line}:") and says in error, error
    assert (
        not (tmp_path / "home" / STORE_FILE).exists()
        or not ResultsStore(tmp_path / "home" / STORE_FILE).run_ids()
    )


def test_a_grid_runs_on_a_ray_pool_and_a_budget_is_kept_to_a_local_one(
    tmp_path: Path, shared_data: Path
) -> None:
    path = tmp_path / "ray.toml"
    path.write_text(
        'name = "on-ray"\nstrategies = ["images-to-sides", "descriptive"]\nmodels = ["perception"]\n'
        f'executor = "ray"\nworkers = 2\n[[datasets]]\nname = "bongard-classic"\ndata_dir = "{shared_data}"\n'
        'problems = "1-2"\noptions = { holdout_test = "true" }\n'
    )
    home = tmp_path / "home"
    refused = run_bongard("experiment", "run", path, "--budget", "1", "--home", home)
    assert refused.returncode == 2 and "--budget watches this process's calls" in refused.stderr
    ran = run_bongard_process("experiment", "run", str(path), "--home", str(home), timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.count("ray: 2 workers on 1 node") == 2  # one pool per cell
    store = ResultsStore(home / STORE_FILE)
    summaries = [store.summary(run_id) for run_id in cell_runs(home, "on-ray").values()]
    assert [(s.status, s.done, s.calls) for s in summaries] == [("complete", 2, 2), ("complete", 2, 22)]


def test_a_run_made_by_hand_with_a_cells_settings_is_that_cell_and_costs_nothing(
    tmp_path: Path, shared_data: Path
) -> None:
    home = tmp_path / "home"
    by_hand = run_bongard(
        "run", "--strategy", "images-to-sides", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1-2", "-O", "holdout_test=true", "--data-dir", shared_data, "--home", home,
    )  # fmt: skip
    assert by_hand.returncode == 0, by_hand.stderr
    [stored] = ResultsStore(home / STORE_FILE).run_ids()
    path = tmp_path / "grid.toml"
    path.write_text(
        'name = "adopts"\nstrategies = ["images-to-sides"]\nmodels = ["perception", "similarity"]\n'
        f'[[datasets]]\nname = "bongard-classic"\ndata_dir = "{shared_data}"\nproblems = "1-2"\n'
        'options = { holdout_test = "true" }\n'
    )
    by_perception, by_similarity = plan_json(path, home)["cells"]
    assert (by_perception["stored_run"], by_perception["calls"], by_perception["cost_usd"]) == (
        stored,
        0,
        0.0,
    )
    assert by_perception["note"] == f"stored as {stored}, complete: costs 0"
    assert by_similarity["stored_run"] is None and by_similarity["calls"] == 2
    assert run_bongard("experiment", "run", path, "--home", home).returncode == 0
    assert cell_runs(home, "adopts")["images-to-sides | perception | bongard-classic"] == stored
    assert len(ResultsStore(home / STORE_FILE).run_ids()) == 2  # only the similarity cell was run

"""Models that refuse a paper's decoding: OpenAI's reasoning models (no temperature or top_p, each
family its efforts), Claude Opus 4.1 and 4.5+ (temperature or top_p, not both), Claude Opus 4.7 (neither),
through stand-ins that refuse what the real APIs refuse. A decoding the toolkit chose is not sent and
the run says so; one the user set is refused; Gemini 3's vendor advice is said, not followed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.model_families import FAMILIES, DecodingRefused, family_of, fit_decoding, markdown_row
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import AnthropicMessages, OpenAIChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer

KEY = "sk-standin-key-0123456789abcdef"


O_SERIES, GPT5, GPT51, GPT52, PRO = (
    "OpenAI o-series",
    "OpenAI gpt-5",
    "OpenAI gpt-5.1",
    "OpenAI gpt-5.2 and later",
    "OpenAI gpt-5 pro and codex models",
)
CHAT, CHAT5 = "OpenAI chat models", "OpenAI gpt-5.x chat models"
OPUS47, CLAUDE = "Claude Opus 4.7 and later, Sonnet 5.5, Fable 5", "Claude Opus 4.1, Claude 4.5 and later"
GEMINI3, FIXED = "Gemini 3", "Gemini 3.5 Flash-Lite, 3.6 Flash"


@pytest.mark.parametrize(
    ("provider", "model", "family"),
    [
        ("openai", "o3", O_SERIES), ("openai", "o3-2025-04-16", O_SERIES), ("openai", "o4-mini", O_SERIES),
        ("openai", "gpt-5", GPT5), ("openai", "gpt-5-mini", GPT5), ("openai", "gpt-5-nano-2025-08-07", GPT5),
        ("openai", "gpt-5.1", GPT51), ("openai", "gpt-5.2", GPT52), ("openai", "gpt-5.4-mini", GPT52),
        ("openai", "gpt-5-pro", PRO), ("openai", "gpt-5.1-codex-max", PRO), ("openai", "gpt-5.2-pro", PRO),
        ("openai", "gpt-5-chat-latest", CHAT), ("openai", "gpt-4o", CHAT), ("openai", "gpt-4.1-mini", CHAT),
        ("openai", "gpt-5.1-chat-latest", CHAT5), ("openai", "gpt-5.2-chat-latest", CHAT5),
        ("openai", "future-model-x", None),
        ("anthropic", "claude-opus-4-7", OPUS47), ("anthropic", "claude-opus-4-8-20260801", OPUS47),
        ("anthropic", "claude-sonnet-5-5", OPUS47),
        ("anthropic", "claude-opus-4-1", CLAUDE), ("anthropic", "claude-opus-4-1-20250805", CLAUDE),
        ("anthropic", "claude-sonnet-4-5", CLAUDE), ("anthropic", "claude-sonnet-4-5-20250929", CLAUDE),
        ("anthropic", "claude-haiku-4-5", CLAUDE), ("anthropic", "claude-opus-4-6", CLAUDE),
        ("anthropic", "claude-3-5-sonnet-20241022", None), ("anthropic", "claude-sonnet-4-20250514", None),
        ("anthropic", "claude-opus-4-20250514", None),
        ("gemini", "gemini-3-pro", GEMINI3), ("gemini", "gemini-3.1-pro-preview", GEMINI3),
        ("gemini", "gemini-3.6-flash", FIXED), ("gemini", "gemini-2.5-pro", None),
        ("openai-compatible", "o3@http://127.0.0.1:1/v1", None),
    ],
)  # fmt: skip
def test_model_names_fall_in_their_families(provider: str, model: str, family: str | None) -> None:
    found = family_of(provider, model)
    assert (found.name.split(" (")[0] if found else None) == family


def test_a_chosen_decoding_is_kept_a_default_one_dropped_with_why() -> None:
    kept = fit_decoding("openai", "gpt-4o", {"max_tokens": 9}, {"temperature": 0})
    assert (kept.params, kept.notes) == ({"temperature": 0, "max_tokens": 9}, [])
    fitted = fit_decoding("openai", "o3", {"max_tokens": 9}, {"temperature": 0.5})
    assert fitted.params == {"max_tokens": 9}
    assert fitted.notes[0].startswith(
        "temperature=0.5 not sent: openai:o3 takes no temperature or top_p; takes reasoning_effort low, "
        "medium or high (OpenAI o-series"
    )
    with pytest.raises(DecodingRefused, match=r"openai:o3 takes no temperature or top_p.*: drop -M top_p"):
        fit_decoding("openai", "o3", {"top_p": 0.9}, {})
    claude = fit_decoding("anthropic", "claude-sonnet-4-5", {"top_p": 0.9}, {"temperature": 0.5})
    assert claude.params == {"top_p": 0.9} and claude.notes[0].startswith("temperature=0.5 not sent")
    with pytest.raises(DecodingRefused, match="keep one of -M temperature or -M top_p"):
        fit_decoding("anthropic", "claude-sonnet-4-5", {"top_p": 0.9, "temperature": 0}, {})
    opus = fit_decoding("anthropic", "claude-opus-4-7", {"max_tokens": 9}, {"temperature": 0})
    assert opus.params == {"max_tokens": 9} and "takes no temperature or top_p" in opus.notes[0]


@pytest.mark.parametrize(
    ("model", "effort", "taken"),
    [
        ("o3", "low", True), ("o3", "high", True), ("o3", "minimal", False), ("o3", "none", False),
        ("o3", "xhigh", False), ("gpt-5-mini", "minimal", True), ("gpt-5-mini", "none", False),
        ("gpt-5.1", "none", True), ("gpt-5.1", "minimal", False), ("gpt-5.1", "xhigh", False),
        ("gpt-5.2", "xhigh", True), ("gpt-5.2", "none", True), ("gpt-5-pro", "high", True),
    ],
)  # fmt: skip
def test_each_reasoning_family_takes_its_own_efforts(model: str, effort: str, taken: bool) -> None:
    if taken:
        assert fit_decoding("openai", model, {"reasoning_effort": effort}, {}).params == {
            "reasoning_effort": effort
        }
    else:
        with pytest.raises(
            DecodingRefused, match=f"takes reasoning_effort .*: not reasoning_effort={effort}"
        ):
            fit_decoding("openai", model, {"reasoning_effort": effort}, {})


def test_gpt_5_2_takes_the_papers_temperature_at_its_default_effort_and_not_above_it() -> None:
    """gpt-5.1 and later default to effort none, where they take temperature: the paper's is sent,
    with the effort named (langchain-openai drops a gpt-5 temperature unless it sees effort none)."""
    at_none = fit_decoding("openai", "gpt-5.2", {}, {"temperature": 0.5})
    assert at_none.params == {"temperature": 0.5, "reasoning_effort": "none"}
    assert at_none.notes[0].startswith("reasoning_effort=none sent (the API's default) with temperature")
    high = fit_decoding("openai", "gpt-5.2", {"reasoning_effort": "high"}, {"temperature": 0.5})
    assert high.params == {"reasoning_effort": "high"} and high.notes[0].startswith(
        "temperature=0.5 not sent"
    )
    with pytest.raises(DecodingRefused, match="drop -M temperature"):
        fit_decoding("openai", "gpt-5.2", {"reasoning_effort": "high", "temperature": 0.2}, {})
    assert fit_decoding("openai", "gpt-5.2", {"temperature": 0.2}, {}).params["temperature"] == 0.2


def test_gemini_3_is_sent_the_papers_temperature_and_the_run_says_google_advises_otherwise() -> None:
    fitted = fit_decoding("gemini", "gemini-3-pro", {}, {"temperature": 0})
    assert fitted.params == {"temperature": 0}
    assert fitted.notes == [
        "temperature=0 sent as the protocol states; gemini:gemini-3-pro (Gemini 3): Google: lower values "
        "may loop or degrade reasoning; -M temperature=1.0 follows the vendor (Google's Gemini 3 developer "
        "guide: keep temperature at its default 1.0)"
    ]
    assert fit_decoding("gemini", "gemini-3-pro", {"temperature": 0.2}, {}).notes == []  # the user's choice
    assert fit_decoding("gemini", "gemini-3-pro", {}, {"temperature": 1.0}).notes == []


@pytest.fixture
def openai_standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        yield server


@pytest.mark.parametrize("model", ["o3", "gpt-5-mini"])
def test_a_reasoning_model_runs_a_paradigm_without_its_temperature_and_says_so(
    model: str, openai_standin: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    ran = run_bongard(
        "run",
        "--strategy",
        "direct-rule-learning",
        "--model",
        f"openai:{model}",
        "-M",
        f"base_url={openai_standin.url}/v1",
        "--dataset",
        "bongard-classic",
        "-O",
        "holdout_test=true",
        "--problems",
        "2",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"decoding: temperature=0 not sent: openai:{model} takes no temperature" in ran.stdout
    bodies = [request.body for request in openai_standin.model_requests()]
    assert len(bodies) == 2 and all("temperature" not in body for body in bodies)  # two queries, no 400
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    assert store.summary(run_id).done == 1
    config = store.run_config(run_id)
    assert config["agent_params"]["temperature"] == 0 and config["paper_decoding"] == ["temperature"]
    assert list(config["decoding_dropped"]) == [f"openai:{model}"]
    shown = run_bongard("runs", "show", run_id, "--home", tmp_path)
    assert f"decoding: temperature=0 not sent: openai:{model}" in " ".join(shown.stdout.split())


def test_a_reasoning_judge_judges_without_its_temperature(
    openai_standin: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """Open-ended (Wonderland: replies of up to 2048 tokens) on o3, judged by o4-mini: no 400 for
    the temperature 0 every LLM judge decides at, nor for the reply limit."""
    url = f"{openai_standin.url}/v1"
    config = tmp_path / "agents.toml"
    config.write_text(f'["openai:o4-mini"]\nbase_url = "{url}"\n', encoding="utf-8")
    ran = run_bongard(
        "run",
        "--strategy",
        "open-ended",
        "--model",
        "openai:o3",
        "-M",
        f"base_url={url}",
        "--dataset",
        "bongard-classic",
        "--problems",
        "2",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    judged = run_bongard(
        "judge", "latest", "--judges", "openai:o4-mini", "--agent-config", config, "--home", tmp_path
    )
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "decoding: temperature=0 not sent: openai:o4-mini takes no temperature" in judged.stdout
    judge_bodies = [r.body for r in openai_standin.model_requests() if r.body["model"] == "o4-mini"]
    assert judge_bodies and all("temperature" not in body for body in judge_bodies)
    solver_bodies = [r.body for r in openai_standin.model_requests() if r.body["model"] == "o3"]
    assert [body.get("max_completion_tokens") for body in solver_bodies] == [2048]


def test_a_users_temperature_on_a_reasoning_model_is_refused_before_the_run(
    openai_standin: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    ran = run_bongard(
        "run",
        "--strategy",
        "direct",
        "--model",
        "openai:o3",
        "-M",
        "temperature=0",
        "-M",
        f"base_url={openai_standin.url}/v1",
        "--dataset",
        "bongard-classic",
        "--problems",
        "2",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
    )
    assert ran.returncode == 2 and "openai:o3 takes no temperature or top_p" in ran.stderr
    assert "drop -M temperature" in ran.stderr and list(openai_standin.model_requests()) == []
    assert ResultsStore(tmp_path / STORE_FILE).run_ids() == []


def test_a_reasoning_effort_reaches_a_reasoning_model_and_is_refused_for_a_chat_model(
    openai_standin: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    url = f"{openai_standin.url}/v1"
    common: list[str | Path] = ["--strategy", "direct", "--dataset", "bongard-classic", "--problems", "2"]
    common += ["--data-dir", shared_data]
    ran = run_bongard(
        "run",
        *common,
        "--model",
        "openai:o3",
        "-M",
        "reasoning_effort=high",
        "-M",
        f"base_url={url}",
        "--home",
        tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    assert [body["reasoning_effort"] for body in (r.body for r in openai_standin.model_requests())] == [
        "high"
    ]
    refused = run_bongard(
        "run",
        *common,
        "--model",
        "openai:gpt-4o",
        "-M",
        "reasoning_effort=high",
        "-M",
        f"base_url={url}",
        "--home",
        tmp_path,
    )
    assert refused.returncode == 2 and "openai:gpt-4o takes no reasoning_effort" in refused.stderr
    assert len(list(openai_standin.model_requests())) == 1  # the chat model's run sent nothing


def test_claude_4_5_with_a_top_p_sends_no_temperature_and_says_so(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path, tmp_path: Path
) -> None:
    """concept-selection states temperature 0.5 (Bongard-RWR+ Sec. 4); the user's top_p wins."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    selection = json.dumps({"explanation": "the first fits", "label": 1})
    with StandInServer(AnthropicMessages(), responder=lambda body: selection) as server:
        ran = run_bongard(
            "run",
            "--strategy",
            "concept-selection",
            "--model",
            "anthropic:claude-sonnet-4-5",
            "-M",
            "top_p=0.9",
            "-M",
            f"base_url={server.url}",
            "--dataset",
            "bongard-rwr",
            "--problems",
            "31",
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
        )
        bodies = [request.body for request in server.model_requests()]
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "decoding: temperature=0.5 not sent: anthropic:claude-sonnet-4-5 takes temperature or top_p" in (
        ran.stdout
    )
    assert [(body.get("temperature"), body.get("top_p")) for body in bodies] == [(None, 0.9)]
    run_id = ResultsStore(tmp_path / STORE_FILE).resolve_run("latest")
    dropped = ResultsStore(tmp_path / STORE_FILE).run_config(run_id)["decoding_dropped"]
    assert json.dumps(dropped).count("not sent") == 1


def test_the_documented_tables_give_every_family_as_the_code_has_it_and_a_source_for_each_row() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text(encoding="utf-8")
    for family in FAMILIES:
        assert markdown_row(family) in page.splitlines(), family.name
        assert family.source, family.name
    others = page.split("| family | provider | models | what it refuses | what is sent instead | source |")[1]
    rows = [line for line in others.strip().split("\n\n")[0].splitlines()[1:]]
    assert len(rows) == 4
    for row in rows:
        assert row.rstrip(" |").rsplit(" | ", 1)[1].strip(), row  # a source in the last cell


def test_judges_take_parameters_as_agents_do(
    openai_standin: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """`bongard judge -M` reaches the judges: a gateway's base_url (not the provider's public one)
    and a temperature over the judges' 0; `bongard run --judges -J` the same."""
    url = f"{openai_standin.url}/v1"
    openai_standin.responder = lambda body: (
        "It names the concept.\nEVALUATION: OK" if body["model"] != "gpt-4o" else minimal_reply(body)
    )  # the judges give a verdict: an answer no judge voted on is left unjudged
    ran = run_bongard(
        "run",
        "--strategy",
        "direct",
        "--model",
        "openai:gpt-4o",
        "-M",
        f"base_url={url}",
        "--dataset",
        "bongard-classic",
        "--problems",
        "2",
        "--data-dir",
        shared_data,
        "--home",
        tmp_path,
        "--judges",
        "openai:gpt-4.1-mini",
        "-J",
        f"base_url={url}",
    )
    assert ran.returncode == 0 and "1 answers judged" in ran.stdout, ran.stdout + ran.stderr
    judged = run_bongard(
        "judge",
        "latest",
        "--judges",
        "openai:gpt-4.1-mini,embedding:0.5",
        "-M",
        f"base_url={url}",
        "-M",
        "temperature=0.2",
        "--home",
        tmp_path,
    )
    assert judged.returncode == 0 and "1 answers judged" in judged.stdout, judged.stdout + judged.stderr
    temperatures = [
        r.body.get("temperature") for r in openai_standin.model_requests() if r.body["model"] != "gpt-4o"
    ]
    assert temperatures and set(temperatures) == {0, 0.2} and temperatures[0] == 0 and temperatures[-1] == 0.2

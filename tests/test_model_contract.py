"""Every current model accepts every request, and a model no table knows learns what it refuses.

Stand-ins refuse what each provider's published notes say it refuses (`tests/standins/protocols.py`,
written apart from the toolkit's table): each strategy with a stated decoding, as model and as judge,
sends none of it to Claude Opus 4.1 and 4.7, gpt-5.1-chat-latest, gpt-5.2, o3 at each effort and
Gemini 3. `future-model-x`, a model no table names, refuses temperature and top_p: its first run
learns both at one extra request each, and its next run sends neither.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.learned_rules import refused_key
from graphs.protocol_cards import family_text
from graphs.registry import get_strategy
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import AnthropicMessages, GeminiGenerateContent, OpenAIChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer, WireProtocol

KEY = "sk-standin-key-0123456789abcdef"
STRATEGIES = (
    ("image-to-side", "bongard-rwr", "31"),  # Bongard-RWR+: temperature 0.5
    ("concept-selection", "bongard-rwr", "31"),  # Bongard-RWR+: temperature 0.5
    ("images-to-sides", "bongard-rwr", "31"),  # on Bongard-RWR, Bongard-RWR+'s: temperature 0.5
    ("direct-rule-learning", "bongard-classic", "2"),  # the cognitive paradigms: temperature 0
    ("open-ended", "bongard-classic", "2"),  # Bongard in Wonderland: replies of up to 2048 tokens
)
"""The strategies whose protocol row states a decoding, each on data it runs on."""


def _protocol(provider: str) -> WireProtocol:
    protocols: dict[str, WireProtocol] = {
        "openai": OpenAIChat(),
        "anthropic": AnthropicMessages(),
        "gemini": GeminiGenerateContent(),
    }
    return protocols[provider]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(name, KEY)


@pytest.mark.usefixtures("keys")
@pytest.mark.parametrize(
    ("spec", "params"),
    [
        ("anthropic:claude-opus-4-1", ()), ("anthropic:claude-opus-4-7", ()),
        ("openai:gpt-5.1-chat-latest", ()), ("openai:gpt-5.2", ()),
        ("openai:o3", ("reasoning_effort=low",)), ("openai:o3", ("reasoning_effort=medium",)),
        ("openai:o3", ("reasoning_effort=high",)), ("gemini:gemini-3-pro", ()),
    ],
)  # fmt: skip
def test_current_models_are_sent_no_request_their_api_refuses(
    spec: str, params: tuple[str, ...], shared_data: Path, tmp_path: Path
) -> None:
    provider = spec.partition(":")[0]
    protocol = _protocol(provider)
    with StandInServer(protocol, responder=minimal_reply) as server:
        url = f"{server.url}/v1" if provider == "openai" else server.url
        chosen = [arg for param in (*params, f"base_url={url}") for arg in ("-M", param)]
        for strategy, dataset, problems in STRATEGIES:
            judged = ("--judges", spec, "-J", f"base_url={url}") if strategy == "open-ended" else ()
            home = tmp_path / strategy
            extra = ("-O", "holdout_test=true") if strategy == "direct-rule-learning" else ()
            ran = run_bongard(
                "run", "--strategy", strategy, "--model", spec, *chosen, "--dataset", dataset, *extra,
                "--problems", problems, "--data-dir", shared_data, "--home", home, *judged,
            )  # fmt: skip
            assert ran.returncode == 0, (strategy, ran.stdout, ran.stderr)
            if strategy == "open-ended":
                assert "answers judged" in ran.stdout, ran.stdout
        statuses = [request.status for request in server.model_requests()]
        temperatures = {request.body.get("temperature") for request in server.model_requests()}
    assert statuses and set(statuses) == {200}, [r.body for r in server.model_requests() if r.status != 200]
    if spec == "openai:gpt-5.2":  # the papers' temperatures reach it, at its default effort
        assert {0, 0.5} <= temperatures
    if isinstance(protocol, GeminiGenerateContent):  # the paper's temperature went out, and was said
        assert protocol.warnings
        assert "Google: lower values may loop or degrade reasoning" in " ".join(ran.stdout.split())


@pytest.fixture
def future_model() -> Iterator[StandInServer]:
    refusing = OpenAIChat(
        refuses={"future-model-x": ("temperature", "top_p"), "future-judge-y": ("temperature",)}
    )
    with StandInServer(refusing, responder=minimal_reply) as server:
        yield server


@pytest.mark.usefixtures("keys")
def test_a_model_no_table_knows_learns_what_it_refuses_once_and_the_next_run_starts_right(
    future_model: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """direct-rule-learning states temperature 0; the user adds a top_p. Four problems at
    concurrency 4: the first request goes alone, learns each refused key at one extra request, and
    the others wait for it, so no call in flight repeats the refusal."""
    spec, url = "openai:future-model-x", f"{future_model.url}/v1"

    def run(problems: str, *flags: str) -> str:
        ran = run_bongard(
            "run", "--strategy", "direct-rule-learning", "--model", spec, "-M", f"base_url={url}", *flags,
            "--dataset", "bongard-classic", "-O", "holdout_test=true", "--problems", problems,
            "--concurrency", "4", "--data-dir", shared_data, "--home", tmp_path,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        return " ".join(ran.stdout.split())

    printed = run("1-4", "-M", "top_p=0.9")
    statuses = [request.status for request in future_model.model_requests()]
    assert statuses.count(400) == 2 and statuses.count(200) == 8  # two queries a problem, one extra per key
    assert f"learned: {spec} refused temperature (learned " in printed
    assert "sent without it from request 1" in printed and "sent without it from request 2" in printed
    store = ResultsStore(tmp_path / STORE_FILE)
    first = store.resolve_run("latest")
    assert store.summary(first).done == 4
    shown = " ".join(run_bongard("runs", "show", first, "--home", tmp_path).stdout.split())
    assert f"learned: {spec} refused top_p" in shown
    listed = " ".join(run_bongard("agents", spec, "--home", tmp_path).stdout.split())
    assert f"learned: {spec} refused temperature" in listed and f"learned: {spec} refused top_p" in listed
    assert "family: none listed" in listed

    before = len(statuses)
    printed = run("5-6")
    later = [request.body for request in future_model.model_requests()][before:]
    assert len(later) == 4 and all("temperature" not in body and "top_p" not in body for body in later)
    assert f"decoding: temperature=0 not sent: {spec} refused temperature (learned" in printed
    refused = run_bongard(
        "run", "--strategy", "direct", "--model", spec, "-M", f"base_url={url}", "-M", "top_p=0.5",
        "--dataset", "bongard-classic", "--problems", "7", "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2 and f"{spec} refused top_p" in refused.stderr
    assert "drop -M top_p" in refused.stderr and len(list(future_model.model_requests())) == before + 4
    hint = re.search(r"`bongard (agents [^`]+ --forget --home [^`]+)`", refused.stderr)
    assert hint is not None, refused.stderr  # the workspace the rule is in, named
    forgot = run_bongard(*shlex.split(hint[1]))
    assert "forgot 2 learned rule(s)" in forgot.stdout


@pytest.mark.usefixtures("keys")
def test_a_judge_no_table_knows_learns_what_it_refuses_and_the_judging_says_so(
    future_model: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """A judge decides at temperature 0: future-judge-y refuses it, once."""
    url = f"{future_model.url}/v1"
    future_model.responder = lambda body: "It names the concept.\nEVALUATION: OK"
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1-3", "--data-dir", shared_data, "--home", tmp_path,
        "--judges", "openai:future-judge-y", "-J", f"base_url={url}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "learned: openai:future-judge-y refused temperature" in " ".join(ran.stdout.split())
    statuses = [request.status for request in future_model.model_requests()]
    assert statuses[0] == 400 and statuses.count(400) == 1  # then every request without it
    assert statuses.count(200) == 3  # three answers, each judged at its first reply


class _Refused(Exception):
    """An SDK's error for a reply with this status, its text the SDK's."""

    def __init__(self, text: str, status_code: int = 400) -> None:
        super().__init__(text)
        self.status_code = status_code


OPENAI_SAYS = "Error code: 400 - {'error': {'message': "
ANTHROPIC_SAYS = "Error code: 400 - {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': "
EFFORT = "reasoning_effort"
GEMINI_SAYS = "400 INVALID_ARGUMENT. {'error': {'message': "


@pytest.mark.parametrize(
    ("text", "sent", "key"),
    [
        (OPENAI_SAYS + "\"Unsupported parameter: 'temperature' is not supported with this model.\", "
         "'param': 'temperature', 'code': 'unsupported_parameter'}}", ("temperature",), "temperature"),
        (OPENAI_SAYS + "\"Unsupported value: 'minimal' is not supported with the 'o3' model.\", "
         "'param': 'reasoning_effort', 'code': 'unsupported_value'}}", (EFFORT,), EFFORT),
        (ANTHROPIC_SAYS + "'`temperature` and `top_p` cannot both be specified for this model.'}}",
         ("temperature", "top_p"), "temperature"),
        (GEMINI_SAYS + "'Invalid JSON payload received. Unknown name \"topP\"'}}", ("top_p",), "top_p"),
        (OPENAI_SAYS + "'Unsupported parameter: temperature'}}", ("top_p",), None),
        (OPENAI_SAYS + "'Invalid image: too large'}}", ("temperature",), None),
        (OPENAI_SAYS + "'Please reduce max_tokens or temperature_scale: invalid'}}", ("temperature",), None),
    ],
)  # fmt: skip
def test_a_refusal_names_the_key_it_refuses_and_nothing_else_is_learned(
    text: str, sent: tuple[str, ...], key: str | None
) -> None:
    found = refused_key(_Refused(text), sent)
    assert (found[0] if found else None) == key
    assert refused_key(_Refused(text, 500), sent) is None  # a server error is retried, never learned


def test_the_card_says_which_families_change_a_stated_decoding() -> None:
    card = family_text(get_strategy("direct-rule-learning"))
    assert card.startswith("temperature not sent to OpenAI o-series")
    assert "OpenAI gpt-5.2 and later: sent only at reasoning_effort none (its default)" in card
    assert "Gemini 3: sent as stated, though the vendor advises temperature=1.0 (-M temperature=1.0)" in card
    assert family_text(get_strategy("open-ended")) == "none"  # a reply limit every family takes

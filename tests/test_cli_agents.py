"""`bongard agents`, `bongard ask` and `bongard cache` as a user runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli import run_bongard
from tests.standins.protocols import TOKENS_IN, TOKENS_OUT
from tests.standins.server import StandInServer


def bongard(
    home: Path, *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    workspace = ["--home", str(home)] if args[0] in ("ask", "cache") else []
    return run_bongard(*args, *workspace, env=env)


def test_agents_lists_every_provider_and_whether_its_key_is_set(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "sk-ant-visible-nowhere-123"}
    result = bongard(tmp_path, "agents", env=env)
    assert result.returncode == 0
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") > 2}
    assert set(rows) >= {
        "openai", "anthropic", "gemini", "ollama", "vllm", "vllm-offline", "llamacpp", "openai-compatible"
    }  # fmt: skip
    assert "not set (OPENAI_API_KEY)" in rows["openai"]
    assert "│ set " in rows["anthropic"]
    assert "sk-ant-visible-nowhere-123" not in result.stdout
    assert "not needed" in rows["llamacpp"] and "yes" in rows["llamacpp"]


def test_ask_prints_reply_tokens_and_caches(tmp_path: Path, server: StandInServer, shared_data: Path) -> None:
    spec = f"openai-compatible:m@{server.url}/v1"
    panel = shared_data / "bongard-classic" / "002" / "3.png"
    first = bongard(tmp_path, "ask", spec, "What is this?", "--image", panel, "-M", "temperature=0")
    second = bongard(tmp_path, "ask", spec, "What is this?", "--image", panel, "-M", "temperature=0")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("stand-in reply")
    assert f"{TOKENS_IN} in + {TOKENS_OUT} out tokens, cost unknown" in first.stdout
    assert "cache hit" in second.stdout and "cache hit" not in first.stdout
    assert len(list(server.model_requests())) == 1
    stats = bongard(tmp_path, "cache", "stats")
    assert "1 replies, 1 hits" in stats.stdout and spec in stats.stdout
    assert "removed 1 cached replies" in bongard(tmp_path, "cache", "clear").stdout
    assert "0 replies" in bongard(tmp_path, "cache", "stats").stdout


def test_ask_with_an_unmet_schema_exits_1(tmp_path: Path, server: StandInServer) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "required": ["side"]}), encoding="utf-8")
    result = bongard(
        tmp_path,
        "ask",
        f"openai-compatible:m@{server.url}/v1",
        "Which side?",
        "--schema",
        schema,
        "-M",
        "reask_unparsed=true",
    )
    assert result.returncode == 1
    assert "schema not met: the reply contains no JSON object" in result.stdout
    assert len(list(server.model_requests())) == 2  # one re-ask


def test_ask_with_a_bad_spec_or_image_ends_in_one_line(tmp_path: Path) -> None:
    unknown = bongard(tmp_path, "ask", "gpt:4o", "hi")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: unknown provider 'gpt'")
    missing = bongard(
        tmp_path, "ask", "openai-compatible:m@http://127.0.0.1:9/v1", "hi", "--image", "nope.png"
    )
    assert missing.returncode == 2 and "no image file at nope.png" in missing.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"type": "object", "properties": {"a": ', "is not JSON: Expecting value"),
        ('{"type": "objekt"}', "is not a valid JSON schema"),
        ("[1, 2]", "a JSON schema is an object, not list"),
        (None, "No such file or directory"),
    ],
    ids=["not JSON", "not a schema", "not an object", "missing"],
)
def test_a_bad_schema_file_is_one_error_naming_it_before_any_call(
    content: str | None, said: str, tmp_path: Path
) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    asked = run_bongard("ask", "perception", "hi", "--schema", path, "--home", tmp_path)
    assert asked.returncode == 2 and "Traceback" not in asked.stderr
    assert said in " ".join(asked.stderr.replace("│", " ").split())

"""`bongard agents`, `bongard ask` and `bongard cache`: check that a model works, cheaply."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from datasets_io.workspace import workspace_home

if TYPE_CHECKING:
    from agents.cache import ResponseCache
from graphs.cli.console import console
from graphs.cli.options import AgentConfigOption, HomeOption, ModelParams, parse_key_values

cache_app = typer.Typer(help="Inspect or empty the response cache.", no_args_is_help=True)
EXAMPLES = {
    "openai": "openai:gpt-4o",
    "anthropic": "anthropic:claude-sonnet-4-5",
    "gemini": "gemini:gemini-2.5-pro",
    "ollama": "ollama:llava:13b",
    "vllm": "vllm:Qwen/Qwen2-VL-7B-Instruct",
    "vllm-offline": "vllm-offline:Qwen/Qwen2-VL-7B-Instruct",
    "llamacpp": "llamacpp:gemma3-270m",
    "openai-compatible": "openai-compatible:MODEL@http://127.0.0.1:8000/v1",
}


def list_agents(
    provider_name: Annotated[
        str | None,
        typer.Argument(
            metavar="AGENT",
            help="A provider (its parameters, -M KEY=VALUE) or PROVIDER:MODEL (also what the model is "
            "sent of a paper's decoding: its family's rule and what its API was learned to refuse).",
        ),
    ] = None,
    forget: Annotated[
        bool,
        typer.Option("--forget", metavar="", help="Forget what the model was learned to refuse."),
    ] = False,
    home: HomeOption = None,
) -> None:
    """Every known provider: whether its extra is installed and its key set (never the key); or one
    provider's parameters, or one model's."""
    from agents.registry import get_provider, provider_names

    if provider_name is not None and ":" in provider_name:
        _show_model(provider_name, forget, home)
        return
    if provider_name is not None:
        console.print(params_table(get_provider(provider_name).params))
        return
    table = Table("provider", "installed", "key", "example", "what")
    for name in provider_names():
        provider = get_provider(name)
        key_set = provider.key_set()
        key = (
            "not needed"
            if key_set is None
            else ("set" if key_set else f"not set ({' or '.join(provider.key_env)})")
        )
        installed = "yes" if provider.installed() else f"no: pip install 'bongard-agents[{provider.extra}]'"
        example = EXAMPLES.get(name, name if provider.default_model else f"{name}:MODEL")
        cells = (name, installed, key, example, provider.summary)
        table.add_row(*map(escape, cells))
    console.print(table)


def _show_model(spec: str, forget: bool, home: Path | None) -> None:
    """A model's parameters, its family's rule with its source, and its learned rules (or forget them)."""
    from agents.learned_rules import forget_command, workspace_rules
    from agents.model_families import family_of
    from agents.registry import get_provider, split_spec

    provider_name, model = split_spec(spec)
    rules = workspace_rules(home)
    if forget:
        console.print(f"forgot {rules.forget(spec)} learned rule(s) of {escape(spec)}")
        return
    console.print(params_table(get_provider(provider_name).params))
    family = family_of(provider_name, model.partition("@")[0])
    if family is None:
        console.print(
            f"family: none listed; {escape(spec)} is sent every key, and learns what its API refuses"
        )
    else:
        console.print(f"family: {escape(family.name)}: {escape(family.rule())}", highlight=False)
        console.print(f"source: {escape(family.source)}", highlight=False)
    learned = rules.for_spec(spec)
    for rule in learned:
        console.print(f"learned: {escape(rule.note())}", highlight=False)
    if learned:
        console.print(f"`{escape(forget_command(spec, home))}` sends them again", highlight=False)


def params_table(model: type[BaseModel]) -> Table:
    """One row per field of an options model: name, type, default and description."""
    table = Table("parameter", "type", "default", "what")
    for name, info in model.model_fields.items():
        default = "" if info.is_required() else str(info.get_default())
        table.add_row(*map(escape, (name, _type_name(info.annotation), default, info.description or "")))
    return table


def _type_name(annotation: Any) -> str:
    """`int`, `euclidean | cosine`, `Path`: what a value may be, as a user would type it.

    `None` is left out of unions: the default column shows when a parameter may stay unset.
    """
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " | ".join(map(str, args))
    if origin is Annotated:
        return _type_name(args[0])
    if origin in (Union, UnionType):
        return " | ".join(_type_name(arg) for arg in args if arg is not type(None))
    return str(getattr(annotation, "__name__", annotation))


def ask(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Agent spec, e.g. openai:gpt-4o.")],
    prompt: Annotated[str, typer.Argument(metavar="PROMPT", help="The text of the message to send.")],
    image: Annotated[
        list[Path] | None,
        typer.Option(
            "--image", metavar="IMAGE", help="An image file to attach after the prompt, repeatable."
        ),
    ] = None,
    schema: Annotated[
        Path | None,
        typer.Option(
            "--schema", metavar="FILE", help="A JSON schema file the reply must fit (exit 1 if it does not)."
        ),
    ] = None,
    param: ModelParams = None,
    config: AgentConfigOption = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", metavar="", help="Neither read nor write the cache.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """One call: print the reply, its tokens, cost and latency."""
    from langchain_core.messages import HumanMessage

    from agents.call import CallSpec, ImageSource
    from agents.images import image_block
    from agents.registry import read_agent_config, resolve_agent

    images = image or []
    for path in images:
        if not path.is_file():
            raise typer.BadParameter(f"no image file at {path}", param_hint="--image")
    output_schema = _read_schema(schema) if schema is not None else None
    agent = resolve_agent(
        model,
        parse_key_values(param, "-M"),
        config=read_agent_config(config) if config else None,
        use_cache=not no_cache,
        home=home,
    )
    content: list[str | dict[Any, Any]] = [{"type": "text", "text": prompt}, *map(image_block, images)]
    call = CallSpec(task="chat", output_schema=output_schema, images=[ImageSource(path=p) for p in images])
    reply = asyncio.run(agent.acall([HumanMessage(content=content)], call))
    console.print(
        json.dumps(reply.parsed, indent=2, ensure_ascii=False) if reply.parsed is not None else reply.text
    )
    cost = "unknown" if reply.cost_usd is None else f"${reply.cost_usd:.6f}"
    notes = [note for note, on in (("cache hit", reply.cache_hit), ("truncated", reply.truncated)) if on]
    if reply.parse_status == "failed":
        notes.append(f"schema not met: {reply.parse_error}")
    console.print(
        f"[dim]{reply.usage.input_tokens} in + {reply.usage.output_tokens} out tokens, cost {cost}, "
        f"{reply.latency_s:.2f} s{''.join(f', {n}' for n in notes)}[/dim]"
    )
    if reply.parse_status == "failed":
        raise typer.Exit(1)


@cache_app.command("stats")
def cache_stats(home: HomeOption = None) -> None:
    """Entries, hits and size of the response cache, per agent."""
    stats = _cache(home, reading=True).stats()
    console.print(
        f"{stats.path}: {stats.entries} replies, {stats.hits} hits, {stats.size_bytes / 1e6:.1f} MB"
    )
    for agent, count in stats.by_agent.items():
        console.print(f"  {agent}: {count}")


def _cache(home: Path | None, reading: bool = False) -> ResponseCache:
    """The workspace's cache; `reading`: a read-only workspace's cache is opened read-only."""
    from agents.cache import ResponseCache
    from agents.registry import CACHE_FILE
    from datasets_io.sqlite_errors import writable

    path = workspace_home(home) / CACHE_FILE
    return ResponseCache(path, read_only=reading and not writable(path))


@cache_app.command("clear")
def cache_clear(
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="SPEC",
            help="Only this agent's replies (its spec, as `cache stats` lists it; default: all).",
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Delete cached replies."""
    removed = _cache(home).clear(agent)
    console.print(f"removed {removed} cached replies")


def _read_schema(path: Path) -> dict[str, Any]:
    """The `--schema` file as a JSON schema, or one line saying what is wrong with it, before any call."""
    import jsonschema

    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise typer.BadParameter(f"{path}: {error.strerror or error}", param_hint="--schema") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise typer.BadParameter(f"{path} is not JSON: {error}", param_hint="--schema") from None
    if not isinstance(loaded, dict):
        raise typer.BadParameter(
            f"{path}: a JSON schema is an object, not {type(loaded).__name__}", param_hint="--schema"
        )
    try:
        jsonschema.validators.validator_for(loaded).check_schema(loaded)
    except jsonschema.SchemaError as error:
        raise typer.BadParameter(
            f"{path} is not a valid JSON schema: {error.message}", param_hint="--schema"
        ) from None
    return loaded

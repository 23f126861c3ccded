"""One Ollama context per model and run, sized before the first request from its rehearsed requests.

Ollama reloads a model whenever a request's `num_ctx` differs from the last (ollama/ollama #9977):
sized request by request, one descriptive-iterative problem sent seven sizes, interleaved across
problems. So a new run rehearses its first problems offline (`graphs.experiments.rehearsal`), measures
each request of each Ollama model as the provider measures it (`agents.providers.ollama`: text, the
images by the model family's rule at the size they are sent, the earlier replies a conversation
carries and the reply at their token limit), and stores the largest, with its margin, as the model's
`num_ctx` in the run's agent table: every request of the run carries it, a resume too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agents.image_tokens import open_weight_rule
from agents.images import ImagePolicy
from agents.providers.ollama import REPLY_TOKENS, OllamaParams, context_for, image_counter, text_tokens
from agents.registry import check_agent_params, split_spec
from graphs.experiments.rehearsal import DEFAULT_REHEARSED, RenderedCall, rehearse
from graphs.runs.runner import RunConfig, Runner

SIZED_PROVIDER = "ollama"


@dataclass(frozen=True)
class SizedContexts:
    """The run's configuration with each Ollama model's `num_ctx` set, and a line for each, said at
    the start of the run."""

    config: RunConfig
    notes: list[str]


def ollama_params(config: RunConfig) -> dict[str, OllamaParams]:
    """The run's Ollama models that no `-M num_ctx` or agent table sizes, with their parameters."""
    shares = config.agent_shares()
    found = {}
    for spec in dict.fromkeys(config.agents.values()):
        if split_spec(spec)[0] != SIZED_PROVIDER:
            continue
        chosen, paper = shares[spec]
        params = check_agent_params(spec, chosen, config=config.agent_config or None, defaults=paper)
        if isinstance(params, OllamaParams) and params.num_ctx is None:
            found[spec] = params
    return found


def sized_contexts(runner: Runner, rehearsed: int = DEFAULT_REHEARSED) -> SizedContexts:
    """`runner`'s configuration with a `num_ctx` for each unsized Ollama model, from the largest
    request of its first `rehearsed` problems; a model whose requests the rehearsal could not render
    is left sized per request, and its note says so."""
    config = runner.config
    unsized = ollama_params(config)
    if not unsized:
        return SizedContexts(config, [])
    policies = {
        role: ImagePolicy(max_side=unsized[spec].image_max_side or None)
        for role, spec in config.agents.items()
        if spec in unsized
    }
    sample = [problem.id for problem in runner.problems[:rehearsed]]
    rehearsal = rehearse(config, sample, policies)
    tables = {spec: dict(table) for spec, table in config.agent_config.items()}
    notes = []
    for spec, params in unsized.items():
        roles = {role for role, named in config.agents.items() if named == spec}
        calls = [call for call in rehearsal.calls if call.role in roles]
        if not rehearsal.complete or not calls:
            why = next(iter(rehearsal.failures.values()), "it made no call")
            notes.append(
                f"{spec}: num_ctx not sized ({why} in the rehearsal): each request is sized alone and Ollama "
                "reloads the model when the size changes; -M num_ctx=N fixes one"
            )
            continue
        model = split_spec(spec)[1]
        counted = image_counter(model, params)
        reply = params.max_tokens or REPLY_TOKENS
        needed = max(_tokens(call, counted, reply) for call in calls)
        size = context_for(needed)
        tables[spec] = {**tables.get(spec, {}), "num_ctx": size}
        rule = (
            f"tokens_per_image={params.tokens_per_image}"
            if params.tokens_per_image
            else open_weight_rule(model).name
        )
        notes.append(
            f"{spec}: num_ctx={size} for every request (the largest of {len(calls)} requests rehearsed "
            f"on {len(sample)} problems needs about {needed} tokens; images: {rule}); -M num_ctx=N fixes "
            "another"
        )
    return SizedContexts(config.model_copy(update={"agent_config": tables}), notes)


def _tokens(call: RenderedCall, image_tokens: Callable[[int, int], int], reply: int) -> int:
    """A rendered request's tokens as the Ollama provider counts them, its reply's room included and
    each earlier reply it carries at the reply limit."""
    text = text_tokens(sum(len(text) for text in call.texts))
    return text + sum(image_tokens(*size) for size in call.images) + (call.replies + 1) * reply


def sized_runner(runner: Runner) -> tuple[Runner, list[str]]:
    """`runner`, or the same run with its Ollama models' contexts sized (`sized_contexts`), and the
    lines saying so; a new run calls it before it is stored."""
    sized = sized_contexts(runner)
    if sized.config == runner.config:
        return runner, sized.notes
    return Runner(sized.config, runner.store, runner.home), sized.notes

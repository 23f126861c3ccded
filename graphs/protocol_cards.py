"""Protocol cards: each strategy's protocol as the paper states it, for the terminal and the docs.

`bongard strategies NAME` prints one card; `bongard strategies --markdown` prints
the protocol table of docs/strategies.md, which a test keeps equal to the registry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from graphs.registry import StrategyInfo

RUN_DEPARTURES = (
    ("-M reask_unparsed=true", "re-asks once a structured reply that does not parse (else a format error)"),
    ("-M temperature=... max_tokens=...", "decoding other than the paper's"),
)
"""What any run can add on top of any strategy's protocol; off unless given, recorded with the run."""
NOT_DECLARED = "not declared"
TERMINAL_ONLY = ("roles", "decoding changed by model family")
"""Card fields the docs' protocol table leaves out (docs/agents.md tabulates the families)."""


def _decoding(decoding: Mapping[str, Any]) -> str:
    """A decoding as the request names it; OpenAI's own API names the reply limit differently."""
    sent = ", ".join(f"{key}={value}" for key, value in decoding.items()) or "each API's defaults"
    return sent + (" (openai: sent as max_completion_tokens)" if "max_tokens" in decoding else "")


def decoding_text(info: StrategyInfo[Any]) -> str:
    if not info.protocols:
        return _decoding(info.decoding)
    return "; ".join(f"{protocol.name}: {_decoding(protocol.decoding)}" for protocol in info.protocols)


def family_text(info: StrategyInfo[Any]) -> str:
    """The model families whose rule changes what the strategy's stated decoding sends, and how:
    said on the card, so a run on such a model holds no surprise (`agents.model_families`)."""
    from agents.model_families import EFFORT, FAMILIES

    decodings = [info.decoding, *(protocol.decoding for protocol in info.protocols)]
    keys = {key for decoding in decodings for key in decoding}
    dropped = [family.name for family in FAMILIES if keys & set(family.refused_at(None))]
    at_effort = [f for f in FAMILIES if keys & set(f.refuses) and not keys & set(f.refused_at(None))]
    notes = (
        [f"{', '.join(sorted(keys & {'temperature', 'top_p'}))} not sent to {'; '.join(dropped)}"]
        if dropped
        else []
    )
    notes += [f"{f.name}: sent only at {EFFORT} {', '.join(f.samples_at)} (its default)" for f in at_effort]
    notes += [
        f"{family.name}: sent as stated, though the vendor advises {a.key}={a.value} (-M {a.key}={a.value})"
        for family in FAMILIES
        for a in family.advises
        if a.key in keys
    ]
    return "; ".join(notes) or "none"


def paper_text(info: StrategyInfo[Any]) -> str:
    """The paper, or where two papers define the strategy each protocol and where it is the default."""
    if not info.protocols:
        return f"{info.paper}, {info.section}"
    return "; ".join(
        f"-S protocol={protocol.name}: {protocol.paper}, {protocol.section} "
        + (f"(default on {', '.join(protocol.formats)})" if protocol.formats else "(default elsewhere)")
        for protocol in info.protocols
    )


def card_fields(info: StrategyInfo[Any]) -> dict[str, str]:
    """The card as (heading -> text), in the order the terminal and the docs show it."""
    card = info.card
    own = ", ".join(f"-S {key}: {text}" for key, text in info.departures()) or "none"
    return {
        "paper": paper_text(info),
        "roles": ", ".join(info.roles),
        "calls per problem": info.calls,
        "images per call": card.images if card else NOT_DECLARED,
        "shared contexts": card.contexts if card else NOT_DECLARED,
        "decoding": decoding_text(info),
        "decoding changed by model family": family_text(info),
        "attempts": card.attempts if card else NOT_DECLARED,
        "scoring": card.scoring if card else NOT_DECLARED,
        "options beyond the paper (off by default)": own,
    }


def markdown_table(infos: Iterable[StrategyInfo[Any]]) -> str:
    """The protocol table of docs/strategies.md: one row per strategy, the card's fields as columns."""
    rows = [{"strategy": f"`{info.name}`", **card_fields(info)} for info in infos]
    rows = [{key: value for key, value in row.items() if key not in TERMINAL_ONLY} for row in rows]
    headers = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(row[key]) for key in headers) + " |" for row in rows]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")

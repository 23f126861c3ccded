"""What batch mode saved: each batched run's cost, as billed at the batch price, beside what the same
calls (the same recorded usage) cost at the price of a direct call."""

from __future__ import annotations

import json
from dataclasses import dataclass

from agents.call import Usage
from agents.registry import agent_price, check_agent_params
from graphs.runs.runner import RunConfig
from results.store import ResultsStore


@dataclass(frozen=True)
class BatchSaving:
    run_id: str
    batch_usd: float
    direct_usd: float

    def line(self) -> str:
        saved = self.direct_usd - self.batch_usd
        share = f" ({saved / self.direct_usd:.0%})" if self.direct_usd else ""
        return (
            f"{self.run_id}: {_usd(self.batch_usd)} at the batch price, {_usd(self.direct_usd)} sent "
            f"directly: saved {_usd(saved)}{share}"
        )


def _usd(value: float) -> str:
    """Cents where they are enough, else six decimals: a small pilot's saving reads in whole digits."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.6f}"


def batch_savings(store: ResultsStore, run_ids: list[str]) -> list[BatchSaving]:
    """The runs whose agents ran in batch mode, with both costs; a run with a call of unknown cost,
    or an agent of unknown direct price, is left out (no saving could be stated)."""
    found = []
    for run_id in run_ids:
        stored = store.run_config(run_id)
        if "batch" not in json.dumps([stored.get("agent_params"), stored.get("agent_config")]):
            continue  # no agent of it was told batch mode: a direct run, its agents not resolved
        config = RunConfig.model_validate(stored)
        params = {
            spec: check_agent_params(spec, chosen, config=config.agent_config or None, defaults=paper)
            for spec, (chosen, paper) in config.agent_shares().items()
        }
        if not any(p.batch for p in params.values()):
            continue
        batch_usd, direct_usd = 0.0, 0.0
        for agent, tokens_in, tokens_out, read, written, cost in store.paid_usage(run_id):
            price = agent_price(agent, params[agent]) if agent in params else None
            usage = Usage(
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cache_read_tokens=read,
                cache_write_tokens=written,
            )
            direct = None if price is None else price.cost(usage)
            if cost is None or direct is None:
                break
            batch_usd += cost
            direct_usd += direct if params[agent].batch else cost
        else:
            found.append(BatchSaving(run_id, batch_usd, direct_usd))
    return found

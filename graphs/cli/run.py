"""`bongard run`, `bongard runs list | show` and `bongard judge`: the everyday job."""

from __future__ import annotations

import asyncio
import gc
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from agents.batch_ledger import LEDGER_FILE
from agents.batching import BATCH_CONCURRENCY
from agents.breaker import DEFAULT_MAX_FAILURES, EndpointDown
from agents.call_events import EVENTS
from datasets_io.render import Variant
from datasets_io.sqlite_errors import CACHE, STORE, SQLiteFileError, require_writable, writable
from datasets_io.workspace import home_flag, workspace_home
from graphs.cli.cells import cell_text, rate_text
from graphs.cli.console import EventsColumn, console, error_console, print_error, progress_columns
from graphs.cli.imports import uncollected_imports
from graphs.cli.options import (
    AgentConfigOption,
    DataDirOption,
    DatasetOptions,
    HomeOption,
    ModelParams,
    PolicyOption,
    RayAddressOption,
    StyleOption,
    parse_key_values,
)
from results.store import RESUME_HINT, STORE_FILE, ReadOnlyStore, ResultsStore, RunSummary
from results.task2 import PROBE_STRATEGY

if TYPE_CHECKING:  # the graphs room loads LangGraph: imported by the commands that run graphs
    from graphs.cli.detach import Detached
    from graphs.cluster.executor import ClusterOptions
    from graphs.runs.judging import JudgingReport
    from graphs.runs.runner import ItemOutcome, RunConfig, Runner
    from judges.styles import JudgeStyle


@dataclass(frozen=True)
class DefaultRun:
    """The embedded default: no keys, no GPU, no network."""

    strategy: str = "images-to-sides"
    model: str = "perception"
    dataset: str = "bongard-classic"
    options: tuple[str, ...] = ("holdout_test=true",)
    concurrency: int = 8


DEFAULT_RUN = DefaultRun()

EXIT_NOT_ALL_DONE = 3
"""`bongard run` ended with some items done and others failed or left for a resume; `bongard judge`
with some answers left undecided by a failed judge call."""
EXIT_NONE_DONE = 4
"""`bongard run` ended with no item done: every one failed, or the endpoint was down; `bongard judge`
with no answer judged."""

runs_app = typer.Typer(help="List and inspect stored runs.", no_args_is_help=True)


def open_store(home: Path | None) -> ResultsStore:
    """The store for a command that writes it, refused at once where it could not be written."""
    path = workspace_home(home) / STORE_FILE
    require_writable(STORE, path)
    return ResultsStore(path)


def open_reader(home: Path | None) -> ResultsStore:
    """The store for a command that only reads it: a read-only workspace (an archived store, a shared
    results folder) is read as it is, without writing a lock file beside it, said once."""
    path = workspace_home(home) / STORE_FILE
    if path.is_file() and not writable(path):
        error_console.print(f"read-only workspace: reading {path} without writing to it", highlight=False)
        return ReadOnlyStore(path)
    return open_store(home)


def run(
    strategy: Annotated[
        str | None, typer.Option(metavar="NAME", help="Strategy name (see `bongard strategies`).")
    ] = None,
    model: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Agent spec for every role, e.g. openai:gpt-4o.")
    ] = None,
    describer: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Agent spec for description calls.")
    ] = None,
    reasoner: Annotated[str | None, typer.Option(metavar="SPEC", help="Agent spec for answer calls.")] = None,
    author: Annotated[
        str | None, typer.Option(metavar="SPEC", help="Agent spec writing concept probes (concept-probe).")
    ] = None,
    dataset: Annotated[
        str | None, typer.Option(metavar="DATASET", help="Dataset name or FORMAT:PATH.")
    ] = None,
    problems: Annotated[
        str | None, typer.Option(metavar="IDS", help="Problem ids, e.g. 1-20,31 (default: all).")
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Draw this many problems with --seed (stored with the run), e.g. 100 of a test split.",
            show_default=False,
        ),
    ] = None,
    stratify: Annotated[
        str | None,
        typer.Option(
            metavar="LABEL",
            help="With --sample: keep the share of each concept (the left rule), group or metadata.KEY, "
            "as the case study samples Bongard-HOI and Bongard-OpenWorld.",
            show_default=False,
        ),
    ] = None,
    attempts: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Attempts per problem, each with its own seed (Bongard in Wonderland runs open-ended "
            "and multiple-choice 3 times); `--aggregate` of compare and analyze says how they count.",
        ),
    ] = 1,
    seed: Annotated[
        int,
        typer.Option(
            metavar="SEED",
            help="Seed of --sample's draw and of the strategy's seeded choices (test image order, "
            "distractors...; attempt k, from 0, uses SEED+k); the model's own seed is -M seed=N.",
        ),
    ] = 0,
    concurrency: Annotated[
        int, typer.Option(min=1, metavar="N", help="Problems solved, and calls in flight, at once.")
    ] = 4,
    variant: Annotated[
        Variant, typer.Option(help="Image variant: plain, grey, square, square-grey.")
    ] = "plain",
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            metavar="",
            help="Send the calls through the providers' batch APIs, at their batch price (-M batch=true; "
            f"openai, anthropic, gemini): problems in flight rise to at least {BATCH_CONCURRENCY}, so each "
            "batch gathers them.",
        ),
    ] = False,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            metavar="",
            help="In batch mode: submit the batches of the calls in flight, keep them, and exit; "
            "`--resume RUN` (with --detach again, or without to wait) collects what they answered and "
            "goes on.",
        ),
    ] = False,
    strategy_option: Annotated[
        list[str] | None,
        typer.Option(
            "--strategy-option",
            "-S",
            metavar="KEY=VALUE",
            help="Strategy option KEY=VALUE, repeatable (`bongard strategies NAME` lists them).",
        ),
    ] = None,
    rules_from: Annotated[
        str | None,
        typer.Option(
            metavar="RUN",
            help="deductive-rule-learning: apply the rules of this earlier run (= -S rules_from=RUN).",
        ),
    ] = None,
    descriptions_from: Annotated[
        str | None,
        typer.Option(
            metavar="RUN",
            help="componential-analysis, D1S, D2S, CG: reason over this run's panel descriptions "
            "(= -S descriptions_from=RUN).",
        ),
    ] = None,
    probes_from: Annotated[
        str | None,
        typer.Option(
            metavar="RUN",
            help="concept-probe: ask the probes this earlier run authored (= -S probes_from=RUN).",
        ),
    ] = None,
    no_cot: Annotated[
        bool,
        typer.Option(
            "--no-cot", metavar="", help="direct-rule-learning: the conclusion alone (= -S cot=false)."
        ),
    ] = False,
    judges: Annotated[
        str | None,
        typer.Option(metavar="SPECS", help="Judge the answers after the run: judge specs, comma-separated."),
    ] = None,
    policy: PolicyOption = None,
    judge_style: StyleOption = None,
    judge_param: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-param",
            "-J",
            metavar="KEY=VALUE",
            help="With --judges: a judge parameter, repeatable, as -M is for the agents (base_url, "
            "temperature, limits...).",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        str | None, typer.Option(metavar="RUN", help="Complete a stored run (an id or `latest`).")
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", metavar="", help="With --resume: retry failed items.")
    ] = False,
    exclude: Annotated[
        str | None,
        typer.Option(
            metavar="IDS",
            help="With --resume: drop these problems from the run for good, e.g. 7,12-13 (recorded with "
            "the run; their stored items leave its counts).",
            show_default=False,
        ),
    ] = None,
    max_failures: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="N",
            help="Stop the run when the first N requests to an endpoint all fail with a refused "
            "connection, 401, 403, 404 or a server error that asks no wait (500, 502...) (0: never).",
        ),
    ] = DEFAULT_MAX_FAILURES,
    executor: Annotated[
        Literal["local", "ray"],
        typer.Option(
            help="Where items are solved: this process (local) or a pool of Ray actors (ray; "
            "pip install 'bongard-agents\\[ray]'). The results are stored here either way."
        ),
    ] = "local",
    ray_address: RayAddressOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="With --executor ray: actors solving items, one CPU each, sharing --concurrency and "
            "each agent's limits (default: one per CPU of the cluster).",
            show_default=False,
        ),
    ] = None,
    param: ModelParams = None,
    agent_config: AgentConfigOption = None,
    data_dir: DataDirOption = None,
    option: DatasetOptions = None,
    home: HomeOption = None,
) -> None:
    """Run a strategy with a model over a dataset; resumable, cached, concurrent.

    With no options at all: the embedded default, images-to-sides with the offline
    perception agent over bongard-classic (panels 5 and 11 held out as the test pair).
    Exit code 0 when every item is done (and, with --judges, judged), 3 when some are not, 4 when
    none is.
    """
    with uncollected_imports():
        from graphs.runs.runner import parse_selection, prepare_run, resume_run, store_run

    store = open_store(home)
    cluster = _cluster(executor, ray_address, workers)
    contexts: list[str] = []
    if resume is not None:
        dropped = parse_selection(exclude) if exclude is not None else []
        run_id, runner = resume_run(resume, store, home=home, exclude=dropped)
        if resume == "latest":
            console.print(f"resuming {run_id}: the latest run no other process is running")
    elif exclude is not None:
        raise typer.BadParameter(
            "--exclude drops problems from a stored run: give --resume RUN", param_hint="--exclude"
        )
    else:
        flags = NewRun(
            strategy=strategy,
            model=model,
            describer=describer,
            reasoner=reasoner,
            author=author,
            dataset=dataset,
            problems=problems,
            sample=sample,
            stratify=stratify,
            attempts=attempts,
            seed=seed,
            concurrency=max(concurrency, BATCH_CONCURRENCY) if batch else concurrency,
            variant=variant,
            strategy_option=strategy_option or [],
            param=[*(param or []), *(["batch=true"] if batch else [])],
            agent_config=agent_config,
            data_dir=data_dir,
            option=option or [],
            shortcuts={
                "rules_from": rules_from,
                "descriptions_from": descriptions_from,
                "probes_from": probes_from,
                "cot": "false" if no_cot else None,
            },
        )
        if flags.names_nothing() and data_dir is None:
            flags = replace(flags, data_dir=_data_for_the_default_run(home))
        config = flags.or_default().config()
        if judges:  # a judging that cannot happen is refused before the run is stored and paid for
            _check_judging(config.strategy, judges, policy, judge_style, judge_param, agent_config, home)
        from graphs.experiments.contexts import sized_runner

        runner, contexts = sized_runner(prepare_run(config, store, home))
        run_id = store_run(runner)
    if judges and resume is not None:
        _check_judging(runner.config.strategy, judges, policy, judge_style, judge_param, agent_config, home)
    if detach:
        from graphs.cli.detach import check_detachable

        check_detachable(runner, cluster)
    _print_start(runner, run_id)
    for note in contexts:
        console.print(f"context: {escape(note)}", highlight=False)
    try:
        stopped = _run_with_progress(runner, run_id, retry_errors, max_failures, home, cluster, detach)
    except SQLiteFileError as error:  # a file fault after the run started (a full disk): not a refusal
        print_error(error)
        done = store.summary(run_id).done  # the store is still readable when it cannot be written
        console.print(f"resume with `{_resume_command(run_id, home)}` once the cause is fixed")
        raise typer.Exit(EXIT_NOT_ALL_DONE if done else EXIT_NONE_DONE) from None
    gc.freeze()  # what the run leaves lasts to the exit (`main`): the tail's imports walked it, 0.5 s
    summary = store.summary(run_id)
    for note in runner.learned():
        console.print(f"learned: {escape(note)}", highlight=False)
    detached = None if stopped is None or isinstance(stopped, EndpointDown) else stopped
    _print_summary(summary, home, detached=detached is not None)
    if detached is not None:
        console.print(detached.line(_resume_command(run_id, home)))
        return
    if summary.config["strategy"] == PROBE_STRATEGY and summary.done:
        _print_probe_criteria(store, run_id)
    undecided = False
    if judges and stopped is None:
        report = _judge_stored(run_id, judges, policy, judge_style, None, judge_param, agent_config, home)
        undecided = bool(report.left_unjudged)
    console.print(_result_table(store, run_id))  # judged, where --judges judged it
    if summary.status != "complete":
        raise typer.Exit(EXIT_NOT_ALL_DONE if summary.done else EXIT_NONE_DONE)
    if undecided:
        raise typer.Exit(EXIT_NOT_ALL_DONE)


def _check_judging(
    strategy: str,
    judges: str,
    policy: str | None,
    style: JudgeStyle | None,
    param: list[str] | None,
    agent_config: Path | None,
    home: Path | None,
) -> None:
    """Refuse, before a call is paid for, a judging `run --judges` could not make: a judge spec,
    parameter, key, provider extra, style or policy (`graphs.runs.judging.prepared_judging`)."""
    from agents.registry import read_agent_config
    from graphs.runs.judging import prepared_judging

    config = read_agent_config(agent_config) if agent_config else None
    params = parse_key_values(param, "-J")
    prepared_judging(strategy, judges.split(","), policy, style, params, home, config)


def _data_for_the_default_run(home: Path | None) -> Path | None:
    """The embedded default needs the classic problems: where they are found, nothing to do (None);
    else fetched into the workspace after saying what and from where, or, offline, what to run."""
    from datasets_io.catalog import default_data_dir
    from datasets_io.downloads import DownloadError
    from graphs.cli.fetching import download_dir, fetch_dataset

    if (default_data_dir() / DEFAULT_RUN.dataset).is_dir():
        return None
    to = download_dir(home)
    if (to / DEFAULT_RUN.dataset).is_dir():
        return to  # fetched into this workspace before
    console.print(f"no {DEFAULT_RUN.dataset} data found: fetching it into {to}")
    try:
        fetch_dataset(DEFAULT_RUN.dataset, to, home)
    except DownloadError as error:
        raise DownloadError(
            f"{error}. Without a network: run `bongard datasets download bongard-classic --to DIR` where "
            "there is one, bring DIR here and give --data-dir DIR"
        ) from None
    return to


def _print_start(runner: Runner, run_id: str) -> None:
    """What a run is about to do: problems skipped, its strategy and dataset, the decoding a model
    cannot take, the calls it may have in flight, the problems excluded."""
    for skipped in runner.skipped:
        error_console.print(f"[yellow]warning:[/yellow] skipped {escape(str(skipped))}")
    console.print(f"run {run_id}: {runner.config.strategy} on {runner.dataset.name}")
    for note in (note for notes in runner.config.decoding_dropped.values() for note in notes):
        console.print(f"decoding: {escape(note)}", highlight=False)
    console.print(str(runner.in_flight()), highlight=False)
    if runner.config.excluded:
        console.print(f"excluded from the run: problems {', '.join(runner.config.excluded)}")


def _cluster(executor: str, ray_address: str | None, workers: int | None) -> ClusterOptions | None:
    """The Ray pool asked for, imported before anything is stored: without Ray, no run is made."""
    if executor == "local":
        if ray_address is not None or workers is not None:
            raise typer.BadParameter(
                "--ray-address and --workers go with --executor ray", param_hint="--executor"
            )
        return None
    from graphs.cluster.executor import ClusterOptions

    return ClusterOptions(ray_address, workers)


@dataclass(frozen=True)
class NewRun:
    """The flags of `bongard run` that define a new run, checked together and turned into its
    `RunConfig`."""

    strategy: str | None
    model: str | None
    describer: str | None
    reasoner: str | None
    author: str | None
    dataset: str | None
    problems: str | None
    sample: int | None
    stratify: str | None
    attempts: int
    seed: int
    concurrency: int
    variant: Variant
    strategy_option: list[str]
    param: list[str]
    agent_config: Path | None
    data_dir: Path | None
    option: list[str]
    shortcuts: dict[str, str | None]
    """The strategy-specific flags, each an alias of one `-S KEY=VALUE` (`--rules-from RUN` is
    `-S rules_from=RUN`, `--no-cot` is `-S cot=false`)."""

    def names_nothing(self) -> bool:
        """No strategy, dataset or model named: the embedded default run."""
        named = self.model or self.describer or self.reasoner
        return self.strategy is None and self.dataset is None and not named

    def or_default(self) -> NewRun:
        """The embedded default run when no strategy, dataset or model is named."""
        if not self.names_nothing():
            return self
        return replace(
            self,
            strategy=DEFAULT_RUN.strategy,
            model=DEFAULT_RUN.model,
            dataset=DEFAULT_RUN.dataset,
            option=[*self.option, *DEFAULT_RUN.options],
            concurrency=max(self.concurrency, DEFAULT_RUN.concurrency),
        )

    def config(self) -> RunConfig:
        from agents.registry import read_agent_config
        from datasets_io.sampling import SampleSpec
        from graphs.registry import get_strategy
        from graphs.runs.runner import RunConfig, parse_selection

        strategy, dataset = self.strategy, self.dataset
        calls_none = strategy is not None and not get_strategy(strategy).roles  # a mixture reads runs
        named = self.model or (self.describer and self.reasoner)
        if strategy is None or dataset is None or not (named or calls_none):
            raise typer.BadParameter(
                "give --strategy, --model (or --describer and --reasoner) and --dataset, "
                "or no options at all for the embedded default run",
                param_hint="bongard run",
            )
        if self.stratify and not self.sample:
            raise typer.BadParameter("--stratify needs --sample N", param_hint="--stratify")
        strategy_options = self._strategy_options()
        sample = self.sample
        return RunConfig(
            strategy=strategy,
            dataset=dataset,
            data_dir=str(self.data_dir) if self.data_dir else None,
            dataset_options=parse_key_values(self.option),
            agents=self._roles(strategy, strategy_options),
            agent_params=parse_key_values(self.param, "-M"),
            agent_config=read_agent_config(self.agent_config) if self.agent_config else {},
            problems=parse_selection(self.problems) if self.problems else None,
            sample=SampleSpec(size=sample, stratify=self.stratify, seed=self.seed) if sample else None,
            attempts=self.attempts,
            seed=self.seed,
            concurrency=self.concurrency,
            variant=self.variant,
            strategy_options=strategy_options,
        )

    def _strategy_options(self) -> dict[str, str]:
        given = [*self.strategy_option, *(f"{k}={v}" for k, v in self.shortcuts.items() if v)]
        return parse_key_values(given, "-S")

    def _roles(self, strategy: str, options: dict[str, str]) -> dict[str, str]:
        """Role -> agent spec; a strategy with an author role (concept-probe) needs one named, or
        probes it does not write."""
        from graphs.registry import get_strategy

        roles = {"describer": self.describer or self.model, "reasoner": self.reasoner or self.model}
        if "author" in get_strategy(strategy).roles:
            if self.author is None and not {"probes", "probes_from"} & set(options):
                raise typer.BadParameter(
                    f"{strategy} asks every model the same probe per problem, written once by one author: "
                    "give --author SPEC (it may be the model under test, if you mean it), or "
                    "-S probes=PATH for the paper's published probes",
                    param_hint="--author",
                )
            roles["author"] = self.author or self.model
        return {role: spec for role, spec in roles.items() if spec}


def _run_with_progress(
    runner: Runner,
    run_id: str,
    retry_errors: bool,
    max_failures: int,
    home: Path | None,
    cluster: ClusterOptions | None = None,
    detach: bool = False,
) -> EndpointDown | Detached | None:
    """Run the pending items with a live progress line, here or on a Ray cluster (`cluster`); the
    breaker's stop, if it stopped the run, or `Detached` where it detached (`detach`)."""
    pending = runner.pending(run_id, retry_errors)
    totals: dict[str, Any] = {"done": 0, "failed": 0, "calls": 0, "tokens": 0, "cost": 0.0, "unknown": False}
    EVENTS.reset()
    with Progress(*progress_columns(), EventsColumn(), console=error_console, transient=False) as progress:
        task = progress.add_task("starting", total=len(pending))
        started = time.monotonic()

        def on_item(outcome: ItemOutcome) -> None:
            totals["done" if outcome.ok else "failed"] += 1
            totals["calls"] += outcome.calls
            totals["tokens"] += outcome.tokens
            totals["unknown"] |= outcome.cost_usd is None
            totals["cost"] += outcome.cost_usd or 0.0
            if outcome.error:  # escaped: an error's own [brackets], such as [redacted], are text
                progress.console.print(
                    f"[red]failed:[/red] {escape(outcome.problem)} (attempt {outcome.attempt}): "
                    f"{escape(outcome.error)}",
                    highlight=False,
                )
            cost = "unknown" if totals["unknown"] else f"${totals['cost']:.4f}"
            # Over the whole pass, every worker's: calls are counted as their items finish, 13 at
            # once for a descriptive item, so a rate over the last few items reads thousands a second.
            speed = totals["calls"] / max(time.monotonic() - started, 1e-3)
            progress.update(
                task,
                advance=1,
                description=f"{totals['done']} done, {totals['failed']} failed, {totals['calls']} calls, "
                f"{totals['tokens']} tokens, {cost}" + (f", {speed:.1f} calls/s" if speed else ""),
            )

        try:
            if cluster is None:
                solving = runner.run(
                    run_id,
                    retry_errors=retry_errors,
                    on_item=on_item,
                    max_failures=max_failures,
                    items=pending,
                )
                if not detach:
                    asyncio.run(solving)
                else:
                    from graphs.cli.detach import Detached, until_detached

                    if asyncio.run(until_detached(solving)):
                        progress.stop()
                        return Detached(runner.home / LEDGER_FILE)
            else:
                from graphs.cluster.executor import run_on_ray

                run_on_ray(
                    runner,
                    run_id,
                    cluster,
                    retry_errors=retry_errors,
                    on_item=on_item,
                    max_failures=max_failures,
                    announce=progress.console.print,
                    items=pending,
                )
        except EndpointDown as down:
            progress.stop()
            error_console.print(f"[red]stopped:[/red] {escape(str(down))}", highlight=False)
            return down
        except KeyboardInterrupt:
            progress.stop()
            error_console.print(
                f"interrupted: {totals['done']} items done in this pass, every finished call kept; "
                f"resume with `{_resume_command(run_id, home)}`"
            )
            raise typer.Exit(130) from None
        finally:
            if said := EVENTS.line():
                progress.console.print(f"[yellow]retried:[/yellow] {escape(said)}", highlight=False)
    return None


def _result_table(store: ResultsStore, run_id: str) -> Table:
    """The run's row of the comparison table, its strategy, model and dataset in the title and short
    headers with a caption saying what each divides, so it fits 100 columns. Read without pandas,
    whose import was most of a run's tail."""
    from results.counting import unscored_text
    from results.report_rows import run_result
    from results.run_compatibility import model_label

    row = run_result(store, run_id)
    config = store.run_config(run_id)
    probes = config["strategy"] == PROBE_STRATEGY  # its "test images" are the panels
    images = PANEL_ACCURACY if probes else IMAGE_ACCURACY
    title = f"result of {run_id}: {config['strategy']} · {model_label(config)} · {config['dataset']}"
    table = Table(title=escape(title), caption=f"{RESULT_CAPTION}; {images[1]}", caption_justify="left")
    for key, header in RESULT_COLUMNS.items():
        table.add_column(images[0] if key == "image_accuracy" else header)
    if row is not None:
        row["solved"] = unscored_text(row) if not row["n"] else row["solved"]  # not 0: nothing decided it
        row["accuracy"] = rate_text(row, "accuracy")
        row["image_accuracy"] = rate_text(row, "image_accuracy")
        row["refused_share"] = "-" if row["refused_share"] is None else f"{row['refused_share']:.3f}"
        table.add_row(*(escape(cell_text(row[key])) for key in RESULT_COLUMNS))
    return table


RESULT_COLUMNS = {
    "problems": "problems",
    "n": "n",
    "solved": "solved",
    "failed": "failed",
    "accuracy": "accuracy [95% CI]",
    "refused_share": "refused",
    "image_accuracy": "image acc. [95% CI]",
}
RESULT_CAPTION = (
    "n: problems scored (failed ones outside it); accuracy: solved / n; refused: the share of n the model "
    "refused or a filter blocked (unsolved, never judged)"
)
IMAGE_ACCURACY = (
    "image acc. [95% CI]",
    "image acc.: test images right / test images, the images of a problem counted as decided together",
)
PANEL_ACCURACY = (
    "panel acc. [95% CI]",
    "panel acc.: panels right / panels, the panels of a problem counted as decided together",
)


def _print_probe_criteria(store: ResultsStore, run_id: str) -> None:
    """A concept-probe run's Table 9 counts by name, beside its solved count (which is neither)."""
    from results.probe_report import probe_criteria
    from results.task2 import CRITERION_WORDS, TABLE_9, TABLE_9_CRITERIA

    [row] = probe_criteria(store, [run_id]).to_dict("records")
    counts = [
        f"{CRITERION_WORDS[criterion].split(' (')[0]}: {row[column]} of {row['problems']}"
        for column, criterion in zip(TABLE_9, TABLE_9_CRITERIA, strict=True)
    ]
    console.print(
        f"Table 9 (Bongard in Wonderland): {'; '.join(counts)}; solved above counts all 12 panels "
        "right in most attempts, neither of the paper's criteria"
    )


def _dollars(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _print_summary(summary: RunSummary, home: Path | None, detached: bool = False) -> None:
    planned = summary.planned if summary.planned is not None else "?"
    judged = (
        f"; judges: {summary.judge_verdicts} verdicts, cost {_dollars(summary.judge_cost_usd)}, "
        f"total {_dollars(summary.total_cost_usd)}"
        if summary.judge_verdicts
        else ""
    )
    console.print(
        f"{summary.id}: {summary.status}, {summary.done}/{planned} items done, {summary.failed} failed, "
        f"{summary.solved_text}, {summary.unsolved_text}; "
        f"{summary.calls} calls ({summary.cached_calls} cached), "
        f"{summary.tokens} tokens, cost {_dollars(summary.cost_usd)}{judged}"
    )
    if summary.cache_read_tokens or summary.cache_write_tokens:
        console.print(prompt_cache_line(summary))
    resume, retry = (_resume_command(summary.id, home, retry) for retry in (False, True))
    if summary.status == "interrupted" and not detached:
        console.print(f"resume with `{resume}`")
    if summary.retryable:
        items = f"{summary.retryable} failed item{'s' if summary.retryable > 1 else ''}"
        console.print(f"`{retry}` retries the {items} a retry can help")
    if summary.failed > summary.retryable:
        console.print(
            f"{summary.failed - summary.retryable} failed item(s) would fail the same way again: the "
            "strategy refused the run's stored options or the problem, or the service refused the "
            "request itself (a parameter, a value, a size: see the errors above); start a new run "
            "with other options"
        )


def prompt_cache_line(summary: RunSummary) -> str:
    """The run's input tokens read from the providers' prompt caches: its cached share."""
    share = summary.cache_read_tokens / summary.input_tokens if summary.input_tokens else 0.0
    return (
        f"prompt cache: {summary.cache_read_tokens} of {summary.input_tokens} input tokens read from the "
        f"provider's cache ({share:.0%}), {summary.cache_write_tokens} written to it"
    )


def _resume_command(run_id: str, home: Path | None, retry: bool = False) -> str:
    """The command that resumes the run, as it can be pasted: with the workspace it was run in."""
    return RESUME_HINT.format(run_id=run_id) + home_flag(home) + (" --retry-errors" if retry else "")


@runs_app.command("list")
def list_runs(
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Print each run's summary as JSON instead of a table.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Every stored run with its counts."""
    store = open_reader(home)
    summaries = [store.summary(run_id) for run_id in store.run_ids()]
    if as_json:
        print(json.dumps([s.as_json() for s in summaries], indent=2))
        return
    headers = ("run", "status", "strategy", "agents", "dataset", "planned", "done", "failed", "solved")
    table = Table(*headers, "calls", "cost (with judges)")
    for s in summaries:
        solved = (
            "-" if not s.done else "unjudged" if not s.scored else str(s.solved)
        )  # nothing done: no count
        table.add_row(
            s.id,
            s.status,
            s.config["strategy"],
            ", ".join(sorted(set(s.config["agents"].values()))),
            s.config["dataset"],
            *map(str, ("?" if s.planned is None else s.planned, s.done, s.failed)),
            solved,
            str(s.calls),
            _dollars(s.total_cost_usd),
        )
    console.print(table)


@runs_app.command("delete")
def delete_run(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id or `latest`.")],
    yes: Annotated[bool, typer.Option("--yes", metavar="", help="Do not ask for confirmation.")] = False,
    home: HomeOption = None,
) -> None:
    """Delete a run: its items, calls, verdicts and the checkpoints of its unfinished items."""
    from graphs.runs.checkpoints import delete_run_threads

    store = open_store(home)
    resolved = store.resolve_run(run_id)
    summary = store.summary(resolved)
    if summary.status == "running":
        raise typer.BadParameter(f"run {resolved} is running; stop it first", param_hint="RUN")
    what = f"run {resolved} ({summary.config['strategy']}, {summary.done} items done, {summary.calls} calls)"
    if not yes and not typer.confirm(f"delete {what}?"):
        raise typer.Exit(1)
    store.delete_run(resolved)
    threads = asyncio.run(delete_run_threads(workspace_home(home), resolved))
    console.print(f"deleted {what}" + (f" and {threads} unfinished item checkpoints" if threads else ""))


@runs_app.command("count")
def count_judging(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id or `latest`.")],
    judging: Annotated[
        str, typer.Argument(metavar="JUDGING", help="A judging's short id (`j-...`) or full name.")
    ],
    home: HomeOption = None,
) -> None:
    """Make one of a run's judgings the one its counts use (`runs show` lists them). Until one is
    named, the first complete judging counts, and a later one never replaces it silently."""
    from results.report_rows import UnknownJudging, resolved_judging
    from results.store import NAMED

    store = open_store(home)
    resolved = store.resolve_run(run_id)
    if not store.judgings(resolved):
        raise UnknownJudging(f"run {resolved} has no judging yet: judge it with `bongard judge {resolved}`")
    name = resolved_judging(store, [resolved], judging)
    store.count_judging(resolved, name, NAMED)
    console.print(f"run {resolved} counts by judging {escape(name)}", soft_wrap=True, highlight=False)


@runs_app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id or `latest`.")],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", metavar="", help="Print the summary, judgings and provenance as JSON instead of text."
        ),
    ] = False,
    home: HomeOption = None,
) -> None:
    """One run's configuration, counts, provenance (code, packages, prompts, data) and judgings, with
    the one that counts (`runs count` chooses; `compare --judging NAME` counts by another once)."""
    store = open_reader(home)
    resolved = store.resolve_run(run_id)
    summary = store.summary(resolved)
    judgings = store.judgings(resolved)
    counted = store.counted_judging(resolved)
    sessions = store.provenance(resolved)
    if as_json:
        shown = {
            **summary.as_json(),
            "judgings": [j.__dict__ for j in judgings],
            "counted_judging": None
            if counted is None
            else {"name": counted.judging.name, "how": counted.how},
            "provenance": sessions,
        }
        print(json.dumps(shown, indent=2))
        return
    from graphs.runs.provenance import provenance_lines

    console.print_json(json.dumps(summary.config))
    for note in (note for notes in summary.config.get("decoding_dropped", {}).values() for note in notes):
        console.print(f"decoding: {escape(note)}", highlight=False)
    _print_summary(summary, home)
    if summary.config["strategy"] == PROBE_STRATEGY and summary.done:
        _print_probe_criteria(store, resolved)
    for line in provenance_lines(sessions):
        console.print(escape(line), highlight=False)
    for judging in judgings:
        counts = f" (counts: {counted.how})" if counted is not None and counted.judging == judging else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(judging.decided_at))
        decided = f"{judging.accepted} of {judging.items} accepted, {when}{counts}"
        console.print(
            f"judging {escape(judging.name)}: {decided}; --judging {judging.short_id}", soft_wrap=True
        )


def judge(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id or `latest`.")],
    judges: Annotated[
        str, typer.Option(metavar="SPECS", help="Judge specs, comma-separated; `embedding[:T]` is offline.")
    ],
    policy: PolicyOption = None,
    style: StyleOption = None,
    human: Annotated[
        Path | None, typer.Option(metavar="CSV", help="CSV of human verdicts: problem, answer, verdict.")
    ] = None,
    param: ModelParams = None,
    agent_config: AgentConfigOption = None,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            metavar="",
            help="Send the judges' calls through their providers' batch APIs, at their batch price "
            "(-M batch=true; openai, anthropic, gemini).",
        ),
    ] = False,
    home: HomeOption = None,
) -> None:
    """Judge a stored run's free-form answers; nothing is re-solved, repeated judging is cached. A run
    another process is still writing is refused (`latest` skips it).
    `-M` parameters reach every agent judge whose provider takes them (a base_url, a temperature
    over the judges' 0, limits), as `bongard run`'s reach its agents.
    Exit code 0 when every free-form answer was judged, 3 when some were not (a judge call failed for
    good, or every judge abstained), 4 when none was; a workspace it could not write is refused before
    any call."""
    params = [*(param or []), *(["batch=true"] if batch else [])]
    report = _judge_stored(run_id, judges, policy, style, human, params, agent_config, home)
    if report.left_unjudged:
        raise typer.Exit(EXIT_NOT_ALL_DONE if report.decisions else EXIT_NONE_DONE)


def _judge_stored(
    run_id: str,
    judges: str,
    policy: str | None,
    style: JudgeStyle | None,
    human: Path | None,
    param: list[str] | None,
    agent_config: Path | None,
    home: Path | None,
) -> JudgingReport:
    """`bongard judge`'s work, its report printed: for the command and for `run --judges`."""
    from agents.registry import CACHE_FILE, read_agent_config
    from datasets_io.catalog import open_run_dataset
    from graphs.runs.judging import judge_run

    store = open_store(home)
    require_writable(CACHE, workspace_home(home) / CACHE_FILE)  # each verdict's reply is cached
    resolved = store.resolve_run(run_id, resumable=True)  # never a run another process is writing
    if resolved != (newest := store.resolve_run(run_id)):
        console.print(f"judging {resolved}: {newest}, the latest, is being run by another process")
    dataset = open_run_dataset(store.run_config(resolved))
    config = read_agent_config(agent_config) if agent_config else None
    report = asyncio.run(
        judge_run(
            store,
            resolved,
            dataset,
            judges.split(","),
            policy,
            style,
            home,
            human,
            config,
            parse_key_values(param, "-M"),
        )
    )
    for line in report.lines():
        console.print(escape(line))  # plain text: a server's error message may hold [brackets]
    return report

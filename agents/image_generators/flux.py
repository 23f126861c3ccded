"""`flux` or `flux:MODEL_ID`: diffusers' `FluxPipeline`, FLUX.1-dev by default, as Bongard-RWR+ used.

diffusers and torch are imported on first use (`pip install 'bongard-agents[flux]'`), so this
module loads anywhere. The pipeline is loaded once per process and model; renders run in a
worker thread so the event loop keeps serving, and take turns on the one pipeline (one GPU).
FLUX.1-dev is guidance-distilled, so its `guidance_scale` alone ignores a negative prompt: the
negative prompt goes through true classifier-free guidance (`negative_prompt` with
`true_cfg_scale`) where the installed diffusers offers it. Starting noise comes from a CPU
`torch.Generator` seeded with `seed`, so a seed starts from the same noise on any device.

Parameters: `-M steps=` (28), `guidance=` (3.5), `true_cfg=` (4.0; 1 turns the negative prompt
off), `device=` (cuda, else mps, else cpu), `dtype=` (bfloat16), `cpu_offload=true`.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

from PIL import Image, ImageOps

from agents.image_generators.base import DEFAULT_SIZE, GeneratorError, GeneratorParams, GeneratorProvider

DEFAULT_MODEL = "black-forest-labs/FLUX.1-dev"
DEFAULT_STEPS = 28
DEFAULT_GUIDANCE = 3.5
DEFAULT_TRUE_CFG = 4.0
DEFAULT_DTYPE = "bfloat16"
INSTALL_HINT = "pip install 'bongard-agents[flux]'"
GATED_HINT = " (a gated model needs its licence accepted on Hugging Face and HF_TOKEN set)"

RandomSource = Callable[[int], Any]
"""seed -> the `generator` argument of the pipeline."""

_log = logging.getLogger(__name__)
_pipelines: dict[tuple[str, str, str, bool], Any] = {}
_load_lock = threading.Lock()
_render_lock = threading.Lock()


def _torch() -> Any:
    # Imported by name so the module and its type check do not need torch installed.
    return importlib.import_module("torch")


def pick_device(requested: str | None) -> str:
    if requested:
        return requested
    torch = _torch()
    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"


def load_pipeline(model: str, params: GeneratorParams) -> Any:
    """The process's pipeline for a model and placement, loaded on first use."""
    device, dtype = pick_device(params.device), params.dtype or DEFAULT_DTYPE
    key = (model, device, dtype, params.cpu_offload)
    with _load_lock:
        if key not in _pipelines:
            diffusers = importlib.import_module("diffusers")  # first: it names the missing extra best
            torch = _torch()
            pipeline = diffusers.FluxPipeline.from_pretrained(model, torch_dtype=getattr(torch, dtype))
            if params.cpu_offload:  # weights wait in CPU memory; each part moves to the GPU in turn
                pipeline.enable_model_cpu_offload(**({"device": params.device} if params.device else {}))
            else:
                pipeline.to(device)
            pipeline.set_progress_bar_config(disable=True)
            _pipelines[key] = pipeline
        return _pipelines[key]


def seeded_generator(seed: int) -> Any:
    return _torch().Generator(device="cpu").manual_seed(seed)


def accepts(pipeline: Any, *names: str) -> bool:
    """Whether calling the pipeline takes all these keyword arguments (older diffusers lack some)."""
    parameters = inspect.signature(pipeline.__call__).parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    return open_ended or all(name in parameters for name in names)


def pipeline_arguments(
    pipeline: Any, positive: str, negative: str, generator: Any, size: int, params: GeneratorParams
) -> dict[str, Any]:
    """What one render passes to the pipeline."""
    arguments: dict[str, Any] = {
        "prompt": positive,
        "height": size,
        "width": size,
        "num_inference_steps": params.steps or DEFAULT_STEPS,
        "guidance_scale": params.guidance if params.guidance is not None else DEFAULT_GUIDANCE,
        "generator": generator,
        "num_images_per_prompt": 1,
        "output_type": "pil",
    }
    if negative.strip():
        if accepts(pipeline, "negative_prompt", "true_cfg_scale"):
            arguments["negative_prompt"] = negative
            arguments["true_cfg_scale"] = params.true_cfg or DEFAULT_TRUE_CFG
        else:
            _log.warning("this diffusers FluxPipeline takes no negative prompt; it is dropped")
    return arguments


class FluxGenerator:
    """A FLUX model through diffusers. `pipeline` and `random_source` replace the real ones in tests."""

    def __init__(
        self,
        model: str,
        params: GeneratorParams,
        *,
        pipeline: Any | None = None,
        random_source: RandomSource = seeded_generator,
    ) -> None:
        self.model = model
        self.params = params
        self.spec = f"flux:{model}"
        self._pipeline = pipeline
        self._random_source = random_source

    async def generate(
        self, positive: str, negative: str, *, seed: int, size: int = DEFAULT_SIZE
    ) -> Image.Image:
        return await asyncio.to_thread(self._render, positive, negative, seed, size)

    def _loaded(self) -> Any:
        if self._pipeline is None:
            try:
                self._pipeline = load_pipeline(self.model, self.params)
            except ImportError as error:
                missing = error.name or str(error)
                raise GeneratorError(self.spec, f"{missing} is not installed: {INSTALL_HINT}") from None
            except Exception as error:
                text = f"{type(error).__name__}: {error}"
                hint = GATED_HINT if any(mark in text for mark in ("401", "403", "gated")) else ""
                raise GeneratorError(self.spec, f"could not load {self.model}: {text}{hint}") from None
        return self._pipeline

    def _render(self, positive: str, negative: str, seed: int, size: int) -> Image.Image:
        pipeline = self._loaded()
        arguments = pipeline_arguments(
            pipeline, positive, negative, self._random_source(seed), size, self.params
        )
        try:
            with _render_lock:
                output = pipeline(**arguments)
            image: Image.Image = output.images[0]
        except Exception as error:
            raise GeneratorError(self.spec, f"rendering failed: {type(error).__name__}: {error}") from None
        image = image.convert("RGB")
        return (
            image
            if image.size == (size, size)
            else ImageOps.fit(image, (size, size), Image.Resampling.LANCZOS)
        )


def build(model: str, params: GeneratorParams) -> FluxGenerator:
    return FluxGenerator(model, params)


PROVIDER = GeneratorProvider(
    name="flux",
    summary="FLUX.1-dev (or flux:MODEL_ID) through diffusers, on this machine's GPU",
    build=build,
    requires=("diffusers", "torch"),
    extra="flux",
    default_model=DEFAULT_MODEL,
)

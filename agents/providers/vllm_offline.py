"""vLLM's in-process engine as a chat model: `vllm-offline:MODEL` (needs vLLM and a GPU).

vLLM is imported only when the first request runs, so this module loads
anywhere. The engine is created once per process and model; it is not
thread-safe, so requests take turns (vLLM batches inside each call).
Engine arguments are `VllmOfflineParams`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from agents.limits import RateLimits
from agents.provider import Provider
from agents.providers.vllm import VllmEngineParams

ENGINE_KEYS = ("max_model_len", "tensor_parallel_size", "gpu_memory_utilization", "dtype")
_engines: dict[tuple[str, str], Any] = {}
_engine_lock = threading.Lock()


def engine_for(model: str, engine_args: dict[str, Any]) -> Any:
    """The process's engine for a model, created on first use."""
    key = (model, repr(sorted(engine_args.items())))
    with _engine_lock:
        if key not in _engines:
            from vllm import LLM

            _engines[key] = LLM(model=model, **engine_args)
        return _engines[key]


class VllmOfflineParams(VllmEngineParams):
    dtype: str | None = Field(
        default=None, description="weight and activation type (auto, bfloat16, float16...)"
    )


class VllmOfflineChatModel(BaseChatModel):
    model: str
    engine_args: dict[str, Any] = Field(default_factory=dict)
    sampling: dict[str, Any] = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "vllm-offline"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        from vllm import SamplingParams

        engine = engine_for(self.model, self.engine_args)
        conversation = convert_to_openai_messages(messages)
        with _engine_lock:
            [result] = engine.chat([conversation], SamplingParams(**self.sampling, stop=stop), use_tqdm=False)
        completion = result.outputs[0]
        message = AIMessage(
            content=completion.text,
            usage_metadata={
                "input_tokens": len(result.prompt_token_ids),
                "output_tokens": len(completion.token_ids),
                "total_tokens": len(result.prompt_token_ids) + len(completion.token_ids),
            },
            response_metadata={"finish_reason": completion.finish_reason, "model_name": self.model},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await asyncio.to_thread(self._generate, messages, stop)


def build(model: str, params: VllmOfflineParams) -> BaseChatModel:
    engine_args = {key: getattr(params, key) for key in ENGINE_KEYS if getattr(params, key) is not None}
    if params.images_per_prompt is not None:
        engine_args["limit_mm_per_prompt"] = {"image": params.images_per_prompt}
    sampling = {
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "seed": params.seed,
        "top_p": params.top_p,
    }
    return VllmOfflineChatModel(
        model=model,
        engine_args=engine_args,
        sampling={key: value for key, value in sampling.items() if value is not None},
    )


PROVIDER = Provider(
    name="vllm-offline",
    summary="vLLM's in-process engine (GPU); imported on first use",
    build=build,
    params=VllmOfflineParams,
    requires=("vllm",),
    extra="vllm",
    rate_limits=RateLimits(concurrency=64),
    structured_method="prompt",
)

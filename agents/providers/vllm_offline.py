"""vLLM's in-process engine as a chat model: `vllm-offline:MODEL` (needs vLLM and a GPU).

vLLM is imported only when an engine is made, so this module loads
anywhere. The engine is created once per process and model; it is not
thread-safe, so one `chat` runs at a time, carrying every request waiting
then: vLLM batches them (`SharedEngine`). Engine arguments are `VllmOfflineParams`.

On a Ray cluster (`--executor ray`) each worker is a process of its own: Ray gives it the GPUs one
engine takes (`tensor_parallel_size`, see `engine_gpus`) as its `CUDA_VISIBLE_DEVICES`, and the
worker loads its engine as it starts (`load_engine`) and keeps it for the whole run. A
tensor-parallel engine runs its ranks as processes of its own on those GPUs
(`distributed_executor_backend="mp"`): inside a Ray actor vLLM could otherwise pick its Ray
backend and ask the cluster for GPUs the actor already holds.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from agents.limits import RateLimits
from agents.local_reply_limit import local_reply_tokens
from agents.provider import GpuEngine, Provider
from agents.providers.vllm import VllmEngineParams

ENGINE_KEYS = ("max_model_len", "tensor_parallel_size", "gpu_memory_utilization", "dtype")
_engines: dict[tuple[str, str], SharedEngine] = {}
_engine_lock = threading.Lock()


@dataclass
class _Request:
    conversation: list[Any]
    sampling: dict[str, Any]
    reply: Future[Any] = field(default_factory=Future)


class SharedEngine:
    """A process's engine and the requests waiting for it. One `chat` runs at a time (vLLM's `LLM`
    is not thread-safe); the call that runs it takes every request waiting then, which vLLM
    batches on its GPUs, so calls in flight share the engine instead of taking turns."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._busy = False
        self._waiting: list[_Request] = []

    def chat(self, conversation: list[Any], sampling: dict[str, Any]) -> Any:
        """The engine's output for one conversation, sent with the others waiting."""
        request = _Request(conversation, sampling)
        with self._lock:
            self._waiting.append(request)
            while self._busy and not request.reply.done():
                self._idle.wait()
            if request.reply.done():  # answered in the batch that just ran
                return request.reply.result()
            self._busy = True
            batch, self._waiting = self._waiting, []
        try:
            self._send(batch)
        finally:  # never leave a waiting call unanswered, whatever stopped the engine call
            for unanswered in (r for r in batch if not r.reply.done()):
                unanswered.reply.set_exception(RuntimeError("the engine call was interrupted"))
            with self._lock:
                self._busy = False
                self._idle.notify_all()
        return request.reply.result()

    def _send(self, batch: list[_Request]) -> None:
        """One engine call for the batch; if it fails, each request alone, so a bad one (a prompt
        too long) fails only its own call."""
        from vllm import SamplingParams

        first = batch[0].sampling
        same = all(request.sampling == first for request in batch)
        try:
            outputs = self.llm.chat(
                [request.conversation for request in batch],
                SamplingParams(**first) if same else [SamplingParams(**r.sampling) for r in batch],
                use_tqdm=False,
            )
        except Exception as error:
            if len(batch) == 1:
                batch[0].reply.set_exception(error)
                return
            for request in batch:
                self._send([request])
            return
        for request, output in zip(batch, outputs, strict=True):
            request.reply.set_result(output)


def engine_for(model: str, engine_args: dict[str, Any]) -> SharedEngine:
    """The process's engine for a model, created on first use."""
    key = (model, repr(sorted(engine_args.items())))
    with _engine_lock:
        if key not in _engines:
            from vllm import LLM

            _engines[key] = SharedEngine(LLM(model=model, **engine_args))
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
        engine = engine_for(self.model, self.engine_args)
        result = engine.chat(convert_to_openai_messages(messages), {**self.sampling, "stop": stop})
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


def engine_gpus(params: VllmOfflineParams) -> int:
    """The GPUs one engine takes: one per tensor-parallel rank."""
    return params.tensor_parallel_size or 1


def load_engine(chat: VllmOfflineChatModel) -> None:
    """The process's engine for `chat`, made now rather than by its first request (a model takes
    minutes to load: longer than a call may)."""
    engine_for(chat.model, chat.engine_args)


def build(model: str, params: VllmOfflineParams) -> BaseChatModel:
    engine_args = {key: getattr(params, key) for key in ENGINE_KEYS if getattr(params, key) is not None}
    if engine_gpus(params) > 1:
        engine_args["distributed_executor_backend"] = "mp"
    if params.images_per_prompt is not None:
        engine_args["limit_mm_per_prompt"] = {"image": params.images_per_prompt}
    sampling = {**params.request_sampling(), "max_tokens": local_reply_tokens(params)}  # vLLM's own: 16
    return VllmOfflineChatModel(model=model, engine_args=engine_args, sampling=sampling)


PROVIDER = Provider(
    name="vllm-offline",
    summary="vLLM's in-process engine (GPU); imported on first use",
    build=build,
    params=VllmOfflineParams,
    requires=("vllm",),
    extra="vllm",
    rate_limits=RateLimits(concurrency=64),
    structured_method="prompt",
    gpu_engine=GpuEngine(gpus=engine_gpus, load=load_engine),
)

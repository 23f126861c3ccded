"""Text-to-image generators for the Render step: the offline `shapes` test generator, the OpenAI
Images protocol against a stand-in on 127.0.0.1, the registry with a third-party plugin, and the
flux generator's mapping onto a pipeline test double (diffusers is not needed)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from PIL import Image

from agents.image_generators import registry
from agents.image_generators.base import GeneratorError, GeneratorParams, GeneratorProvider, ImageGenerator
from agents.image_generators.flux import DEFAULT_MODEL, FluxGenerator, pipeline_arguments
from agents.image_generators.http_images import request_body
from agents.image_generators.registry import GeneratorSpecError, generator_names, resolve_generator
from agents.image_generators.shape_prompts import COLOURS, parse_shapes
from agents.image_generators.shapes import BACKGROUND, plan_shapes
from agents.registry import AgentSpecError
from datasets_io.plugins import Registry
from tests.distributions import installed_distribution
from tests.standins.protocols import OpenAIImages
from tests.standins.server import Fault, Recorded, StandIn, StandInServer

MODEL = "test-image-model"
KEY = "sk-standin-images-0123456789"
FAST = {"max_attempts": 3, "max_total_s": 20.0, "timeout_s": 10.0}
SEEDS = range(6)


def render(
    generator: ImageGenerator, positive: str, negative: str = "", seed: int = 0, size: int = 256
) -> Image.Image:
    return asyncio.run(generator.generate(positive, negative, seed=seed, size=size))


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def blobs(image: Image.Image, colour: tuple[int, int, int] | None = None) -> int:
    """Connected regions of ink (anything but the background), or of exactly one colour."""
    pixels = np.asarray(image)
    mask = (pixels != BACKGROUND).any(axis=2) if colour is None else (pixels == colour).all(axis=2)
    count, _ = cv2.connectedComponents(mask.astype(np.uint8), connectivity=8)
    return int(count) - 1


# --- shapes: the deterministic offline test generator ---------------------------------------


@pytest.fixture
def shapes() -> ImageGenerator:
    return resolve_generator("shapes")


def test_same_inputs_give_the_same_bytes_and_another_seed_another_image(shapes: ImageGenerator) -> None:
    first = png(render(shapes, "three red circles and a blue square", "triangles", seed=3))
    again = png(render(shapes, "three red circles and a blue square", "triangles", seed=3))
    other_seed = png(render(shapes, "three red circles and a blue square", "triangles", seed=4))
    assert first == again
    assert first != other_seed


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("three circles", 3),
        ("2 squares and one triangle", 3),
        ("five small stars on the right", 5),
        ("a line, an arrow and a cross", 3),
        ("twelve tiny hollow hexagons", 12),
        ("a large filled ellipse above 4 diamonds", 5),
    ],
)
def test_it_draws_the_number_of_shapes_named(shapes: ImageGenerator, prompt: str, expected: int) -> None:
    for seed in SEEDS:
        assert blobs(render(shapes, prompt, seed=seed)) == expected, (prompt, seed)


def test_named_colours_are_drawn_in_those_colours(shapes: ImageGenerator) -> None:
    for seed in SEEDS:
        image = render(shapes, "three red circles and two blue squares", seed=seed)
        assert (blobs(image, COLOURS["red"]), blobs(image, COLOURS["blue"]), blobs(image)) == (3, 2, 5)


def test_shapes_and_colours_in_the_negative_prompt_are_not_drawn(shapes: ImageGenerator) -> None:
    for seed in SEEDS:
        image = render(shapes, "two circles and three squares", "squares, red, blurry", seed=seed)
        assert blobs(image) == 2
        assert blobs(image, COLOURS["red"]) == 0
        assert {shape.kind for shape in plan_shapes("two circles and three squares", "squares", seed)} == {
            "circle"
        }


def test_position_words_place_the_shapes(shapes: ImageGenerator) -> None:
    size = 256
    for seed in SEEDS:
        placed = plan_shapes("a circle on the left and on the top right, two squares", "", seed, size)
        circles = [s for s in placed if s.kind == "circle"]
        squares = [s for s in placed if s.kind == "square"]
        assert len(circles) == 1 and len(squares) == 2
        assert circles[0].centre[0] < size / 2
        assert all(s.centre[0] > size / 2 and s.centre[1] < size / 2 for s in squares)


def test_the_prompt_reader_understands_numbers_colours_sizes_and_plurals() -> None:
    [circles, square, stars] = parse_shapes("Three big red circles, a small outlined square and stars.")
    assert (circles.kind, circles.count, circles.colour, circles.size) == ("circle", 3, "red", "large")
    assert (square.count, square.size, square.style) == (1, "small", "outline")
    assert (stars.kind, stars.count) == ("star", None)  # a bare plural: how many is left to the seed
    assert parse_shapes("a square and no circles")[1].count == 0


def test_the_image_has_the_size_asked_for(shapes: ImageGenerator) -> None:
    image = render(shapes, "four triangles", size=128)
    assert (image.size, image.mode) == ((128, 128), "RGB")
    assert render(shapes, "four triangles", size=512).size == (512, 512)
    with pytest.raises(GeneratorError, match=r"^shapes:v1: size 4"):
        render(shapes, "four triangles", size=4)


def test_a_prompt_naming_no_shape_gets_one_default_figure(shapes: ImageGenerator) -> None:
    for seed in SEEDS:
        assert blobs(render(shapes, "a photograph of a dog on a beach", "cats", seed=seed)) == 1


# --- openai-images against a stand-in speaking the Images protocol ---------------------------


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(OpenAIImages())


@pytest.fixture
def keyed(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)


def images_generator(server: StandInServer, **params: Any) -> ImageGenerator:
    return resolve_generator(f"openai-images:{MODEL}", {"base_url": f"{server.url}/v1", **FAST, **params})


def header(request: Recorded, name: str) -> str | None:
    return next((v for k, v in request.headers.items() if k.lower() == name.lower()), None)


def test_the_request_speaks_the_images_protocol(keyed: None, server: StandInServer) -> None:
    server.responder = lambda body: "#3366cc"
    image = render(images_generator(server), "two red circles", "squares or triangles", seed=11, size=512)
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/images/generations")
    assert request.body["model"] == MODEL
    assert (request.body["size"], request.body["n"], request.body["seed"]) == ("512x512", 1, 11)
    assert request.body["response_format"] == "b64_json"
    assert request.body["prompt"] == "two red circles. Avoid: squares or triangles"
    assert header(request, "authorization") == f"Bearer {KEY}"
    assert (image.size, image.mode, image.getpixel((5, 5))) == ((512, 512), "RGB", (0x33, 0x66, 0xCC))


def test_without_a_negative_prompt_the_prompt_is_the_positive_one(keyed: None, server: StandInServer) -> None:
    render(images_generator(server), "a blue star", "  ")
    assert server.requests[0].body["prompt"] == "a blue star"


def test_a_429_with_retry_after_is_retried(keyed: None, server: StandInServer) -> None:
    server.faults.append(Fault(429, {"retry-after": "0"}, '{"error": {"message": "slow down"}}'))
    image = render(images_generator(server), "a circle", size=64)
    assert image.size == (64, 64)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"data": []}', "no image"),
        ('{"data": [{"url": "https://example.invalid/a.png"}]}', "no 'b64_json' (it has: url)"),
        ('{"data": [{"b64_json": "%%% not base64 %%%"}]}', "not valid base64"),
        (json.dumps({"data": [{"b64_json": base64.b64encode(b"plain words").decode()}]}), "not an image"),
    ],
)
def test_a_malformed_reply_is_a_generator_error(
    keyed: None, server: StandInServer, body: str, problem: str
) -> None:
    server.faults.append(Fault(200, body=body))
    with pytest.raises(GeneratorError) as raised:
        render(images_generator(server), "a circle")
    assert str(raised.value).startswith(f"openai-images:{MODEL}: ")
    assert problem in str(raised.value)
    assert len(server.requests) == 1  # a well-formed reply with no image is not worth another try


def test_a_reply_of_another_size_is_fitted_to_the_size_asked_for(keyed: None, server: StandInServer) -> None:
    wide = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 10, 10)).save(wide, format="PNG")
    server.faults.append(
        Fault(200, body=json.dumps({"data": [{"b64_json": base64.b64encode(wide.getvalue()).decode()}]}))
    )
    assert render(images_generator(server), "a circle", size=48).size == (48, 48)


def test_no_error_text_shows_the_key(keyed: None, server: StandInServer) -> None:
    server.faults.append(Fault(401, body=json.dumps({"error": {"message": f"key {KEY} was refused"}})))
    with pytest.raises(GeneratorError) as raised:
        render(images_generator(server), "a circle")
    assert KEY not in str(raised.value)
    assert "401" in str(raised.value) and "[redacted]" in str(raised.value)
    assert len(server.requests) == 1  # a refused key is not retried


def test_a_server_on_this_machine_needs_no_key(
    home: Path, server: StandInServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-key-not-for-other-servers")
    render(images_generator(server), "a circle")
    assert header(server.requests[0], "authorization") is None  # OpenAI's key goes to OpenAI only


def test_remote_servers_need_their_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    with pytest.raises(GeneratorSpecError, match="OPENAI_API_KEY"):
        resolve_generator("openai-images:gpt-image-1")
    with pytest.raises(GeneratorSpecError, match="OPENAI_COMPATIBLE_API_KEY"):
        resolve_generator("openai-images:m", {"base_url": "https://images.example.invalid/v1"})


def test_openai_itself_gets_only_the_fields_and_sizes_its_models_take() -> None:
    gpt_image = request_body("gpt-image-1", "p", 512, 5, openai=True)
    assert gpt_image == {"model": "gpt-image-1", "prompt": "p", "n": 1, "size": "1024x1024"}
    assert request_body("dall-e-2", "p", 512, 5, openai=True)["size"] == "512x512"
    assert request_body("dall-e-2", "p", 512, 5, openai=True)["response_format"] == "b64_json"
    assert request_body("any-model", "p", 384, 5, openai=False)["size"] == "384x384"


# --- the registry and third-party generators --------------------------------------------------


PLUGIN = '''
"""A package's own generator: a flat image whose grey level is the seed."""
from PIL import Image
from agents.image_generators.base import GeneratorProvider


class FlatGenerator:
    def __init__(self, model: str) -> None:
        self.spec = f"flat:{model}"

    async def generate(self, positive, negative, *, seed, size=512):
        return Image.new("RGB", (size, size), (seed, seed, seed))


PROVIDER = GeneratorProvider(
    name="flat", summary="flat grey", build=lambda model, params: FlatGenerator(model)
)
'''


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path declaring an entry point, as `pip install` would leave it."""
    fresh: Registry[GeneratorProvider] = Registry(
        registry.ENTRY_POINT_GROUP, "image generator", GeneratorProvider
    )
    monkeypatch.setattr(registry, "GENERATORS", fresh)
    monkeypatch.chdir(tmp_path)
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "flat-generator-plugin",
        {"flat_generator_plugin": PLUGIN},
        {"bongard_agents.image_generators": {"flat": "flat_generator_plugin:PROVIDER"}},
    ):
        yield


def test_an_entry_point_generator_plugs_in(installed_plugin: None) -> None:
    assert generator_names() == ["flat", "flux", "openai-images", "shapes"]
    generator = resolve_generator("flat:v2")
    image = render(generator, "anything", seed=9, size=32)
    assert (generator.spec, image.size, image.getpixel((0, 0))) == ("flat:v2", (32, 32), (9, 9, 9))


def test_built_in_names_and_specs(home: Path) -> None:
    assert {"flux", "openai-images", "shapes"} <= set(generator_names())
    assert resolve_generator("shapes").spec == "shapes:v1"
    with pytest.raises(
        GeneratorSpecError, match="unknown image generator 'dalle'; generators: flux, openai-images, shapes"
    ):
        resolve_generator("dalle:3")
    with pytest.raises(GeneratorSpecError, match="needs a model: openai-images:MODEL"):
        resolve_generator("openai-images")
    with pytest.raises(GeneratorSpecError, match="one version"):
        resolve_generator("shapes:v9")
    with pytest.raises(GeneratorSpecError, match="steps"):
        resolve_generator("shapes", {"steps": 0})
    assert issubclass(GeneratorSpecError, AgentSpecError)


def test_flux_without_diffusers_says_what_to_install(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "diffusers", None)  # not installed, whatever this machine has
    with pytest.raises(GeneratorSpecError) as raised:
        resolve_generator("flux")
    assert "diffusers" in str(raised.value)
    assert "pip install 'bongard-agents[flux]'" in str(raised.value)
    direct = FluxGenerator(DEFAULT_MODEL, GeneratorParams(device="cpu"))
    with pytest.raises(
        GeneratorError, match=r"^flux:black-forest-labs/FLUX.1-dev: diffusers is not installed"
    ):
        render(direct, "a cat")


# --- flux: argument mapping onto a pipeline TEST DOUBLE ---------------------------------------


@dataclass
class SeededNoiseDouble:
    """Stands in for a seeded `torch.Generator`: only remembers its seed."""

    seed: int


@dataclass
class PipelineOutputDouble:
    images: list[Image.Image]


@dataclass
class FluxPipelineDouble:
    """A TEST DOUBLE for diffusers' FluxPipeline: records each call's arguments, returns a fixed image."""

    image: Image.Image = field(default_factory=lambda: Image.new("RGB", (512, 512), (1, 2, 3)))
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(
        self,
        prompt: str,
        negative_prompt: str | None = None,
        true_cfg_scale: float = 1.0,
        height: int | None = None,
        width: int | None = None,
        num_inference_steps: int = 28,
        guidance_scale: float = 3.5,
        num_images_per_prompt: int = 1,
        generator: Any = None,
        output_type: str = "pil",
    ) -> PipelineOutputDouble:
        self.calls.append({k: v for k, v in locals().items() if k != "self"})
        return PipelineOutputDouble([self.image])


@dataclass
class OlderFluxPipelineDouble:
    """A TEST DOUBLE for a FluxPipeline from before true CFG: no negative prompt argument."""

    def __call__(self, prompt: str, height: int, width: int, generator: Any = None) -> PipelineOutputDouble:
        return PipelineOutputDouble([Image.new("RGB", (height, width))])


def test_flux_maps_prompts_seed_size_and_parameters_onto_the_pipeline() -> None:
    pipeline = FluxPipelineDouble()
    params = GeneratorParams(steps=4, guidance=2.5, true_cfg=3.0)
    generator = FluxGenerator(DEFAULT_MODEL, params, pipeline=pipeline, random_source=SeededNoiseDouble)
    image = render(generator, "a sharp photo of two cups", "three cups", seed=7, size=512)
    [call] = pipeline.calls
    assert call == {
        "prompt": "a sharp photo of two cups",
        "negative_prompt": "three cups",
        "true_cfg_scale": 3.0,
        "height": 512,
        "width": 512,
        "num_inference_steps": 4,
        "guidance_scale": 2.5,
        "num_images_per_prompt": 1,
        "generator": SeededNoiseDouble(7),
        "output_type": "pil",
    }
    assert png(image) == png(pipeline.image)
    assert generator.spec == "flux:black-forest-labs/FLUX.1-dev"


def test_flux_defaults_and_an_empty_negative_prompt() -> None:
    arguments = pipeline_arguments(
        FluxPipelineDouble(), "a cup", "", SeededNoiseDouble(1), 512, GeneratorParams()
    )
    assert (arguments["num_inference_steps"], arguments["guidance_scale"]) == (28, 3.5)
    assert "negative_prompt" not in arguments and "true_cfg_scale" not in arguments


def test_a_pipeline_without_true_cfg_gets_no_negative_prompt() -> None:
    arguments = pipeline_arguments(
        OlderFluxPipelineDouble(), "a cup", "two cups", SeededNoiseDouble(1), 512, GeneratorParams()
    )
    assert "negative_prompt" not in arguments


def test_the_real_seed_source_is_a_seeded_torch_generator() -> None:
    pytest.importorskip("torch")
    from agents.image_generators.flux import seeded_generator

    assert seeded_generator(7).initial_seed() == 7

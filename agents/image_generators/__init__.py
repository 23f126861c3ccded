"""Text-to-image generators for the Render step of the Bongard-RWR+ generation pipeline.

`resolve_generator("flux")`, `resolve_generator("openai-images:gpt-image-1")` or the offline
test generator `resolve_generator("shapes")` give an `ImageGenerator` whose
`generate(positive, negative, seed=..., size=512)` returns a PIL image.
"""

from agents.image_generators.base import (
    GeneratorError,
    GeneratorParams,
    GeneratorProvider,
    ImageGenerator,
)
from agents.image_generators.registry import (
    GeneratorSpecError,
    generator_names,
    get_generator_provider,
    register_generator,
    resolve_generator,
)

__all__ = [
    "GeneratorError",
    "GeneratorParams",
    "GeneratorProvider",
    "GeneratorSpecError",
    "ImageGenerator",
    "generator_names",
    "get_generator_provider",
    "register_generator",
    "resolve_generator",
]

"""Constants LangChain derives again on every call, derived once.

langchain-core's `is_data_content_block`, which every integration and the tracing hook run
on each content block of each message, rebuilds the tuple of data block types by calling
`typing.get_type_hints` on five TypedDicts (about 0.15-0.4 ms each time, several times per
request: a quarter of the managed agent's own CPU per call, measured with py-spy). The tuple
depends only on langchain-core's types, so it is memoised; if a later langchain-core renames
the helper, nothing is changed.
"""

from __future__ import annotations

import functools

from langchain_core.messages import content

BLOCK_TYPES = "_get_data_content_block_types"


def memoise_block_types() -> None:
    """Memoise the data block types (idempotent)."""
    helper = getattr(content, BLOCK_TYPES, None)
    if callable(helper) and not hasattr(helper, "cache_info"):
        setattr(content, BLOCK_TYPES, functools.cache(helper))

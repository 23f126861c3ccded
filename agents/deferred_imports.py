"""Package initialisers the toolkit's path to its first call imports and never uses, run on first use.

LangChain and LangGraph import a submodule of two packages whose `__init__` imports far more than
that submodule: `langsmith._internal._v2_migration_utils` imports `langsmith.types.run_select_field`,
and `langsmith.types/__init__` imports its 165 request and response types (LangSmith's REST API,
which a run that sends no traces never calls); `langgraph.runtime` imports `langgraph_sdk.auth.types`,
and `langgraph_sdk/__init__` imports the LangGraph Platform client and its HTTP stack (a run talks to
no LangGraph server). Each such package is registered as a bare package: its submodules import as
before, and its own `__init__` runs the first time a name only the `__init__` defines is asked for,
so nothing that uses the package sees a difference.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

DEFERRED = {
    "langsmith.types": "LangSmith's API types (165 modules), imported for one submodule by langsmith's "
    "v2 migration helpers that LangChain loads",
    "langgraph_sdk": "the LangGraph Platform client, imported for `langgraph_sdk.auth.types.BaseUser` by "
    "langgraph.runtime",
}
"""Package -> why its `__init__` waits."""


def defer_package_inits() -> None:
    """Register each package of `DEFERRED` that is not imported yet as a bare package."""
    for name in DEFERRED:
        if name not in sys.modules:
            _defer(name)


def _defer(name: str) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed, or not a package: nothing to wait for
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def initialise(attribute: str) -> Any:
        """The package's own `__init__`, run now, then the name asked for."""
        del module.__getattr__  # the package's own lookup from here on
        loader.exec_module(module)
        return getattr(module, attribute)

    module.__getattr__ = initialise  # type: ignore[method-assign]  # a module's PEP 562 hook, not a method
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)

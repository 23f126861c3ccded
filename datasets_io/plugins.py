"""One registry kind for everything found by name: loaders, providers, generators, embedders,
strategies and judges.

Built-ins and third-party packages arrive the same way, through an entry-point group
(as simonw/llm registers its own default plugins through its plugin hook). An entry point
names either one object (`name = "pkg.mod:OBJECT"`, registered under the entry point's name)
or a whole module (`family = "pkg.mod"`) whose import registers its objects, e.g. through
`@registry.decorator(...)`. Object entry points are listed by name without importing anything
and loaded when that name is asked for, so an optional SDK is imported only when its provider
is used; module entry points are imported when names are listed.

A name belongs to one source. Registered again by another (a plugin naming its strategy `direct`,
two packages declaring one provider, `register_provider` called in-process with a built-in's name),
it is refused with both sources named, whatever order the packages were installed or the
registrations made in: an in-process registration first looks at every entry point that could hold
the name, so it cannot take a built-in's name before the built-in loads. A silent replacement would
run another strategy under a known name.

A third party's entry point that fails to load (its import raises, its decorator is given a bad
field) is left out with one warning on stderr naming its package and error, and every other name
works: one broken plugin must not end every command (inspect_ai treats its plugins the same way).
The toolkit's own entry points are not plugins: their failure is raised.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Generic, TypeVar

from datasets_io.errors import BongardError, did_you_mean

T = TypeVar("T")
TOOLKIT_DISTRIBUTION = "bongard-agents"


class UnknownName(BongardError, KeyError):
    """A name no registry entry has; the message lists the names there are."""

    def __str__(self) -> str:
        return str(self.args[0])


class DuplicateName(BongardError):
    """A name a second source registers; never a plugin's failure to load, always a refusal."""


class Registry(Generic[T]):
    """Named objects of one kind, filled from one entry-point group on first need."""

    def __init__(self, group: str, kind: str, accepts: type | tuple[type, ...] | None = None) -> None:
        self.group = group
        self.kind = kind
        """What one entry is called in messages (`strategy`, `provider`, ...)."""
        self.accepts = accepts
        """The type an entry point may name directly; None: any object."""
        self._entries: dict[str, T] = {}
        self._sources: dict[str, str] = {}
        self._pending: dict[str, EntryPoint] | None = None
        """Entry points found and not loaded yet."""
        self._module_order: list[str] = []
        """The modules the group's entry points name, in the group's order (loaded or not)."""
        self._loading = 0
        """Entry points being loaded now: what registers meanwhile comes from one of them."""
        self._left_out: dict[str, str] = {}
        """Names whose plugin failed to load, with why."""
        self._unchecked = False
        """A module registered while it was still being imported: the entry points are loaded before
        the next lookup instead (loading them then could import that module's half-made names)."""

    def register(self, name: str, item: T, source: str | None = None) -> T:
        """Make `item` available as `name`. `source` says where it comes from (default: the module
        that defines it); the same source registering again (a module imported anew) replaces its
        entry, another source is refused naming both."""
        source = source or str(getattr(item, "__module__", None) or type(item).__module__)
        if name not in self._sources and not self._loading:
            if _initializing(source):
                self._unchecked = True  # a module imported directly (paradigms, whose names symbolic imports)
            else:
                self._load_modules()  # any may hold `name`: know it before an in-process source takes it
        held = self._sources.get(name)
        if (
            held is None
            and (pending := self._entry_points().get(name)) is not None
            and pending.attr is not None
        ):
            held = _described(pending)  # an object entry point not loaded yet holds the name
        if held is not None and held != source:
            raise DuplicateName(
                f"{self.kind} {name!r} is registered twice, by {held} and by {source}; "
                f"uninstall one of them or rename one {self.kind}"
            )
        self._entries[name] = item
        self._sources[name] = source
        return item

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator("name")` registers what it decorates."""
        return lambda item: self.register(name, item)

    def names(self) -> list[str]:
        """Every name: registered ones, then object entry points not yet loaded. Those a module entry
        point registers come in the entry points' order, whichever module was imported first (a
        listing must not change with what a process happened to import before)."""
        self._load_modules()
        rank = {module: index for index, module in enumerate(self._module_order)}
        registered = sorted(self._entries, key=lambda name: rank.get(self._sources[name], len(rank)))
        return list(dict.fromkeys([*registered, *self._entry_points()]))

    def get(self, name: str) -> T:
        """The entry called `name`, loading its entry point if it has one; else `UnknownName`."""
        if self._unchecked:
            self._load_modules()
        if name not in self._entries and (entry := self._entry_points().get(name)) is not None:
            self._load(entry)
        if name not in self._entries:
            self.names()  # a module entry point may define it
        if name in self._left_out:
            raise UnknownName(f"{self.kind} {name!r} is left out: {self._left_out[name]}")
        if name not in self._entries:
            raise UnknownName(
                f"unknown {self.kind} {name!r}{did_you_mean(name, self.names())}; "
                f"{self.kind} names: {', '.join(self.names())}"
            )
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def reset(self) -> None:
        """Forget what entry points were found, so newly installed ones are seen (tests, notebooks)."""
        self._pending = None

    def _entry_points(self) -> dict[str, EntryPoint]:
        if self._pending is None:
            found: dict[str, EntryPoint] = {}
            for entry in entry_points(group=self.group):
                other = found.setdefault(entry.name, entry)
                if other.value != entry.value:
                    raise BongardError(
                        f"{self.kind} {entry.name!r} is declared twice in entry-point group {self.group}, "
                        f"by {_described(other)} and by {_described(entry)}; uninstall one of them"
                    )
            self._pending = found
            self._module_order = [entry.value for entry in found.values() if entry.attr is None]
        return self._pending

    def _load_modules(self) -> None:
        self._unchecked = False
        for entry in [e for e in self._entry_points().values() if e.attr is None]:
            self._load(entry)

    def _load(self, entry: EntryPoint) -> None:
        self._loading += 1
        try:
            self._take(entry)
        finally:
            self._loading -= 1

    def _take(self, entry: EntryPoint) -> None:
        """`entry` loaded and registered, or, for a plugin that fails to load, left out with a warning."""
        try:
            loaded = entry.load()
        except DuplicateName:
            raise
        except Exception as error:
            self._entry_points().pop(entry.name, None)
            if entry.dist is not None and entry.dist.name == TOOLKIT_DISTRIBUTION:
                raise
            self._leave_out(entry, error)
            return
        self._entry_points().pop(entry.name, None)
        if isinstance(loaded, ModuleType):
            return  # importing the module registered its entries
        if self.accepts is not None and not isinstance(loaded, self.accepts):
            raise BongardError(
                f"entry point {entry.name} = {entry.value} in group {self.group} names a "
                f"{type(loaded).__name__}, not a {self.kind}"
            )
        self.register(entry.name, loaded, _described(entry))

    def _leave_out(self, entry: EntryPoint, error: Exception) -> None:
        """A plugin that failed to load: one warning, its name answered with why from then on."""
        why = f"its plugin {_described(entry)} failed to load: {type(error).__name__}: {error}"
        self._left_out[entry.name] = why
        print(f"warning: {self.kind} {entry.name!r} is left out, {why}", file=sys.stderr)


def _described(entry: EntryPoint) -> str:
    """An entry point as a person finds it: its target and the package that declares it."""
    package = entry.dist.name if entry.dist is not None else "an unnamed package"
    return f"{entry.value} (package {package})"


def _initializing(module: str) -> bool:
    """Whether `module` is still being imported (importlib marks its spec until the import ends)."""
    spec = getattr(sys.modules.get(module), "__spec__", None)
    return bool(getattr(spec, "_initializing", False))

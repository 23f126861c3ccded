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
two packages declaring one provider), it is refused with both sources named, whatever order the
packages were installed in: a silent replacement would run another strategy under a known name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Generic, TypeVar

from datasets_io.errors import BongardError, did_you_mean

T = TypeVar("T")


class UnknownName(BongardError, KeyError):
    """A name no registry entry has; the message lists the names there are."""

    def __str__(self) -> str:
        return str(self.args[0])


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

    def register(self, name: str, item: T, source: str | None = None) -> T:
        """Make `item` available as `name`. `source` says where it comes from (default: the module
        that defines it); the same source registering again (a module imported anew) replaces its
        entry, another source is refused naming both."""
        source = source or str(getattr(item, "__module__", None) or type(item).__module__)
        held = self._sources.get(name)
        if held is not None and held != source:
            raise BongardError(
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
        for entry in [e for e in self._entry_points().values() if e.attr is None]:
            self._load(entry)
        rank = {module: index for index, module in enumerate(self._module_order)}
        registered = sorted(self._entries, key=lambda name: rank.get(self._sources[name], len(rank)))
        return list(dict.fromkeys([*registered, *self._entry_points()]))

    def get(self, name: str) -> T:
        """The entry called `name`, loading its entry point if it has one; else `UnknownName`."""
        if name not in self._entries and (entry := self._entry_points().get(name)) is not None:
            self._load(entry)
        if name not in self._entries:
            self.names()  # a module entry point may define it
        if name not in self._entries:
            raise UnknownName(
                f"unknown {self.kind} {name!r}{did_you_mean(name, self.names())}; "
                f"{self.kind} names: {', '.join(self.names())}"
            )
        return self._entries[name]

    def load_all(self) -> dict[str, T]:
        """Every entry, all entry points loaded (for listings)."""
        for entry in list(self._entry_points().values()):
            self._load(entry)
        return dict(self._entries)

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

    def _load(self, entry: EntryPoint) -> None:
        loaded = entry.load()
        self._entry_points().pop(entry.name, None)
        if isinstance(loaded, ModuleType):
            return  # importing the module registered its entries
        if self.accepts is not None and not isinstance(loaded, self.accepts):
            raise BongardError(
                f"entry point {entry.name} = {entry.value} in group {self.group} names a "
                f"{type(loaded).__name__}, not a {self.kind}"
            )
        self.register(entry.name, loaded, _described(entry))


def _described(entry: EntryPoint) -> str:
    """An entry point as a person finds it: its target and the package that declares it."""
    package = entry.dist.name if entry.dist is not None else "an unnamed package"
    return f"{entry.value} (package {package})"

"""Prompt templates as data, replaceable by the user.

A room keeps its templates at `<package>/prompts/<family>/<name>.md` and
declares the family with `prompt_family(family, package)`. Each file opens
with an HTML comment naming the paper prompt it follows; the rest is a
`string.Template` (`$name` placeholders). A user directory (the
`PromptLibrary` argument, else `$BONGARD_PROMPTS`) holding
`<family>/<name>.md` wins over the built-in file of the same name.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from string import Template

from agents.machine_notes import for_prompt
from datasets_io.errors import BongardError

PROMPTS_ENV = "BONGARD_PROMPTS"
HEADER = re.compile(r"\A\s*<!--(.*?)-->\s*", re.DOTALL)
_FAMILIES: dict[str, str] = {}


class PromptError(BongardError, KeyError):
    """A template that does not exist or lacks a value it needs."""

    def __str__(self) -> str:
        return str(self.args[0])  # the message as written, not quoted as a missing key


def prompt_family(family: str, package: str) -> str:
    """Declare that `family`'s built-in templates live in `<package>/prompts/<family>/`."""
    _FAMILIES[family] = package
    return family


@dataclass(frozen=True)
class PromptTemplate:
    family: str
    name: str
    follows: str
    """The paper prompt this template is modelled on."""
    text: str
    source: str

    def fill(self, **values: object) -> str:
        """The template with `values` in it, each without machine notes (`agents.machine_notes`)."""
        try:
            return Template(self.text).substitute(
                {key: for_prompt(str(value)) for key, value in values.items()}
            )
        except KeyError as missing:
            raise PromptError(
                f"prompt {self.family}/{self.name} ({self.source}) needs a value for {missing}"
            ) from None


class PromptLibrary:
    """The templates of one run (or one command), each file read once: a run's provenance records the
    version it read, and every call of the run fills that version."""

    def __init__(self, user_dir: Path | None = None) -> None:
        configured = os.environ.get(PROMPTS_ENV)
        self.user_dir = user_dir or (Path(configured) if configured else None)
        self.used: dict[str, dict[str, str]] = {}
        """`family/name` -> the SHA-256 and source of every template read, for a run's provenance."""
        self._read: dict[tuple[str, str], PromptTemplate] = {}

    def get(self, family: str, name: str) -> PromptTemplate:
        if (family, name) not in self._read:
            self._read[family, name] = self._load(family, name)
        return self._read[family, name]

    def _load(self, family: str, name: str) -> PromptTemplate:
        user_file = self.user_dir / family / f"{name}.md" if self.user_dir else None
        if user_file is not None and user_file.is_file():
            raw, source = user_file.read_text(encoding="utf-8"), str(user_file)
        else:
            if family not in _FAMILIES:
                raise PromptError(f"unknown prompt family {family!r}; families: {', '.join(_FAMILIES)}")
            resource = files(_FAMILIES[family]).joinpath("prompts", family, f"{name}.md")
            if not resource.is_file():
                raise PromptError(f"no prompt template {family}/{name}.md")
            raw, source = resource.read_text(encoding="utf-8"), f"built-in {family}/{name}.md"
        digest = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        self.used[f"{family}/{name}"] = {"sha256": digest, "source": source}
        header = HEADER.match(raw)
        follows = header.group(1).strip().removeprefix("follows:").strip() if header else ""
        body = raw[header.end() :] if header else raw
        return PromptTemplate(family, name, follows, body.strip(), source)

    def fill(self, family: str, name: str, **values: object) -> str:
        return self.get(family, name).fill(**values)

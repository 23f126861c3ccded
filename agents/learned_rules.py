"""What a model's API refused that no table knew, learned from its 400 and kept in the workspace.

The family table (`agents.model_families`) is written by hand and goes stale the month a provider
ships. So a request refused with a 400 that names a sampling key it carried (OpenAI's
`unsupported_parameter` / `unsupported_value`, Anthropic's and Gemini's invalid-argument replies) is
sent again once without that key (`agents.managed`), and the rule is kept here, per agent spec: the
next run leaves the key out from its first call and says so, and `bongard agents MODEL` lists it.
"""

from __future__ import annotations

import re
import shlex
import sqlite3
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agents.retry import status_code
from datasets_io.sqlite_errors import LEARNED, SQLiteFileError
from datasets_io.workspace import home_flag, workspace_home

LEARNED_FILE = "learned_rules.sqlite"
LEARNABLE = ("temperature", "top_p", "seed", "reasoning_effort")
"""Keys a request may go without: the reply limit is not one (Anthropic requires it)."""
WIRE_NAMES = {"top_p": ("top_p", "topP"), "reasoning_effort": ("reasoning_effort", "reasoning.effort")}
"""How each provider's API names a key in its error (Gemini's fields are camelCase)."""
REFUSING_WORDS = re.compile(
    r"unsupported|not supported|deprecated|cannot|invalid|unknown name|not allowed|does not support|"
    r"may only be",
    re.IGNORECASE,
)
SCHEMA = """
CREATE TABLE IF NOT EXISTS refused_keys (
    spec TEXT NOT NULL,
    key TEXT NOT NULL,
    learned_at REAL NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (spec, key)
);
"""


@dataclass(frozen=True)
class LearnedRule:
    """`spec`'s API refused `key` (`reason`: its words); learned at `learned_at` (epoch seconds)."""

    spec: str
    key: str
    learned_at: float
    reason: str

    def date(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.learned_at))

    def note(self) -> str:
        return f"{self.spec} refused {self.key} (learned {self.date()}: {self.reason})"


def refused_key(error: BaseException, sent: Collection[str]) -> tuple[str, str] | None:
    """The learnable key of `sent` that a 400 says the API refuses, and the API's message; None where
    the error is no such refusal (another status, a key not sent, a message naming no key)."""
    if status_code(error) != 400:
        return None
    text = str(error)
    if REFUSING_WORDS.search(text) is None:
        return None
    named = [
        (found.start(), key)
        for key in sent
        if key in LEARNABLE
        for name in WIRE_NAMES.get(key, (key,))
        if (found := re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text)) is not None
    ]
    if not named:
        return None
    return min(named)[1], _reason(text)


def _reason(text: str) -> str:
    """The API's message, short: the `message` field where the SDK's text holds one."""
    found = re.search(r"""['"]message['"]\s*:\s*['"](.+?)['"]\s*[,}]""", text)
    message = found.group(1) if found else text
    return message if len(message) <= 200 else message[:197] + "..."


class LearnedRules:
    """The workspace's learned rules: an SQLite file, so runs in parallel processes add to it safely.
    Each read or write opens it (they are rare: one read per agent built, one write per rule), so an
    agent holding it can be sent to another process."""

    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s

    @contextmanager
    def _connected(self) -> Iterator[sqlite3.Connection]:
        """The file open, its table made; any fault of it as one error naming it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
            try:
                connection.executescript(SCHEMA)
                yield connection
            finally:
                connection.close()
        except (sqlite3.Error, OSError) as error:
            raise SQLiteFileError(LEARNED, self.path, error) from None

    def for_spec(self, spec: str) -> list[LearnedRule]:
        with self._connected() as connection:
            rows = connection.execute(
                "SELECT spec, key, learned_at, reason FROM refused_keys WHERE spec = ? ORDER BY learned_at",
                (spec,),
            ).fetchall()
        return [LearnedRule(*row) for row in rows]

    def add(self, rule: LearnedRule) -> None:
        with self._connected() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO refused_keys VALUES (?, ?, ?, ?)",
                (rule.spec, rule.key, rule.learned_at, rule.reason),
            )

    def forget(self, spec: str) -> int:
        """Delete `spec`'s rules (its next run sends every key again); how many went."""
        with self._connected() as connection:
            return connection.execute("DELETE FROM refused_keys WHERE spec = ?", (spec,)).rowcount


def workspace_rules(home: Path | None) -> LearnedRules:
    """The learned rules of the workspace at `home` (the default workspace where None)."""
    return LearnedRules(workspace_home(home) / LEARNED_FILE)


def forget_command(spec: str, home: Path | None) -> str:
    """The command that forgets `spec`'s learned rules in the same workspace, ready to paste."""
    return f"bongard agents {shlex.quote(spec)} --forget{home_flag(home)}"

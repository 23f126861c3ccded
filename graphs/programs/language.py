"""The rule language: a small, typed, side-effect-free language in which a Bongard rule is a program.

A rule is a condition on one panel's symbols (numbers a grounder measured or counted, by name),
true on the left (positive) side and false on the right:

    rule       := disjunct ("or" disjunct)*
    disjunct   := negation ("and" negation)*
    negation   := "not" negation | "(" rule ")" | comparison | "true" | "false"
    comparison := value ("<=" | "<" | ">=" | ">" | "==" | "!=") value
    value      := symbol | number

e.g. `closed_figures <= 1 and not (triangles > 0 or circles >= 2)`. Model text is parsed with a
grammar (Lark, LALR) into the dataclasses below and evaluated by walking them: it is never
`eval`ed or `exec`ed. Hostile text is refused, in one line and in bounded time, before or after
parsing: over `MAX_CHARACTERS`, over `MAX_DEPTH` levels of nesting, over `MAX_NODES` parts, a number
that is not finite or beyond `MAX_MAGNITUDE`, a symbol outside the vocabulary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:
    from lark import Lark, Token, Tree

MAX_CHARACTERS = 1_000
MAX_DEPTH = 12
MAX_NODES = 64
MAX_MAGNITUDE = 1e9
Compare = Literal["<=", "<", ">=", ">", "==", "!="]
GRAMMAR = r"""
?start: disj
?disj: conj ("or" conj)*
?conj: neg ("and" neg)*
?neg: "not" neg -> negation
    | atom
?atom: value COMPARE value -> comparison
     | "(" disj ")"
     | "true" -> true
     | "false" -> false
?value: NAME -> symbol
      | SIGNED_NUMBER -> number
COMPARE: "<=" | ">=" | "<" | ">" | "==" | "!="
NAME: /[a-z_][a-z0-9_]*/
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""
OPERATIONS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
NESTING = re.compile(r"\(|\bnot\b")


class RuleError(ValueError):
    """Text that is not a rule of the language over the vocabulary, said in one line."""


@dataclass(frozen=True)
class Symbol:
    name: str

    def value(self, symbols: Mapping[str, float]) -> float:
        return symbols.get(self.name, 0.0)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Number:
    number: float

    def value(self, symbols: Mapping[str, float]) -> float:
        return self.number

    def __str__(self) -> str:
        return format(self.number, ".10g")


Value = Symbol | Number


@dataclass(frozen=True)
class Comparison:
    left: Value
    compare: Compare
    right: Value

    def holds(self, symbols: Mapping[str, float]) -> bool:
        return OPERATIONS[self.compare](self.left.value(symbols), self.right.value(symbols))

    def __str__(self) -> str:
        return f"{self.left} {self.compare} {self.right}"


@dataclass(frozen=True)
class Constant:
    truth: bool

    def holds(self, symbols: Mapping[str, float]) -> bool:
        return self.truth

    def __str__(self) -> str:
        return "true" if self.truth else "false"


@dataclass(frozen=True)
class Not:
    part: Rule

    def holds(self, symbols: Mapping[str, float]) -> bool:
        return not self.part.holds(symbols)

    def __str__(self) -> str:
        return f"not {_grouped(self.part, Not)}"


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Rule, ...]

    def holds(self, symbols: Mapping[str, float]) -> bool:
        return all(part.holds(symbols) for part in self.parts)

    def __str__(self) -> str:
        return " and ".join(_grouped(part, AllOf) for part in self.parts)


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Rule, ...]

    def holds(self, symbols: Mapping[str, float]) -> bool:
        return any(part.holds(symbols) for part in self.parts)

    def __str__(self) -> str:
        return " or ".join(_grouped(part, AnyOf) for part in self.parts)


Rule = Comparison | Constant | Not | AllOf | AnyOf


def _grouped(part: Rule, within: type) -> str:
    """A part as written inside `within`: bracketed where it binds more loosely."""
    looser = {Not: (AllOf, AnyOf), AllOf: (AnyOf,), AnyOf: ()}[within]
    return f"({part})" if isinstance(part, looser) else str(part)


@cache
def _parser() -> Lark:
    """Lark (and the `regex` module it takes) imported on the first rule parsed, not by every run
    that lists the strategies (30 ms of each `bongard run`'s start-up)."""
    from lark import Lark

    return Lark(GRAMMAR, parser="lalr")


def parse_rule(text: str, vocabulary: Iterable[str]) -> Rule:
    """`text` as a rule over the symbols of `vocabulary`, or a `RuleError` saying why not."""
    text = text.strip()
    if len(text) > MAX_CHARACTERS:
        raise RuleError(f"the rule is {len(text)} characters long; at most {MAX_CHARACTERS} are read")
    _check_nesting(text)
    parser = _parser()
    from lark.exceptions import LarkError, UnexpectedInput

    try:
        tree = parser.parse(text)
    except UnexpectedInput as error:
        raise RuleError(f"not a rule of the language at character {error.column}: {text!r:.80}") from None
    except LarkError as error:
        raise RuleError(f"not a rule of the language: {error}") from None
    rule = _build(tree)
    known = set(vocabulary)
    unknown = sorted({name for name in symbols_of(rule) if name not in known})
    if unknown:
        raise RuleError(
            f"unknown symbol(s) {', '.join(unknown)}: the vocabulary is {', '.join(sorted(known))}"
        )
    return rule


def _check_nesting(text: str) -> None:
    """Refuse deep nesting before the parser sees it (brackets and negations inside each other)."""
    depth = deepest = 0
    for match in re.finditer(r"\(|\)|\bnot\b", text):
        token = match.group()
        depth += -1 if token == ")" else 1
        deepest = max(deepest, depth)
        if token == ")":
            depth = max(depth, 0)
    if deepest > MAX_DEPTH or len(NESTING.findall(text)) > MAX_NODES:
        raise RuleError(f"the rule nests deeper than {MAX_DEPTH} levels or has over {MAX_NODES} parts")


def _build(tree: Tree[Token] | Token) -> Rule:
    built = _node(tree)
    if not isinstance(built, Comparison | Constant | Not | AllOf | AnyOf):
        raise RuleError(f"a rule is a condition, not a value: {built}")
    if _size(built) > MAX_NODES:
        raise RuleError(f"the rule has over {MAX_NODES} parts")
    return built


def _node(tree: Tree[Token] | Token) -> Rule | Value:
    if isinstance(tree, str):  # a lark Token is a str; a Tree is not
        raise RuleError(f"unexpected {tree!r}")
    kind = str(tree.data)
    children = tree.children
    if kind == "symbol":
        return Symbol(str(children[0]))
    if kind == "number":
        number = float(str(children[0]))
        if not math.isfinite(number) or abs(number) > MAX_MAGNITUDE:
            raise RuleError(f"the number {str(children[0])[:24]} is beyond {MAX_MAGNITUDE:g}")
        return Number(number)
    if kind in ("true", "false"):
        return Constant(kind == "true")
    if kind == "comparison":
        left, right = _node(children[0]), _node(children[2])
        if not (isinstance(left, Symbol | Number) and isinstance(right, Symbol | Number)):
            raise RuleError("a comparison compares two values (symbols or numbers), not conditions")
        return Comparison(left, cast(Compare, str(children[1])), right)
    conditions = [_node(child) for child in children]
    if any(isinstance(part, Symbol | Number) for part in conditions):
        raise RuleError("'and', 'or' and 'not' join conditions, not bare values")
    joined = cast(list[Rule], conditions)
    if kind == "negation":
        return Not(joined[0])
    return AllOf(tuple(joined)) if kind == "conj" else AnyOf(tuple(joined))


def _parts(rule: Rule) -> tuple[Rule, ...]:
    if isinstance(rule, Not):
        return (rule.part,)
    return rule.parts if isinstance(rule, AllOf | AnyOf) else ()


def _size(rule: Rule) -> int:
    return 1 + sum(_size(part) for part in _parts(rule))


def symbols_of(rule: Rule) -> set[str]:
    """The symbol names a rule reads."""
    if isinstance(rule, Comparison):
        return {value.name for value in (rule.left, rule.right) if isinstance(value, Symbol)}
    return set().union(*(symbols_of(part) for part in _parts(rule)))

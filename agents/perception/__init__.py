"""The offline perception agent: classical vision and rule induction, no keys, no weights."""

VERSION = 2
"""In the agent's cache key: raise it when the agent's replies change, so cached ones are not reused."""

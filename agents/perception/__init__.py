"""The offline perception agent: classical vision and rule induction, no keys, no weights."""

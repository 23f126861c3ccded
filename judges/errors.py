"""The judges room's one error: a judge, policy or label file the user has to fix."""

from __future__ import annotations

from datasets_io.errors import BongardError


class JudgeError(BongardError, ValueError):
    """A judge spec, voting policy, threshold or human-label file that cannot be used.

    Also a `ValueError`, as these were before the toolkit had one error base, so callers
    that caught bad values keep catching them.
    """

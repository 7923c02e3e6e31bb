"""Small helpers for the wording of messages."""

from __future__ import annotations

__all__ = ["article"]


def article(word: str) -> str:
    """``word`` with its indefinite article, by its first letter: ``an Employee``, ``an
    int``, ``a Team``, ``a User`` (a ``u`` is read as "you", the usual case in names)."""
    return f"{'an' if word[:1].lower() in ('a', 'e', 'i', 'o') else 'a'} {word}"

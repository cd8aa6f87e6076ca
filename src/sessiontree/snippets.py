"""Search-hit snippets: the text around a match, cut to about one line.

Every backend's search makes its :attr:`SearchHit.snippet <sessiontree.metadata.SearchHit>`
here, so hits read alike whichever store found them.
"""

from __future__ import annotations

__all__ = ["make_snippet"]


def make_snippet(text: str, query: str, width: int = 160) -> str:
    """About ``width`` characters of ``text`` around the first case-insensitive hit of ``query``."""
    flat = " ".join(text.split())
    pos = flat.lower().find(query.lower())
    if pos < 0:
        for word in query.split():
            pos = flat.lower().find(word.lower())
            if pos >= 0:
                break
    if pos < 0:
        pos = 0
    start = max(0, pos - width // 3)
    end = min(len(flat), start + width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")

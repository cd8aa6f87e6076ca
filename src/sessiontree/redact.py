"""Store URLs as they may be shown: without the password they can hold."""

from __future__ import annotations

import re

__all__ = ["redact_url"]

_USERINFO = re.compile(r"(//[^:@/?#]*):[^@/?#]*@")
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with the password of its user info (``//user:secret@host``) and of a
    ``password=`` query parameter replaced by ``***``; every other character as it was."""
    return _PASSWORD_PARAM.sub(r"\1***", _USERINFO.sub(r"\1:***@", url))

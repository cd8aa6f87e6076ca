"""Wire formats: AgentMessages ⇄ the request shapes of the providers' APIs (SPEC §11).

Each converter pair is pure (no I/O, no SDK import): the output is plain dicts that the
official SDKs accept as their typed request parameters.
"""

from __future__ import annotations

from sessiontree.wire.openai_responses import from_openai_responses, to_openai_responses

__all__ = ["from_openai_responses", "to_openai_responses"]

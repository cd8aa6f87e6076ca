"""The provider layer: what sessiontree knows about each LLM provider's API, written once.

Everything below :mod:`sessiontree.models` (which streams answers) and
:mod:`sessiontree.summarizers` (which asks a model for a summary) reads the provider rules
from here: the endpoint and key (environment variables, the placeholder key of a local
server, the base-URL check), the defaults every request shares, the output-token cap's field
name, how each API's usage and stop reasons map onto :class:`~sessiontree.messages.Usage`
and sessiontree's stop reasons, Anthropic's prompt-cache breakpoints and the ``<think>``
block some OpenAI-compatible servers put in front of the answer.

* :mod:`sessiontree.providers.endpoint` — base URL, API key, client options and defaults.
* :mod:`sessiontree.providers.openai` — OpenAI chat completions (and compatible servers).
* :mod:`sessiontree.providers.anthropic` — Anthropic Messages.

No SDK is imported here: these modules read SDK objects by attribute.
"""

from __future__ import annotations

__all__: list[str] = []

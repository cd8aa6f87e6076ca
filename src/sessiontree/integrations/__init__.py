"""Adapters that plug sessiontree into agent frameworks (docs/adapters.md).

Each module needs its framework installed (an optional extra) and is imported on its own:

* :mod:`sessiontree.integrations.openai_agents` — ``pip install 'sessiontree[openai-agents]'``
* :mod:`sessiontree.integrations.claude_agent_sdk` — ``pip install 'sessiontree[claude-agent-sdk]'``
* :mod:`sessiontree.integrations.langchain` — ``pip install 'sessiontree[langchain]'``
* :mod:`sessiontree.integrations.pydantic_ai` — ``pip install 'sessiontree[pydantic-ai]'``

Importing this package imports none of the frameworks.
"""

from __future__ import annotations

__all__: list[str] = []

"""Models the harness can call: the :class:`Model` protocol and its SDK-backed implementations.

``resolve_model("openai/gpt-4.1")`` or ``resolve_model("anthropic/claude-sonnet-4-5")``
builds one from a ``provider/model`` name; the SDKs are imported only then.
"""

from __future__ import annotations

from typing import Any

from sessiontree.errors import AgentHarnessError
from sessiontree.models.base import (
    CompletingModel,
    Done,
    Model,
    ModelEvent,
    ModelRequest,
    Prices,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSchema,
    UsageDelta,
)

__all__ = [
    "PROVIDERS",
    "AnthropicModel",
    "CompletingModel",
    "Done",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "OpenAIChatModel",
    "Prices",
    "TextDelta",
    "UsageDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolSchema",
    "resolve_model",
]

PROVIDERS = ("openai", "anthropic")
"""The provider prefixes :func:`resolve_model` knows; any OpenAI-compatible server is
reached as ``openai/<model>`` with a ``base_url``."""


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatModel":
        from sessiontree.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel
    if name == "AnthropicModel":
        from sessiontree.models.anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module 'sessiontree.models' has no attribute {name!r}")


def resolve_model(name: str, **options: Any) -> Model:
    """A model from ``"provider/model"``.

    Args:
        name: ``openai/<model>`` (chat completions; any compatible server through
            ``base_url``) or ``anthropic/<model>``. The model part may itself contain ``/``
            (``openai/meta-llama/Llama-3.1-8B``).
        **options: passed to the model's constructor (``base_url``, ``api_key``,
            ``context_window``, ``max_output_tokens``, ``prices``, ...).

    Raises:
        AgentHarnessError: ``invalid_argument`` — no ``/``, or an unknown provider.
        MissingExtraError: the provider's SDK is not installed.
    """
    provider, sep, model_id = name.partition("/")
    if not sep or not provider or not model_id:
        raise AgentHarnessError(
            "invalid_argument",
            f"model {name!r} must be 'provider/model', e.g. 'openai/gpt-4.1' or "
            "'anthropic/claude-sonnet-4-5'",
        )
    if provider == "openai":
        from sessiontree.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel(model_id, **options)
    if provider == "anthropic":
        from sessiontree.models.anthropic import AnthropicModel

        return AnthropicModel(model_id, **options)
    raise AgentHarnessError(
        "invalid_argument",
        f"unknown provider {provider!r} in {name!r}; known: {', '.join(PROVIDERS)} "
        "(an OpenAI-compatible server is 'openai/<model>' with a base URL)",
    )

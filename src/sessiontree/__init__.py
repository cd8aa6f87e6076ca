"""sessiontree: persistent, branchable conversation history for LLM agents.

The top tier of the public API (docs/api.md): :func:`open_repo`, :class:`SessionRepo`,
:class:`Session`, the entry and message models and the errors. Everything else is imported
from the sub-package that defines it (``sessiontree.context``, ``.compaction``, ``.harness``,
``.models``, ``.wire``, ``.interop``, ``.backends.*``, ...), listed in docs/api.md.

A name that was importable from here before the tiers keeps working for one release: it is
returned with a :class:`DeprecationWarning` that names its new import. Importing this package
imports no database driver and no LLM SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiontree.entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    OpaqueEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
)
from sessiontree.errors import (
    CompactionError,
    CorruptSessionError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    LeafMovedError,
    SessionExistsError,
    SessionNotFoundError,
    SessionTreeError,
    StorageError,
    SummaryError,
)
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from sessiontree.repos import SessionRepo, open_repo
from sessiontree.session import Session

if TYPE_CHECKING:
    __version__: str

MOVED: dict[str, str] = {
    # the rarer errors
    "AgentHarnessError": "sessiontree.errors",
    "InvalidArgumentError": "sessiontree.errors",
    "InvalidMetadataError": "sessiontree.errors",
    "InvalidSessionIdError": "sessiontree.errors",
    "MissingExtraError": "sessiontree.errors",
    "ModelError": "sessiontree.errors",
    "StorageTimeoutError": "sessiontree.errors",
    # backends
    "MemoryRepo": "sessiontree.repos",
    "MemoryStorage": "sessiontree.backends.memory.storage",
    "JSONLRepo": "sessiontree.backends.jsonl.repo",
    "JSONLStorage": "sessiontree.backends.jsonl",
    "SQLRepo": "sessiontree.backends.sql.repo",
    "SQLStorage": "sessiontree.backends.sql",
    "EntryCursor": "sessiontree.storage.base",
    "SessionStorage": "sessiontree.storage.base",
    # entries, context and tree
    "CompactionDetails": "sessiontree.entries",
    "dump_entry": "sessiontree.entries",
    "parse_entry": "sessiontree.entries",
    "ModelRef": "sessiontree.context",
    "SessionContext": "sessiontree.context",
    "build_context_from_path": "sessiontree.context",
    "default_transform": "sessiontree.context",
    "find_tool_pair_problems": "sessiontree.context",
    "repair_tool_pairs": "sessiontree.context",
    "to_llm_messages": "sessiontree.context",
    "SearchHit": "sessiontree.metadata",
    "SessionInfo": "sessiontree.metadata",
    "SessionMetadata": "sessiontree.metadata",
    "SessionStats": "sessiontree.metadata",
    "TreeNode": "sessiontree.tree",
    # compaction and summarisers (LLM SDKs load on first use)
    "CompactionSettings": "sessiontree.compaction",
    "compact": "sessiontree.compaction",
    "estimate_context_tokens": "sessiontree.compaction",
    "estimate_tokens": "sessiontree.compaction",
    "prepare_compaction": "sessiontree.compaction",
    "should_compact": "sessiontree.compaction",
    "AnthropicSummarizer": "sessiontree.summarizers.anthropic",
    "ExtractiveSummarizer": "sessiontree.summarizers.extractive",
    "OpenAISummarizer": "sessiontree.summarizers.openai",
    "Summarizer": "sessiontree.summarizers.base",
    "SummaryResult": "sessiontree.summarizers.base",
    # the agent harness
    "AgentEvent": "sessiontree.harness",
    "AgentHarness": "sessiontree.harness",
    "ContextHarness": "sessiontree.harness",
    "RetryPolicy": "sessiontree.harness",
    "Tool": "sessiontree.harness",
    "tool": "sessiontree.harness",
    # models (SDKs load when a model is constructed)
    "AnthropicModel": "sessiontree.models",
    "Model": "sessiontree.models",
    "ModelRequest": "sessiontree.models",
    "OpenAIChatModel": "sessiontree.models",
    "Prices": "sessiontree.models",
    "resolve_model": "sessiontree.models",
    # wire converters
    "from_anthropic": "sessiontree.wire",
    "from_openai_chat": "sessiontree.wire",
    "from_openai_responses": "sessiontree.wire",
    "to_anthropic": "sessiontree.wire",
    "to_openai_chat": "sessiontree.wire",
    "to_openai_responses": "sessiontree.wire",
    # interoperability
    "ImportReport": "sessiontree.interop",
    "export_pi_session": "sessiontree.interop",
    "import_session": "sessiontree.interop",
}
"""Names importable from ``sessiontree`` before the tiers → the module to import them from now.
Each still resolves here for one release, with a :class:`DeprecationWarning`."""


_UNKNOWN_VERSION = "0+unknown"
"""``__version__`` of a source tree run without being installed (no distribution metadata)."""


def _installed_version() -> str:
    """The installed distribution's version (``importlib.metadata``), else
    :data:`_UNKNOWN_VERSION`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessiontree")
    except PackageNotFoundError:
        return _UNKNOWN_VERSION


def __getattr__(name: str) -> Any:
    """``__version__`` (read on first use), or a name of :data:`MOVED` with a
    :class:`DeprecationWarning` naming its new import.

    Raises:
        AttributeError: any other name.
    """
    if name == "__version__":  # read on first use: importing the metadata reader costs time
        return _installed_version()
    module = MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiontree' has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(
        f"sessiontree.{name} is deprecated and will be removed in the next release: "
        f"use 'from {module} import {name}'",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    """The public names (:data:`__all__`) and ``__version__``: not the deprecated ones."""
    return sorted([*__all__, "__version__"])


__all__ = [
    "ActiveToolsChangeEntry",
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactionEntry",
    "CompactionError",
    "CompactionSummaryMessage",
    "CorruptSessionError",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "DuplicateEntryError",
    "Entry",
    "EntryNotFoundError",
    "ImageContent",
    "InvalidEntryError",
    "LabelEntry",
    "LeafEntry",
    "LeafMovedError",
    "MessageEntry",
    "ModelChangeEntry",
    "OpaqueEntry",
    "Session",
    "SessionExistsError",
    "SessionInfoEntry",
    "SessionNotFoundError",
    "SessionRepo",
    "SessionTreeError",
    "StorageError",
    "SummaryError",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "open_repo",
]

"""sessiontree: persistent, branchable conversation history for LLM agents.

The stable public API (docs/api.md). Importing this package imports no database driver and no
LLM SDK: ``SQLRepo``/``SQLStorage`` and the LLM summarisers load their modules on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiontree.backends.memory.storage import MemoryStorage
from sessiontree.context import (
    ModelRef,
    SessionContext,
    build_context_from_path,
    default_transform,
    find_tool_pair_problems,
    repair_tool_pairs,
    to_llm_messages,
)
from sessiontree.entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionDetails,
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
    dump_entry,
    parse_entry,
)
from sessiontree.errors import (
    AgentHarnessError,
    CompactionError,
    CorruptSessionError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidArgumentError,
    InvalidEntryError,
    InvalidMetadataError,
    InvalidSessionIdError,
    LeafMovedError,
    MissingExtraError,
    ModelError,
    SessionExistsError,
    SessionNotFoundError,
    SessionTreeError,
    StorageError,
    StorageTimeoutError,
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
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata, SessionStats
from sessiontree.repos import MemoryRepo, SessionRepo, open_repo
from sessiontree.session import Session
from sessiontree.storage.base import EntryCursor, SessionStorage
from sessiontree.tree import TreeNode

if TYPE_CHECKING:
    from sessiontree.backends.sql.repo import SQLRepo
    from sessiontree.backends.sql.storage import SQLStorage

    __version__: str

_LAZY = {
    # backends (drivers load on first use)
    "SQLRepo": "sessiontree.backends.sql.repo",
    "SQLStorage": "sessiontree.backends.sql.storage",
    "JSONLRepo": "sessiontree.backends.jsonl.repo",
    "JSONLStorage": "sessiontree.backends.jsonl.storage",
    # compaction and summarisers (LLM SDKs load on first use)
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
    "to_anthropic": "sessiontree.wire",
    "to_openai_chat": "sessiontree.wire",
    "AnthropicSummarizer": "sessiontree.summarizers.anthropic",
    "CompactionSettings": "sessiontree.compaction",
    "ExtractiveSummarizer": "sessiontree.summarizers.extractive",
    "OpenAISummarizer": "sessiontree.summarizers.openai",
    "Summarizer": "sessiontree.summarizers.base",
    "SummaryResult": "sessiontree.summarizers.base",
    "compact": "sessiontree.compaction",
    "estimate_context_tokens": "sessiontree.compaction",
    "estimate_tokens": "sessiontree.compaction",
    "prepare_compaction": "sessiontree.compaction",
    "should_compact": "sessiontree.compaction",
    # interoperability
    "ImportReport": "sessiontree.interop",
    "export_pi_session": "sessiontree.interop",
    "import_session": "sessiontree.interop",
    # wire formats
    "from_openai_responses": "sessiontree.wire",
    "to_openai_responses": "sessiontree.wire",
}


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
    if name == "__version__":  # read on first use: importing the metadata reader costs time
        return _installed_version()
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiontree' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "ActiveToolsChangeEntry",
    "AgentEvent",
    "AgentHarness",
    "AgentHarnessError",
    "AgentMessage",
    "AnthropicModel",
    "AnthropicSummarizer",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactionDetails",
    "CompactionEntry",
    "CompactionError",
    "CompactionSettings",
    "CompactionSummaryMessage",
    "ContextHarness",
    "CorruptSessionError",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "DuplicateEntryError",
    "Entry",
    "EntryCursor",
    "EntryNotFoundError",
    "ExtractiveSummarizer",
    "ImageContent",
    "ImportReport",
    "InvalidArgumentError",
    "InvalidEntryError",
    "InvalidMetadataError",
    "InvalidSessionIdError",
    "JSONLRepo",
    "JSONLStorage",
    "LabelEntry",
    "LeafEntry",
    "LeafMovedError",
    "MemoryRepo",
    "MemoryStorage",
    "MessageEntry",
    "MissingExtraError",
    "Model",
    "ModelChangeEntry",
    "ModelError",
    "ModelRef",
    "ModelRequest",
    "OpaqueEntry",
    "OpenAIChatModel",
    "OpenAISummarizer",
    "Prices",
    "RetryPolicy",
    "SQLRepo",
    "SQLStorage",
    "SearchHit",
    "Session",
    "SessionContext",
    "SessionExistsError",
    "SessionInfo",
    "SessionInfoEntry",
    "SessionMetadata",
    "SessionNotFoundError",
    "SessionRepo",
    "SessionStats",
    "SessionStorage",
    "SessionTreeError",
    "StorageError",
    "StorageTimeoutError",
    "Summarizer",
    "SummaryError",
    "SummaryResult",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "Tool",
    "ToolCall",
    "ToolResultMessage",
    "TreeNode",
    "Usage",
    "UserMessage",
    "build_context_from_path",
    "compact",
    "default_transform",
    "dump_entry",
    "estimate_context_tokens",
    "estimate_tokens",
    "export_pi_session",
    "find_tool_pair_problems",
    "from_anthropic",
    "from_openai_chat",
    "from_openai_responses",
    "import_session",
    "open_repo",
    "parse_entry",
    "prepare_compaction",
    "repair_tool_pairs",
    "resolve_model",
    "should_compact",
    "to_anthropic",
    "to_llm_messages",
    "to_openai_chat",
    "to_openai_responses",
    "tool",
]

"""Cheap meta-tests: the public API list, the error tree, docstrings."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys

import sessiontree
from sessiontree import errors


def test_all_is_sorted_and_resolves() -> None:
    names = sessiontree.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(sessiontree, name) is not None, name


def test_spec_section_9_names_are_exported() -> None:
    spec_names = {
        "open_repo",
        "MemoryRepo",
        "JSONLRepo",
        "SQLRepo",
        "MemoryStorage",
        "JSONLStorage",
        "SQLStorage",
        "Session",
        "SessionContext",
        "ModelRef",
        "SessionInfo",
        "SessionMetadata",
        "parse_entry",
        "dump_entry",
        "compact",
        "prepare_compaction",
        "CompactionSettings",
        "estimate_tokens",
        "estimate_context_tokens",
        "should_compact",
        "Summarizer",
        "SummaryResult",
        "ExtractiveSummarizer",
        "OpenAISummarizer",
        "AnthropicSummarizer",
        "to_llm_messages",
        "AgentHarness",
        "import_session",
        "export_pi_session",
        "MessageEntry",
        "ModelChangeEntry",
        "ThinkingLevelChangeEntry",
        "ActiveToolsChangeEntry",
        "CompactionEntry",
        "BranchSummaryEntry",
        "CustomEntry",
        "CustomMessageEntry",
        "LabelEntry",
        "LeafEntry",
        "SessionInfoEntry",
        "SessionTreeError",
        "SessionNotFoundError",
        "EntryNotFoundError",
        "DuplicateEntryError",
        "InvalidEntryError",
        "CorruptSessionError",
        "CompactionError",
        "SummaryError",
        "AgentHarnessError",
    }
    assert spec_names <= set(sessiontree.__all__)


def test_error_tree_docstring_matches_classes() -> None:
    doc = errors.__doc__ or ""
    drawn = dict(re.findall(r"[├└]── (\w+) \((\w+)\)", doc))
    classes = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls)
        and issubclass(cls, errors.SessionTreeError)
        and cls is not errors.SessionTreeError
    }
    assert set(drawn) == set(classes)
    import builtins

    for name, base in drawn.items():
        assert issubclass(classes[name], getattr(builtins, base)), name


def test_public_objects_have_docstrings() -> None:
    missing = []
    for name in sessiontree.__all__:
        obj = getattr(sessiontree, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not inspect.isfunction(member):
                    continue
                if not inspect.getdoc(member):
                    missing.append(f"{name}.{attr}")
    assert missing == []


def test_import_loads_no_driver_or_sdk() -> None:
    code = (
        "import sys, sessiontree\n"
        "bad = [m for m in ('psycopg', 'psycopg_pool', 'openai', 'anthropic', 'sqlite3') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_lazy_modules_exist() -> None:
    for name, module in sessiontree._LAZY.items():
        assert hasattr(importlib.import_module(module), name), name


def test_the_harness_models_and_wire_load_no_sdk_until_a_model_is_made() -> None:
    code = (
        "import sys\n"
        "from sessiontree import AgentHarness, tool, resolve_model, to_openai_chat, to_anthropic\n"
        "import sessiontree.models, sessiontree.harness, sessiontree.wire, sessiontree.cli.chat\n"
        "print(','.join(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
        "resolve_model('anthropic/m', api_key='k')\n"
        "print(','.join(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["", "anthropic"]

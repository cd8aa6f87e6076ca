"""Cheap meta-tests: the public API list, the error tree, docstrings."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys

import pytest

import sessiontree
from sessiontree import errors


def test_all_is_sorted_and_resolves() -> None:
    names = sessiontree.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(sessiontree, name) is not None, name


def test_the_top_tier_is_open_repo_session_entries_messages_and_errors() -> None:
    from sessiontree import entries, messages

    assert len(sessiontree.__all__) <= 40
    for name in sessiontree.__all__:
        obj = getattr(sessiontree, name)
        assert (
            name in ("open_repo", "SessionRepo", "Session")
            or (inspect.isclass(obj) and issubclass(obj, errors.SessionTreeError))
            or getattr(obj, "__module__", None) in (entries.__name__, messages.__name__)
            or name in ("Entry", "AgentMessage")  # the unions of entries.py and messages.py
        ), name
    assert dir(sessiontree) == sorted([*sessiontree.__all__, "__version__"])
    assert not set(sessiontree.MOVED) & set(sessiontree.__all__)


def test_a_moved_name_still_resolves_with_a_warning_naming_its_new_import() -> None:
    for name, module in sessiontree.MOVED.items():
        with pytest.warns(DeprecationWarning, match=rf"from {re.escape(module)} import {name}\b"):
            old = getattr(sessiontree, name)
        assert old is getattr(importlib.import_module(module), name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        sessiontree.NoSuchName  # noqa: B018


def test_spec_section_9_names_are_importable_from_their_tier() -> None:
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
    homes = {name: "sessiontree" for name in sessiontree.__all__} | sessiontree.MOVED
    assert spec_names <= set(homes)
    for name in spec_names:
        assert getattr(importlib.import_module(homes[name]), name) is not None, name


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
    homes = {name: "sessiontree" for name in sessiontree.__all__} | sessiontree.MOVED
    for name, module in homes.items():
        obj = getattr(importlib.import_module(module), name)
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


def test_moved_names_are_in_their_modules_all() -> None:
    for name, module in sessiontree.MOVED.items():
        exported = getattr(importlib.import_module(module), "__all__", None)
        assert exported is None or name in exported, f"{module} does not export {name}"


def test_the_harness_models_and_wire_load_no_sdk_until_a_model_is_made() -> None:
    code = (
        "import sys\n"
        "from sessiontree.harness import AgentHarness, tool\n"
        "from sessiontree.models import resolve_model\n"
        "from sessiontree.wire import to_openai_chat, to_anthropic\n"
        "import sessiontree.models, sessiontree.harness, sessiontree.wire, sessiontree.cli.chat\n"
        "print(','.join(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
        "resolve_model('anthropic/m', api_key='k')\n"
        "print(','.join(m for m in ('openai', 'anthropic') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["", "anthropic"]

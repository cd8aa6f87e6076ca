"""JSONL storage: one pi v3 session file per session.

Modules: :mod:`~sessiontree.storage.jsonl.format` (lines, header, what counts as a whole line),
:mod:`~sessiontree.storage.jsonl.index` (the line index of one file),
:mod:`~sessiontree.storage.jsonl.stats` (listing counts),
:mod:`~sessiontree.storage.jsonl.files` (creating and removing log files),
:mod:`~sessiontree.storage.jsonl.log` (reading and appending whole lines of one file) and
:mod:`~sessiontree.storage.jsonl.storage` (:class:`JSONLStorage`, the design in its docstring).
"""

from sessiontree.storage.jsonl.storage import (
    JSONLStorage,
    check_session_log,
    create_session_file,
    fsync_dir,
    remove_session_log,
)

__all__ = [
    "JSONLStorage",
    "check_session_log",
    "create_session_file",
    "fsync_dir",
    "remove_session_log",
]

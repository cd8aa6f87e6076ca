"""JSONL storage: one pi v3 session file per session.

Modules: :mod:`~sessiontree.backends.jsonl.format` (lines, header, what counts as a whole line),
:mod:`~sessiontree.backends.jsonl.line_index` (the line index of one file),
:mod:`~sessiontree.backends.jsonl.stats` (listing counts),
:mod:`~sessiontree.backends.jsonl.files` (creating and removing log files),
:mod:`~sessiontree.backends.jsonl.log` (reading and appending whole lines of one file) and
:mod:`~sessiontree.backends.jsonl.storage` (:class:`JSONLStorage`, the design in its docstring).
"""

from sessiontree.backends.jsonl.storage import (
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

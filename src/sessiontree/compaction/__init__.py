"""Compaction: token estimates, cut points, planning (pure) and applying (docs/compaction.md).

A long session is kept inside its model's context window by replacing older messages with a
summary. Two halves:

* :func:`prepare_compaction` is **pure**: from the root → leaf path it computes what the
  model currently sees (the *transformed* path, docs/context.md step 2), walks back from the leaf
  summing token estimates until ``keep_recent_tokens`` are kept, moves the cut to the nearest
  valid cut point toward the root (never a ``toolResult``), and lists what goes to the
  summariser: everything that leaves the context, including the entries the previous
  compaction kept and a previous ``retainedTail``, so nothing kept before can vanish from
  both the summary and the context. A cut inside a turn is a
  *split turn*: the turn's early part is summarised separately (``purpose="turn_prefix"``).
* :func:`compact` runs the summariser and appends **one** ``compaction`` entry under the
  current leaf. A summariser failure raises :class:`CompactionError` and changes nothing:
  the summary is made before anything is written.

Modules: :mod:`~sessiontree.compaction.tokens` (estimates, settings, :func:`should_compact`),
:mod:`~sessiontree.compaction.plan` (:func:`prepare_compaction`, pure) and
:mod:`~sessiontree.compaction.compact` (:func:`compact`, applies); every public name is
re-exported here.
"""

from sessiontree.compaction.compact import CompactionMode, check_mode, compact
from sessiontree.compaction.plan import CompactionPreparation, prepare_compaction
from sessiontree.compaction.tokens import (
    IMAGE_TOKENS,
    CompactionSettings,
    TokenCounter,
    coerce_settings,
    estimate_context_tokens,
    estimate_tokens,
    should_compact,
)
from sessiontree.summarizers.base import TURN_PREFIX_SEPARATOR, file_operations

__all__ = [
    "IMAGE_TOKENS",
    "TURN_PREFIX_SEPARATOR",
    "CompactionMode",
    "CompactionPreparation",
    "CompactionSettings",
    "TokenCounter",
    "check_mode",
    "coerce_settings",
    "compact",
    "estimate_context_tokens",
    "estimate_tokens",
    "file_operations",
    "prepare_compaction",
    "should_compact",
]

"""Navigation with a summary of the branch that is left (docs/branching.md).

``Session.navigate(target, summarize=True)`` lands here. The abandoned branch — the entries
from just below the common ancestor of the old leaf and the target down to the old leaf — is
summarised (``purpose="branch"``) and a ``branch_summary`` entry is appended with
``parentId`` = the target (so it is on the new branch) and ``fromId`` = the old leaf (so the
branch it stands for can be found); it becomes the leaf, so
the next turn sees what was tried on the other branch. The summary is made before anything is
written: when it fails, nothing changes and :class:`~sessiontree.errors.SummaryError` is raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessiontree.context import default_transform, project_entries
from sessiontree.entries import BranchSummaryEntry, Entry, is_path_entry
from sessiontree.errors import EntryNotFoundError, InvalidEntryError, SummaryError
from sessiontree.messages import AgentMessage
from sessiontree.storage.base import SessionStorage
from sessiontree.summarizers.base import Summarizer, check_result, file_operations
from sessiontree.summarizers.extractive import ExtractiveSummarizer

__all__ = ["abandoned_entries", "branch_messages", "navigate_with_summary"]


def abandoned_entries(old_path: Sequence[Entry], target_path: Sequence[Entry]) -> list[Entry]:
    """The entries of ``old_path`` below its common ancestor with ``target_path`` (root → leaf).

    Empty when the target is the old leaf or below it. Pure.
    """
    common = 0
    for a, b in zip(old_path, target_path, strict=False):
        if a.id != b.id:
            break
        common += 1
    return list(old_path[common:])


def branch_messages(old_path: Sequence[Entry], abandoned: Sequence[Entry]) -> list[AgentMessage]:
    """What the model saw of the abandoned entries: the old path is transformed as for context
    building (a compaction inside the abandoned part contributes its summary and kept
    entries, not the messages it replaced), then restricted to the abandoned entries. Pure."""
    ids = {e.id for e in abandoned}
    return project_entries([e for e in default_transform(old_path) if e.id in ids])


async def navigate_with_summary(
    storage: SessionStorage,
    target_id: str | None,
    *,
    summarizer: Summarizer | None,
    instructions: str | None,
) -> str | None:
    """Move the leaf to ``target_id``, leaving a summary of the abandoned branch (docs/branching.md).

    Args:
        storage: the storage of the session to navigate.
        target_id: a path entry of the session; ``None`` starts a new root (everything on the
            current branch is abandoned and the summary becomes a root).
        summarizer: defaults to
            :class:`~sessiontree.summarizers.extractive.ExtractiveSummarizer`.
        instructions: passed to the summariser.

    Returns:
        The id of the appended ``branch_summary`` (now the leaf), or ``None`` when nothing was
        abandoned — the target is the old leaf or below it, or the abandoned entries carry no
        message — in which case the leaf is simply moved.

    Raises:
        EntryNotFoundError: ``target_id`` names no entry.
        InvalidEntryError: ``target_id`` names a bookkeeping entry.
        SummaryError: the summariser failed or returned no text; nothing was changed.
        LeafMovedError: another writer moved the leaf while the branch was being read or
            summarised; nothing was changed (navigate again).
    """
    if target_id is not None:
        target = await storage.get_entry(target_id)
        if target is None:
            raise EntryNotFoundError(
                "navigation target names no entry", session_id=storage.id, entry_id=target_id
            )
        if not is_path_entry(target):
            raise InvalidEntryError(
                f"navigation target is a {target.type} entry, not a path entry",
                session_id=storage.id,
                entry_id=target_id,
            )
    old_leaf = await storage.get_leaf_id()
    if old_leaf == target_id:
        return None
    old_path = await storage.get_branch(old_leaf) if old_leaf is not None else []
    target_path = await storage.get_branch(target_id) if target_id is not None else []
    abandoned = abandoned_entries(old_path, target_path)
    messages = branch_messages(old_path, abandoned) if abandoned else []
    if old_leaf is None or not messages:
        # the move was decided on this read of the leaf: written only while it still holds
        await storage.set_leaf_id_if(target_id, old_leaf)
        return None
    if summarizer is None:
        summarizer = ExtractiveSummarizer()
    try:
        result = await summarizer.summarize(
            messages, previous_summary=None, instructions=instructions, purpose="branch"
        )
    except SummaryError:
        raise
    except Exception as exc:
        raise SummaryError(
            f"the summariser failed on the branch left at {old_leaf!r}: {exc}",
            session_id=storage.id,
            entry_id=old_leaf,
        ) from exc
    result = check_result(
        result, what="the abandoned branch", session_id=storage.id, entry_id=old_leaf
    )
    read_files, modified_files = file_operations(messages)
    fields: dict[str, Any] = {
        "parent_id": target_id,
        "summary": result.text.strip(),
        "from_id": old_leaf,
        "details": {"readFiles": read_files, "modifiedFiles": modified_files},
    }
    if result.usage is not None:
        fields["usage"] = result.usage
    entry = BranchSummaryEntry(**fields)
    # the summary is of the branch read above: written only while the leaf is still its end
    return (await storage.append_entry_if(entry, old_leaf)).id

"""A handed-off file's link back to the session it came from (docs/interop.md, "Hand a session
to another agent").

When a session S is handed to an agent (:func:`sessiontree.interop.handoff.handoff`), two
things record where the file came from:

* **in the file**, a pointer ``handedOffFrom: {"session": S, "entry": E}`` (E: S's leaf at the
  hand-off), in a place the agent ignores and never rewrites: the first line of a Claude Code
  transcript, the ``session_meta`` payload of a Codex rollout, the header of a pi file. Each
  importer lifts it into the metadata key :data:`POINTER_KEY`.
* **in the store**, a :class:`HandoffRecord` in S: a ``leaf`` entry that moves the leaf to
  where it already is (it changes nothing in the tree, like a sync position) and carries,
  under :data:`RECORD_KEY`, the agent, the file, its agent-form session id, E, and the map from
  the ids an import gives the file's records to S's entry ids.

An import of the file (``sync`` or ``import``) that finds the pointer, the session S, and in S
the record of that file's session id, continues S with what the agent added
(:func:`added_entries`): the records of the handed-off history are matched, never imported
again, and the agent's turns hang under the entries they continue.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontree.entries import CompactionEntry, Entry, LeafEntry, MessageEntry
from sessiontree.ids import new_id
from sessiontree.messages import message_text

__all__ = [
    "POINTER_KEY",
    "RECORD_KEY",
    "HandoffRecord",
    "added_entries",
    "align_ids",
    "pointer",
    "pointer_of",
    "record_entry",
    "record_of",
]

POINTER_KEY = "handedOffFrom"
"""The key of the pointer back to the session (in the file, and in the imported metadata)."""

RECORD_KEY = "handoff"
"""The key of a ``leaf`` entry's extra data that holds a :class:`HandoffRecord`."""

_REFS = ("parent_id", "target_id", "from_id", "first_kept_entry_id")
"""The fields by which an entry names another one."""


def pointer(session_id: str, entry_id: str) -> dict[str, str]:
    """The pointer written into a handed-off file: the session and its leaf at the hand-off."""
    return {"session": session_id, "entry": entry_id}


def pointer_of(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(session, entry)`` of the pointer in an imported file's metadata (camelCase dict);
    ``None`` when there is none or it is malformed."""
    value = metadata.get(POINTER_KEY)
    if not isinstance(value, Mapping):
        return None
    session, entry = value.get("session"), value.get("entry")
    if isinstance(session, str) and session and isinstance(entry, str) and entry:
        return session, entry
    return None


@dataclass(frozen=True)
class HandoffRecord:
    """A session handed to an agent, as its source session stores it."""

    agent: str
    """The agent it was handed to (``claude-code``, ``codex``, ``pi``): the import format."""
    session_id: str
    """The file's session id, in the agent's form (what an import of the file reads)."""
    path: str
    """The file written, an absolute path."""
    entry_id: str
    """The source session's leaf at the hand-off: what the agent's turns continue."""
    ids: dict[str, str] = field(default_factory=dict)
    """The id an import gives each record of the file as written → the source session's entry
    it stands for. Records an import gives the source's own ids (pi keeps them) are left out."""

    def to_json(self) -> dict[str, Any]:
        """The camelCase JSON object stored under :data:`RECORD_KEY`."""
        return {
            "agent": self.agent,
            "sessionId": self.session_id,
            "path": self.path,
            "entryId": self.entry_id,
            "ids": dict(self.ids),
        }

    @classmethod
    def from_json(cls, value: object) -> HandoffRecord | None:
        """The record a stored JSON object holds; ``None`` when it is not one."""
        if not isinstance(value, dict):
            return None
        fields = [value.get(k) for k in ("agent", "sessionId", "path", "entryId")]
        ids = value.get("ids", {})
        if not all(isinstance(f, str) and f for f in fields) or not isinstance(ids, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in ids.items()):
            return None
        agent, session_id, path, entry_id = (str(f) for f in fields)
        return cls(agent, session_id, path, entry_id, dict(ids))


def record_entry(record: HandoffRecord) -> LeafEntry:
    """The ``leaf`` entry that stores ``record`` in the source session: it moves the leaf to
    :attr:`HandoffRecord.entry_id`, where it is, so the tree is unchanged."""
    return LeafEntry.model_validate(
        {
            "type": "leaf",
            "id": new_id(),
            "parentId": record.entry_id,
            "targetId": record.entry_id,
            RECORD_KEY: record.to_json(),
        }
    )


def record_of(entry: Entry) -> HandoffRecord | None:
    """The handoff record an entry stores; ``None`` for any other entry."""
    if entry.type != "leaf":
        return None
    return HandoffRecord.from_json((entry.model_extra or {}).get(RECORD_KEY))


def _key(entry: Entry) -> tuple[str, str] | None:
    """What an entry is compared by when the written file is aligned with the session."""
    if isinstance(entry, MessageEntry):
        return entry.message.role, " ".join(message_text(entry.message).split())
    if isinstance(entry, CompactionEntry):
        return "compaction", ""
    return None


def align_ids(
    written: Sequence[Entry], written_leaf: str | None, source: Sequence[Entry], leaf: str
) -> dict[str, str]:
    """The map of a :class:`HandoffRecord`: each entry of ``written`` (what an import of the
    written file gives) → the entry of the source path ``source`` (root → ``leaf``) it stands for.

    Messages are matched in order by role and text, the compaction by its kind; the file's
    leaf ``written_leaf`` stands for ``leaf`` (what the agent continues); any other record
    (one the format adds, a reply the format joined with the next) stands for the nearest
    matched record before it in the file, else for ``leaf``. Ids ``written`` shares with the
    source (pi keeps them) are left out.
    """
    own = {e.id for e in source}
    keyed = [(e.id, _key(e)) for e in source if _key(e) is not None]
    out: dict[str, str] = {}
    at = 0
    last = leaf
    for entry in written:
        if entry.id in own:
            last = entry.id
            continue
        key = _key(entry)
        found = None
        if key is not None:
            found = next((n for n in range(at, len(keyed)) if keyed[n][1] == key), None)
        if found is not None:
            last = keyed[found][0]
            at = found + 1
        out[entry.id] = last
    if written_leaf is not None and written_leaf not in own:
        out[written_leaf] = leaf
    return out


def added_entries(
    entries: Sequence[Entry], record: HandoffRecord, known: Collection[str]
) -> list[Entry]:
    """The entries of an imported file that its agent added after the hand-off, in order,
    each reference to a handed-off record replaced by the source entry it stands for.

    ``entries`` is what an import of the file gives (finalized); an entry whose id is in
    :attr:`HandoffRecord.ids` or in ``known`` (the source session's entry ids) is part of the
    handed-off history and left out, and so is a ``leaf`` entry that moves the leaf onto it
    (an import adds one to end on the file's last message, which the source already is past).
    """
    out: list[Entry] = []
    for entry in entries:
        if entry.id in record.ids or entry.id in known:
            continue
        target = entry.target_id if isinstance(entry, LeafEntry) else None
        if target is not None and (target in record.ids or target in known):
            continue
        update = {
            name: record.ids[ref]
            for name in _REFS
            if isinstance(ref := getattr(entry, name, None), str) and ref in record.ids
        }
        out.append(entry.model_copy(update=update) if update else entry)
    return out

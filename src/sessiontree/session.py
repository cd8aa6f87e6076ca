"""``Session``: the thin shell an agent talks to, over a :class:`SessionStorage` (docs/api.md).

It builds entries, hangs them under the current leaf (atomically, in the storage), and runs
the pure core (:mod:`sessiontree.tree`, :mod:`sessiontree.context`) over what storage returns.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NoReturn, cast

from pydantic import ValidationError

from sessiontree._args import check_bool, check_count, check_entry_id, check_text, check_types
from sessiontree.branching import navigate_with_summary
from sessiontree.context import (
    EntryProjector,
    SessionContext,
    Transform,
    build_context_from_path,
    default_transform,
)
from sessiontree.drafts import Draft, ToolRun, interrupted_message, read_slot
from sessiontree.entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionDetails,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    ThinkingLevel,
    ThinkingLevelChangeEntry,
    is_path_entry,
    parse_entry,
    validation_problem,
)
from sessiontree.errors import (
    EntryNotFoundError,
    InvalidArgumentError,
    InvalidEntryError,
    StorageError,
)
from sessiontree.messages import AgentMessage, AssistantMessage, ContentBlock, Usage
from sessiontree.metadata import SessionMetadata, SessionStats
from sessiontree.storage.base import ContextBranchReader, DraftSlot, EntryCursor, SessionStorage
from sessiontree.storage.lease import Lease, LeaseRecord, LeaseSlot
from sessiontree.stored import Prepared, PreparedMessage, prepare_entry, prepare_message
from sessiontree.summarizers.base import Summarizer
from sessiontree.tree import ForkPosition, TreeNode, build_tree
from sessiontree.wire import provider_shape

__all__ = ["Session", "stats_of"]


def stats_of(entries: Iterable[Entry]) -> SessionStats:
    """The counts, tokens and cost of :meth:`Session.get_stats` over ``entries`` (every entry
    of a session, in append order); ``leaf_id`` is left ``None``. Pure (no I/O), so it can
    run in a worker thread.
    """
    stats = SessionStats()
    for entry in entries:
        stats.entry_count += 1
        stats.entries_by_type[entry.type] = stats.entries_by_type.get(entry.type, 0) + 1
        if entry.parent_id is None and is_path_entry(entry):
            stats.roots += 1
        usage: Usage | None = None
        if isinstance(entry, MessageEntry):
            msg = entry.message
            stats.messages_by_role[msg.role] = stats.messages_by_role.get(msg.role, 0) + 1
            if isinstance(msg, AssistantMessage):
                usage = msg.usage
                stats.tool_calls += len(msg.tool_calls())
        elif isinstance(entry, CompactionEntry):
            stats.compactions += 1
            usage = entry.usage
        elif isinstance(entry, BranchSummaryEntry):
            stats.branch_summaries += 1
            usage = entry.usage
        if usage is not None:
            stats.input_tokens += usage.input
            stats.output_tokens += usage.output
            stats.cache_read_tokens += usage.cache_read
            stats.cache_write_tokens += usage.cache_write
            if usage.cost is not None:
                stats.cost += usage.cost.total
    return stats


def _ttl_ms(ttl_s: float, session_id: str) -> int:
    """``ttl_s`` seconds in whole ms (at least 1).

    Raises:
        InvalidArgumentError: not a positive number.
    """
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float) or not ttl_s > 0:
        raise InvalidArgumentError(
            f"ttl_s must be a positive number of seconds, not {ttl_s!r}", session_id=session_id
        )
    return max(1, round(ttl_s * 1000))


def _warn_missing(method: str, entry_id: str, session_id: str, instead: str) -> None:
    """The deprecation of ``None`` from ``Session.<method>`` for a missing entry."""
    warnings.warn(
        f"Session.{method}({entry_id!r}) found no such entry in session {session_id!r}: it "
        f"returns None for this release and raises EntryNotFoundError in the next; use "
        f"{instead}",
        DeprecationWarning,
        stacklevel=3,
    )


class Session:
    """One conversation tree. Every method is async; ``id`` and ``storage`` are attributes.

    The get/find rule (docs/api.md): a ``get_*`` method that names an entry raises
    :class:`EntryNotFoundError` when there is none, and ``None`` from it means the value is
    unset (no label, no name, no leaf); :meth:`find_entry` returns ``None`` instead. For one
    release ``get_entry`` and ``get_label`` still return ``None`` for a missing entry, with a
    :class:`DeprecationWarning`.
    """

    def __init__(self, storage: SessionStorage) -> None:
        self.storage = storage
        self.id = storage.id

    def __repr__(self) -> str:
        return f"Session({self.id!r}, storage={type(self.storage).__name__})"

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ reading

    async def get_metadata(self) -> SessionMetadata:
        """The session metadata (immutable after creation)."""
        return self.storage.metadata

    async def get_leaf_id(self) -> str | None:
        """The current leaf id, ``None`` for an empty session (docs/tree.md)."""
        return await self.storage.get_leaf_id()

    async def find_entry(self, entry_id: str) -> Entry | None:
        """The entry with this id, ``None`` when there is none.

        Raises:
            InvalidArgumentError: ``entry_id`` is not a non-empty str.
        """
        check_entry_id(entry_id, "entry_id")
        return await self.storage.get_entry(entry_id)

    async def get_entry(self, entry_id: str) -> Entry | None:
        """The entry with this id.

        A missing entry gives ``None`` with a :class:`DeprecationWarning` for one release,
        then :class:`EntryNotFoundError`; :meth:`find_entry` is the form that returns ``None``.

        Raises:
            InvalidArgumentError: ``entry_id`` is not a non-empty str.
        """
        found = await self.find_entry(entry_id)
        if found is None:
            _warn_missing("get_entry", entry_id, self.id, "find_entry")
        return found

    async def get_entries(
        self,
        *,
        after: str | None = None,
        limit: int | None = None,
        types: Collection[str] | None = None,
        reverse: bool = False,
    ) -> list[Entry]:
        """Entries in append order (newest first with ``reverse``), paged with ``after``/``limit``.

        Args:
            after: start after this entry id (in the direction of travel).
            limit: at most this many entries (an int >= 0; ``None`` = all).
            types: only entries of these types, a set of type names such as
                ``{"message"}`` (a bare str is refused).
            reverse: newest first.

        Raises:
            EntryNotFoundError: ``after`` names no entry.
            InvalidArgumentError: an argument of the wrong type or out of range.
        """
        cursor = EntryCursor(after, limit, check_types(types), reverse)
        return await self.storage.get_entries(cursor)

    async def get_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """The path root → leaf without bookkeeping entries; ``[]`` when the leaf is ``None``.

        Raises:
            EntryNotFoundError: ``leaf_id`` names no entry.
            CorruptSessionError: a cycle.
            InvalidArgumentError: ``leaf_id`` is not an entry id or ``None``.
        """
        check_entry_id(leaf_id, "leaf_id", optional=True)
        return await self.storage.get_branch(leaf_id)

    async def get_tree(self) -> list[TreeNode]:
        """Root nodes ``{entry, children, label}`` of every path entry (docs/tree.md). Reads every entry.

        A draft reply (:meth:`get_draft`) is a node too, under its parent, with
        ``draft=True`` and the interrupted message it would be settled as
        (:func:`~sessiontree.drafts.interrupted_message`).
        """
        entries = await self.storage.get_entries()
        draft = await self.get_draft()
        if draft is None or any(e.id == draft.entry_id for e in entries):
            return build_tree(entries, session_id=self.id)
        known = draft.parent_id is None or any(e.id == draft.parent_id for e in entries)
        stand_in = MessageEntry(
            id=draft.entry_id,
            parent_id=draft.parent_id if known else None,
            message=interrupted_message(draft),
        )
        return build_tree([*entries, stand_in], session_id=self.id, draft_id=draft.entry_id)

    # ------------------------------------------------------------------ the draft reply

    async def get_draft(self) -> Draft | None:
        """The session's draft reply (docs/harness.md "Durable streaming"): the part of a
        reply saved while it streams, by a harness now running or by one whose process died.
        ``None`` when there is none or the storage has no draft slot
        (:class:`~sessiontree.storage.base.DraftSlot`).

        Raises:
            CorruptSessionError: the slot holds something that is not a draft.
        """
        held = await self._read_slot()
        return held if isinstance(held, Draft) else None

    async def _read_slot(self) -> Draft | ToolRun | None:
        if not isinstance(self.storage, DraftSlot):
            return None
        body = await self.storage.get_draft()
        return None if body is None else read_slot(body, session_id=self.id)

    async def get_tool_run(self) -> ToolRun | None:
        """The tool calls a harness recorded as started and whose results are not all stored
        yet (docs/harness.md "Tool calls across a crash"); ``None`` when there is none, the
        slot holds a draft reply, or the storage has no draft slot.

        Raises:
            CorruptSessionError: the slot holds something that is neither.
        """
        held = await self._read_slot()
        return held if isinstance(held, ToolRun) else None

    async def put_tool_run(self, run: ToolRun | None) -> bool:
        """Record the tool calls that have started (``None`` clears the record) in the draft
        slot, replacing what it held; ``False`` when the storage has no draft slot. Adds no
        entry.

        Raises:
            SessionNotFoundError: the session was deleted.
            StorageError: it cannot be written.
        """
        return await self._write_slot(run)

    async def put_draft(self, draft: Draft | None) -> bool:
        """Replace the draft reply (``None`` clears it); ``False`` when the storage has no
        draft slot (nothing is saved). Adds no entry.

        Raises:
            SessionNotFoundError: the session was deleted.
            StorageError: it cannot be written.
        """
        return await self._write_slot(draft)

    async def _write_slot(self, held: Draft | ToolRun | None) -> bool:
        if not isinstance(self.storage, DraftSlot):
            return False
        await self.storage.put_draft(None if held is None else held.to_json())
        return True

    async def settle_draft(self) -> str | None:
        """Store a leftover draft reply as an interrupted assistant message and clear it;
        returns the message entry's id, ``None`` when there was no draft.

        The entry gets the draft's ``entryId`` and hangs under its ``parentId`` (the leaf
        when the reply started; a root if that entry is gone); its message has
        ``stopReason: "aborted"`` and ``errorMessage``
        :data:`~sessiontree.drafts.INTERRUPTED`, so no model is sent it as if complete.
        The leaf stays where it is when something else moved it meanwhile. Idempotent: a
        draft whose entry is stored already (its writer died between storing the reply and
        clearing the draft) is only cleared. Only call it when no harness is streaming
        into the session (:class:`~sessiontree.harness.AgentHarness` calls it at the
        start of each prompt).

        Raises:
            CorruptSessionError: the slot holds something that is not a draft.
            StorageError: it cannot be written.
        """
        draft = await self.get_draft()
        if draft is None:
            return None
        if await self.storage.get_entry(draft.entry_id) is None:
            leaf = await self.storage.get_leaf_id()
            parent = draft.parent_id
            if parent is not None and await self.storage.get_entry(parent) is None:
                parent = leaf
            entry = MessageEntry(
                id=draft.entry_id, parent_id=parent, message=interrupted_message(draft)
            )
            await self.storage.append_entry(entry)
            if leaf != parent:
                await self.storage.set_leaf_id(leaf)
        await self.put_draft(None)
        return draft.entry_id

    # ------------------------------------------------------------------ the writer lease

    def _leases(self) -> LeaseSlot:
        if not isinstance(self.storage, LeaseSlot):
            raise StorageError(
                f"{type(self.storage).__name__} keeps no writer lease", session_id=self.id
            )
        return self.storage

    async def acquire_lease(self, owner: str, *, ttl_s: float) -> Lease:
        """Take the session's writer lease for ``ttl_s`` seconds (docs/harness.md "One writer
        per session"): free, released or expired, it is granted with a fence one higher
        than the last; held by ``owner`` already, its expiry moves on. Writes are checked
        against it only when made under it
        (:func:`sessiontree.harness.lease.hold_lease` does both).

        Raises:
            SessionBusyError: another owner holds an unexpired lease; nothing changed.
            InvalidArgumentError: ``owner`` empty, or ``ttl_s`` not a positive number.
            StorageError: the storage keeps no lease.
        """
        check_text(owner, "owner")
        if not owner:
            raise InvalidArgumentError("owner must not be empty", session_id=self.id)
        return await self._leases().acquire_lease(owner, _ttl_ms(ttl_s, self.id))

    async def renew_lease(self, lease: Lease, *, ttl_s: float) -> Lease:
        """Move ``lease``'s expiry to ``ttl_s`` seconds from now; returns the renewed lease.

        Raises:
            LeaseLostError: another writer took the session over (or it was released);
                nothing changed.
        """
        return await self._leases().renew_lease(lease, _ttl_ms(ttl_s, self.id))

    async def release_lease(self, lease: Lease) -> None:
        """Release ``lease`` if it is still the session's (else nothing): another writer may
        take the session at once, with a higher fence."""
        await self._leases().release_lease(lease)

    async def get_lease(self) -> LeaseRecord | None:
        """The session's lease record (owner ``""``: released), ``None`` when it never had
        one or the storage keeps none."""
        if not isinstance(self.storage, LeaseSlot):
            return None
        return await self.storage.get_lease()

    async def get_label(self, entry_id: str) -> str | None:
        """The entry's label, ``None`` when it has none.

        A missing entry gives ``None`` with a :class:`DeprecationWarning` for one release,
        then :class:`EntryNotFoundError`.

        Raises:
            InvalidArgumentError: ``entry_id`` is not a non-empty str.
        """
        check_entry_id(entry_id, "entry_id")
        label = await self.storage.get_label(entry_id)
        if label is None and await self.storage.get_entry(entry_id) is None:
            _warn_missing("get_label", entry_id, self.id, "find_entry first")
        return label

    async def get_name(self) -> str | None:
        """The session name, or ``None``."""
        return await self.storage.get_name()

    async def build_context(
        self,
        leaf_id: str | None = None,
        system_prompt: str | None = None,
        transform: Transform = default_transform,
        entry_projectors: Mapping[str, EntryProjector] | None = None,
        *,
        repair_tool_pairs: bool = True,
    ) -> SessionContext:
        """The context for the next model call (docs/context.md). Cost grows with the path length.

        Raises:
            EntryNotFoundError: ``leaf_id`` names no entry.
            InvalidArgumentError: ``leaf_id`` is not an entry id or ``None``, or
                ``system_prompt`` not a str or ``None``.
        """
        check_entry_id(leaf_id, "leaf_id", optional=True)
        check_text(system_prompt, "system_prompt", optional=True)
        storage = self.storage
        if transform is default_transform and isinstance(storage, ContextBranchReader):
            # only what the default context needs: from the newest compaction's start on
            path = await storage.get_context_branch(leaf_id)
        else:
            path = await storage.get_branch(leaf_id)
        return build_context_from_path(
            path,
            system_prompt=system_prompt,
            metadata_system_prompt=self.storage.metadata.system_prompt,
            transform=transform,
            entry_projectors=entry_projectors,
            repair=repair_tool_pairs,
        )

    async def get_stats(self) -> SessionStats:
        """Counts by entry type and message role, tokens and cost summed from ``usage`` (docs/storage.md).

        Reads every entry.
        """
        stats = stats_of(await self.storage.get_entries())
        stats.leaf_id = await self.storage.get_leaf_id()
        return stats

    # ------------------------------------------------------------------ writing

    async def append_entry(self, entry: Entry | Mapping[str, Any]) -> str:
        """Append an entry exactly as given (its own ``parentId``); returns its id.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: docs/tree.md; nothing changed.
        """
        try:
            stored = await self.storage.append_entry(entry)  # type: ignore[arg-type]
        except InvalidEntryError as exc:
            self._raise_named(exc)
        return stored.id

    async def append_entry_if(
        self, entry: Entry | Mapping[str, Any], expected_leaf: str | None
    ) -> str:
        """:meth:`append_entry`, only while the leaf is still ``expected_leaf``; returns its id.

        For an entry decided from a read of the leaf or the branch (a summary of it): the check
        and the append are one atomic step on every backend
        (:meth:`SessionStorage.append_entry_if`), so another writer's append in between is
        never hidden under it.

        Raises:
            LeafMovedError: the leaf is not ``expected_leaf``; nothing was written.
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: docs/tree.md.
        """
        check_entry_id(expected_leaf, "expected_leaf", optional=True)
        try:
            parsed = parse_entry(entry)
            stored = await self.storage.append_entry_if(parsed, expected_leaf)
        except InvalidEntryError as exc:
            self._raise_named(exc)
        return stored.id

    async def _append(self, entry: Entry | Prepared) -> str:
        try:
            stored = await self.storage.append_entry(entry, at_leaf=True)
        except InvalidEntryError as exc:
            self._raise_named(exc)
        return stored.id

    def _raise_named(self, exc: InvalidEntryError) -> NoReturn:
        """Re-raise, naming this session when the layer that raised it could not; the
        original cause (e.g. the driver's error) stays the ``__cause__``."""
        if exc.session_id is not None:
            raise exc
        raise InvalidEntryError(str(exc), session_id=self.id) from (exc.__cause__ or exc)

    async def append_message(
        self, message: AgentMessage | Mapping[str, Any], *, entry_id: str | None = None
    ) -> str:
        """Append a message under the current leaf; it becomes the leaf. Returns the entry id.

        A message without ``timestamp`` gets the current time (Unix ms). ``entry_id``: the
        new entry's id (a draft's ``entryId``); default a new one.

        Raises:
            InvalidEntryError: the message does not validate, or it is shaped like a
                provider's wire message (``role: "tool"`` or ``"system"``, ``tool_calls``,
                ``tool_use``/``tool_result`` blocks): the error names the converter
                (:mod:`sessiontree.wire`) that turns it into AgentMessages.
        """
        try:
            prepared = prepare_message(message)
        except InvalidEntryError as exc:  # it would not read back
            self._raise_named(exc)
        except ValueError as exc:  # pydantic's ValidationError included
            detail = validation_problem(exc) if isinstance(exc, ValidationError) else str(exc)
            raise InvalidEntryError(f"invalid message: {detail}", session_id=self.id) from exc
        if entry_id is not None:
            check_entry_id(entry_id, "entry_id")
            if type(prepared) is PreparedMessage:
                prepared = dataclasses.replace(prepared, id=entry_id)
            else:
                prepared = prepare_entry(prepared.entry.model_copy(update={"id": entry_id}))
        checked = (
            prepared.message
            if type(prepared) is PreparedMessage
            else cast("MessageEntry", prepared.entry).message
        )
        converter = provider_shape(checked)
        if converter is not None:
            raise InvalidEntryError(
                "this is a provider's wire message, not an AgentMessage; convert it with "
                f"sessiontree.{converter}(...) first (stored as it is, it would be left out "
                "of every context)",
                session_id=self.id,
            )
        return await self._append(prepared)

    async def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model switch (derived state only). Returns the entry id."""
        return await self._append(
            self._build(ModelChangeEntry, provider=provider, model_id=model_id)
        )

    async def append_thinking_level_change(self, level: ThinkingLevel) -> str:
        """Record a thinking-level change. Returns the entry id.

        Raises:
            InvalidEntryError: ``level`` is not one of off/minimal/low/medium/high/xhigh.
        """
        return await self._append(self._build(ThinkingLevelChangeEntry, thinking_level=level))

    async def append_active_tools_change(self, names: list[str]) -> str:
        """Record the set of tools offered to the model. Returns the entry id."""
        return await self._append(self._build(ActiveToolsChangeEntry, active_tool_names=names))

    async def append_compaction(
        self,
        summary: str,
        tokens_before: int,
        *,
        first_kept_entry_id: str | None = None,
        details: CompactionDetails | Mapping[str, Any] | None = None,
        usage: Usage | Mapping[str, Any] | None = None,
        retained_tail: Sequence[AgentMessage | Mapping[str, Any]] | None = None,
    ) -> str:
        """Append a ``compaction`` entry under the leaf (docs/compaction.md). Returns the entry id.

        Prefer :func:`sessiontree.compaction.compact`, which plans the cut and summarises.

        Raises:
            EntryNotFoundError: ``first_kept_entry_id`` is not on the current branch.
            InvalidArgumentError: ``tokens_before`` is not an int >= 0, ``summary`` not a str,
                or ``first_kept_entry_id`` not an entry id or ``None``.
        """
        check_text(summary, "summary")
        check_count(tokens_before, "tokens_before")
        check_entry_id(first_kept_entry_id, "first_kept_entry_id", optional=True)
        if first_kept_entry_id is not None and await self.find_entry(first_kept_entry_id) is None:
            raise EntryNotFoundError(
                "firstKeptEntryId names no entry", session_id=self.id, entry_id=first_kept_entry_id
            )
        fields: dict[str, Any] = {"summary": summary, "tokens_before": tokens_before}
        if first_kept_entry_id is not None:
            fields["first_kept_entry_id"] = first_kept_entry_id
        if details is not None:
            fields["details"] = details
        if usage is not None:
            fields["usage"] = usage
        if retained_tail is not None:
            fields["retained_tail"] = list(retained_tail)
        return await self._append(self._build(CompactionEntry, **fields))

    async def append_branch_summary(
        self,
        summary: str,
        from_id: str,
        *,
        details: Any = None,
        usage: Usage | Mapping[str, Any] | None = None,
    ) -> str:
        """Append a ``branch_summary`` under the leaf; ``from_id`` = the leaf that was left.

        Raises:
            EntryNotFoundError: ``from_id`` names no entry.
            InvalidArgumentError: ``from_id`` is not an entry id, or ``summary`` not a str.
        """
        check_text(summary, "summary")
        check_entry_id(from_id, "from_id")
        fields: dict[str, Any] = {"summary": summary, "from_id": from_id}
        if details is not None:
            fields["details"] = details
        if usage is not None:
            fields["usage"] = usage
        return await self._append(self._build(BranchSummaryEntry, **fields))

    async def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Append extension data (in the context only through a projector). Returns the id."""
        return await self._append(self._build(CustomEntry, custom_type=custom_type, data=data))

    async def append_custom_message_entry(
        self,
        custom_type: str,
        content: str | list[ContentBlock] | list[Mapping[str, Any]],
        *,
        display: bool = True,
        details: Any = None,
    ) -> str:
        """Append an extension message (projected as a ``custom`` message). Returns the id."""
        fields: dict[str, Any] = {
            "custom_type": custom_type,
            "content": content,
            "display": display,
        }
        if details is not None:
            fields["details"] = details
        return await self._append(self._build(CustomMessageEntry, **fields))

    async def append_label(self, target_id: str, label: str | None) -> str:
        """Label an entry (``None`` or ``""`` clears). Never moves the leaf. Returns the id.

        Raises:
            EntryNotFoundError: ``target_id`` names no entry.
            InvalidArgumentError: ``target_id`` is not an entry id, or ``label`` not a str or
                ``None``.
        """
        check_entry_id(target_id, "target_id")
        check_text(label, "label", optional=True)
        return await self._append(self._build(LabelEntry, target_id=target_id, label=label))

    async def append_session_name(self, name: str) -> str:
        """Name the session. Never moves the leaf. Returns the entry id.

        Raises:
            InvalidArgumentError: ``name`` is not a str.
        """
        check_text(name, "name")
        return await self._append(self._build(SessionInfoEntry, name=name))

    def _build(self, cls: type[Entry], **fields: Any) -> Entry:
        try:
            return cls(**fields)
        except ValueError as exc:  # pydantic's ValidationError included
            detail = validation_problem(exc) if isinstance(exc, ValidationError) else str(exc)
            raise InvalidEntryError(
                f"invalid {cls.__name__}: {detail}", session_id=self.id
            ) from exc

    async def set_leaf_id(self, target_id: str | None) -> None:
        """Move the leaf to a path entry (``None``: the next append starts a new root).

        Appends a ``leaf`` entry, so the move survives a restart (docs/tree.md).

        Raises:
            EntryNotFoundError: unknown id. InvalidEntryError: a bookkeeping entry.
            InvalidArgumentError: ``target_id`` is not an entry id or ``None``.
        """
        check_entry_id(target_id, "target_id", optional=True)
        await self.storage.set_leaf_id(target_id)

    async def set_leaf_id_if(self, target_id: str | None, expected_id: str | None) -> None:
        """Move the leaf to ``target_id`` only if it is still ``expected_id`` (compare-and-set).

        For read-modify-write of the leaf: read the leaf (and what hangs above it), decide
        where it goes, then move it with this; on
        :class:`~sessiontree.errors.LeafMovedError` another writer
        moved it in between, so read again and decide again. The check and the append are
        one atomic step on every backend (:meth:`SessionStorage.set_leaf_id_if`).

        Raises:
            LeafMovedError: the leaf is not ``expected_id``; nothing was written.
            EntryNotFoundError: unknown id. InvalidEntryError: a bookkeeping entry.
            InvalidArgumentError: ``target_id`` or ``expected_id`` is not an entry id or ``None``.
        """
        check_entry_id(target_id, "target_id", optional=True)
        check_entry_id(expected_id, "expected_id", optional=True)
        await self.storage.set_leaf_id_if(target_id, expected_id)

    async def navigate(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        summarizer: Summarizer | None = None,
        instructions: str | None = None,
    ) -> str | None:
        """Move the leaf to ``target_id``; with ``summarize``, summarise the branch left (docs/branching.md).

        Returns the id of the ``branch_summary`` appended, else ``None``. When the leaf is
        already ``target_id`` nothing is written (:meth:`set_leaf_id` always appends).

        Raises:
            EntryNotFoundError / InvalidEntryError: as :meth:`set_leaf_id`.
            SummaryError: the summariser failed; nothing was changed.
            InvalidArgumentError: ``target_id`` is not an entry id or ``None``, or
                ``summarize`` not a bool.
        """
        check_entry_id(target_id, "target_id", optional=True)
        check_bool(summarize, "summarize")
        if not summarize:
            if target_id is None or target_id != await self.get_leaf_id():
                await self.set_leaf_id(target_id)
            return None
        return await navigate_with_summary(
            self.storage, target_id, summarizer=summarizer, instructions=instructions
        )

    async def fork(self, target_id: str, position: ForkPosition = "at") -> Session:
        """A new session holding copies of the path to ``target_id`` (docs/branching.md).

        ``position="before"`` copies up to the target's parent. The original is untouched.
        Works at or below any entry kind. Copies keep their ids and content, except a
        reference to an entry that is not copied: a ``branch_summary``'s ``fromId`` (the
        abandoned branch it summarises stays in this session) and the ``targetId`` of a
        ``label`` entry the path runs through become ``null``; each copied entry keeps the
        label it has now. The new session appears whole or not at all.

        Raises:
            EntryNotFoundError: unknown target. InvalidEntryError: bookkeeping target / bad position.
            InvalidArgumentError: ``target_id`` is not an entry id.
        """
        check_entry_id(target_id, "target_id")
        return Session(await self.storage.fork(target_id, position))

    async def delete(self) -> None:
        """Delete this session and all its entries."""
        await self.storage.delete()

    async def close(self) -> None:
        """Release the storage."""
        await self.storage.close()

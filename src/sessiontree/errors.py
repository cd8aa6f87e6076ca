"""The whole sessiontree exception tree (docs/errors.md).

Every error the library raises on purpose derives from :class:`SessionTreeError`.
Driver errors (``sqlite3``, ``psycopg``, ``OSError`` on files) are translated at the
backend boundary and kept as ``__cause__``. Each branch also subclasses the fitting
builtin, so ``except LookupError`` / ``except ValueError`` keep working::

    SessionTreeError (Exception)
    ├── SessionNotFoundError (LookupError)
    ├── EntryNotFoundError (LookupError)
    ├── PrefixError (LookupError)
    ├── UnknownFormatError (ValueError)
    ├── DuplicateEntryError (ValueError)
    │   ├── SessionExistsError (ValueError)
    │   └── AlreadyImportedError (ValueError)
    ├── InvalidEntryError (ValueError)
    │   ├── InvalidArgumentError (ValueError)
    │   ├── InvalidSessionIdError (ValueError)
    │   └── InvalidMetadataError (ValueError)
    ├── CorruptSessionError (ValueError)
    ├── LeafMovedError (RuntimeError)
    ├── SessionBusyError (RuntimeError)
    ├── LeaseLostError (RuntimeError)
    ├── StorageError (OSError)
    │   ├── StorageTimeoutError (TimeoutError)
    │   ├── EncryptionKeyError (OSError)
    │   └── SessionTooLargeError (OSError)
    ├── MissingExtraError (ImportError)
    ├── CompactionError (RuntimeError)
    ├── SummaryError (RuntimeError)
    ├── ModelError (RuntimeError)
    │   ├── ModelAuthError (RuntimeError)
    │   ├── ModelConfigError (RuntimeError)
    │   └── ModelRateLimitError (RuntimeError)
    └── AgentHarnessError (RuntimeError)

Messages name the session, entry id, file and line where they apply; the same facts are
kept as attributes (``session_id``, ``entry_id``, ``path``, ``line_number``, ``code``), and
:attr:`SessionTreeError.detail` holds the message without the ``[code]`` prefix and the
``(session …, entry …)`` suffix, for code that words its own error around it.

One warning lives here too: :class:`SessionSizeWarning` (a :class:`UserWarning`), issued
when a session grows past 80% of its store's size limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

__all__ = [
    "AgentHarnessError",
    "AlreadyImportedError",
    "CompactionError",
    "CorruptSessionError",
    "DuplicateEntryError",
    "EncryptionKeyError",
    "EntryNotFoundError",
    "InvalidArgumentError",
    "InvalidEntryError",
    "InvalidMetadataError",
    "InvalidSessionIdError",
    "LeafMovedError",
    "LeaseLostError",
    "MissingExtraError",
    "ModelAuthError",
    "ModelConfigError",
    "ModelError",
    "ModelRateLimitError",
    "PrefixError",
    "SessionBusyError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionSizeWarning",
    "SessionTooLargeError",
    "SessionTreeError",
    "StorageError",
    "StorageTimeoutError",
    "SummaryError",
    "UnknownFormatError",
]


def _where(session_id: str | None, entry_id: str | None) -> str:
    parts = []
    if session_id is not None:
        parts.append(f"session {session_id!r}")
    if entry_id is not None:
        parts.append(f"entry {entry_id!r}")
    return ", ".join(parts)


class SessionTreeError(Exception):
    """Base of every error sessiontree raises on purpose.

    Attributes:
        session_id: the session concerned, when known.
        entry_id: the entry concerned, when known.
        detail: the message alone: ``str(exc)`` is it with the session and entry appended
            (and, for errors with a ``code``, the ``[code]`` prefixed).
    """

    def __init__(
        self, message: str, *, session_id: str | None = None, entry_id: str | None = None
    ) -> None:
        where = _where(session_id, entry_id)
        super().__init__(f"{message} ({where})" if where else message)
        self.detail = message
        self.session_id = session_id
        self.entry_id = entry_id


class SessionNotFoundError(SessionTreeError, LookupError):
    """No session with this id exists in the repository."""

    def __init__(self, session_id: str, message: str = "session not found") -> None:
        super().__init__(message, session_id=session_id)


class EntryNotFoundError(SessionTreeError, LookupError):
    """An id (parent, label/leaf target, branch summary ``fromId``) names no entry of the session."""


class PrefixError(SessionTreeError, LookupError):
    """A session or entry prefix (or short id, or name) matched nothing or more than one id."""


class UnknownFormatError(SessionTreeError, ValueError):
    """A file to import is of no format any importer reads (``sessiontree import``,
    :func:`sessiontree.interop.import_session`, :func:`sessiontree.interop.detect_format`).

    Not a :class:`CorruptSessionError`: nothing says the file is damaged, only that it is
    not a session file sessiontree knows. The message begins ``<file>: unknown format`` and
    lists the formats tried; when the content shows why (UTF-16 text, bytes that are not
    UTF-8, a JSON document that does not parse) that is said too.

    Attributes:
        path: the file.
        formats: the formats tried, in the order they are named.
        line_number: 1-based line at fault, when one is (the first byte that is not UTF-8,
            where a JSON document stops parsing); else ``None``.
        reason: what the content shows, or ``""``.
    """

    def __init__(
        self,
        path: str | Path,
        formats: tuple[str, ...],
        *,
        reason: str = "",
        line_number: int | None = None,
    ) -> None:
        loc = str(path) if line_number is None else f"{path}:{line_number}"
        why = f"{reason}; " if reason else ""
        super().__init__(
            f"{loc}: unknown format: {why}not a session file of a format sessiontree "
            f"imports (tried {', '.join(formats)})"
        )
        self.path = Path(path)
        self.formats = formats
        self.line_number = line_number
        self.reason = reason


class DuplicateEntryError(SessionTreeError, ValueError):
    """An appended entry reuses an id already present in the session."""


class SessionExistsError(DuplicateEntryError):
    """A session is created with an id the repository already holds."""


class AlreadyImportedError(DuplicateEntryError):
    """The session of an imported file is already in the repository (nothing was created).

    Attributes:
        report: the :class:`~sessiontree.interop.ImportReport` of what the import would have
            stored; ``report.entries_imported`` is the number of entries the file converts to
            (none were written), for comparing with the stored session (e.g. a file that has
            grown since the first import).
    """

    def __init__(self, message: str, *, session_id: str | None, report: Any) -> None:
        super().__init__(message, session_id=session_id)
        self.report = report


class InvalidEntryError(SessionTreeError, ValueError):
    """An entry fails validation or breaks a rule of docs/tree.md (e.g. a parent that is a ``leaf`` entry)."""


class InvalidArgumentError(InvalidEntryError):
    """An argument of a public method has the wrong type or is out of range (a ``limit`` of
    ``"5"`` or ``-1``, a query that is not a string, an entry id of 3,000 characters).

    The same limits hold on every backend, and nothing is read or changed when it is raised.
    An :class:`InvalidEntryError`, so code that catches that (or ``ValueError``) sees it too.
    """


class InvalidSessionIdError(InvalidEntryError):
    """A session id that is not 1-128 of ``[A-Za-z0-9_-]`` (ids double as file names)."""


class InvalidMetadataError(InvalidEntryError):
    """Session metadata that is not a mapping, does not validate, or holds what JSON cannot carry."""


class CorruptSessionError(SessionTreeError, ValueError):
    """Stored data cannot be read back: a bad JSONL line, a cycle, a foreign database.

    Attributes:
        path: the file concerned, when the session lives in a file.
        line_number: 1-based line of the file, when one line is at fault.
    """

    def __init__(
        self,
        message: str,
        *,
        session_id: str | None = None,
        entry_id: str | None = None,
        path: str | Path | None = None,
        line_number: int | None = None,
    ) -> None:
        if path is not None:
            loc = str(path) if line_number is None else f"{path}:{line_number}"
            message = f"{loc}: {message}"
        super().__init__(message, session_id=session_id, entry_id=entry_id)
        self.path = None if path is None else Path(path)
        self.line_number = line_number


class LeafMovedError(SessionTreeError, RuntimeError):
    """A conditional leaf move (``set_leaf_id_if``) found the leaf no longer where the caller
    read it: another writer appended or moved it in between. Nothing was written; read the
    leaf again and decide again.

    Attributes:
        expected_id: the leaf the caller expected (``None``: no leaf).
        actual_id: the leaf the store holds.
    """

    def __init__(self, session_id: str, expected_id: str | None, actual_id: str | None) -> None:
        super().__init__(
            f"the leaf is {actual_id!r}, not {expected_id!r}: another writer moved it; "
            "nothing was written",
            session_id=session_id,
        )
        self.expected_id = expected_id
        self.actual_id = actual_id


class SessionBusyError(SessionTreeError, RuntimeError):
    """Another writer holds the session's writer lease (docs/harness.md "One writer per
    session"): a second :class:`~sessiontree.harness.AgentHarness` asked not to wait, or its
    wait ran out. Nothing was written.

    Attributes:
        owner: the holder's owner token.
        fence: the holder's fence number.
        expires_ms: when the holder's lease runs out unless renewed (Unix ms).
    """

    def __init__(self, session_id: str, owner: str, fence: int, expires_ms: int) -> None:
        super().__init__(
            f"another writer ({owner}, fence {fence}) holds the session's lease until "
            f"{expires_ms} (Unix ms) unless it renews it; nothing was written",
            session_id=session_id,
        )
        self.owner = owner
        self.fence = fence
        self.expires_ms = expires_ms


class LeaseLostError(SessionTreeError, RuntimeError):
    """A write made under a writer lease that is no longer held: it expired and another
    writer took the session over (its fence is higher), or it was released. The check and
    the write are one atomic step, so nothing was written.

    Attributes:
        fence: the fence the stale writer held.
        current_fence: the session's fence now (``None``: no lease is recorded).
        current_owner: the owner token of the lease now (``None``: none, or released).
    """

    def __init__(
        self,
        session_id: str,
        fence: int,
        current_fence: int | None,
        current_owner: str | None = None,
    ) -> None:
        now = "no lease" if current_fence is None else f"fence {current_fence}"
        if current_owner is not None:
            now += f" held by {current_owner}"
        super().__init__(
            f"the writer lease with fence {fence} was lost (now {now}): another writer took "
            "the session over; nothing was written",
            session_id=session_id,
        )
        self.fence = fence
        self.current_fence = current_fence
        self.current_owner = current_owner


class StorageError(SessionTreeError, OSError):
    """The store cannot be reached or written (bad URL, unreachable server, read-only file)."""


class StorageTimeoutError(StorageError, TimeoutError):
    """The store gave up waiting: a statement ran past PostgreSQL's ``statement_timeout``, a
    lock was not granted within ``lock_timeout`` (or SQLite's busy timeout), no connection
    could be made or taken from the pool in time. The operation was rolled back; it may
    succeed if tried again later."""


class EncryptionKeyError(StorageError):
    """An encrypted store cannot be read with the keys given: it was opened without keys,
    the key ring lacks a key id the store uses, or a key does not decrypt what was sealed
    under its id (docs/storage.md "Encryption at rest"). Nothing was read or written.

    Attributes:
        store: the store (a file path or a URL without its password).
        key_id: the key id missing or failing (``None``: no key ring was given).
    """

    def __init__(self, store: str, key_id: str | None, reason: str) -> None:
        super().__init__(f"{store}: {reason}" + ("" if key_id is None else f" (key id {key_id!r})"))
        self.store = store
        self.key_id = key_id


class SessionTooLargeError(StorageError):
    """An append would take a session over its store's size limit (``max_session_bytes``,
    docs/storage.md "Size limit"). Nothing was written.

    Attributes:
        size_bytes: what the session takes in the store now, in bytes.
        adding_bytes: what the refused append would have added, in bytes.
        limit_bytes: the store's limit per session, in bytes.
    """

    def __init__(
        self, session_id: str, *, size_bytes: int, adding_bytes: int, limit_bytes: int
    ) -> None:
        super().__init__(
            f"the session takes {size_bytes:,} bytes and the append {adding_bytes:,} more, "
            f"over the store's limit of {limit_bytes:,} bytes per session; nothing was "
            "written (compact it, fork a shorter branch, or raise max_session_bytes)",
            session_id=session_id,
        )
        self.size_bytes = size_bytes
        self.adding_bytes = adding_bytes
        self.limit_bytes = limit_bytes


class SessionSizeWarning(UserWarning):
    """A session has grown past 80% of its store's size limit (``max_session_bytes``):
    issued once, by the append that crosses it. The append was written.

    Attributes:
        session_id: the session.
        size_bytes: what it takes in the store after the append, in bytes.
        limit_bytes: the store's limit per session, in bytes.
    """

    def __init__(self, session_id: str, *, size_bytes: int, limit_bytes: int) -> None:
        super().__init__(
            f"session {session_id!r} takes {size_bytes:,} bytes, "
            f"{100 * size_bytes // limit_bytes}% of the store's limit of {limit_bytes:,} "
            "bytes per session; appends over the limit will be refused"
        )
        self.session_id = session_id
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes


class MissingExtraError(SessionTreeError, ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` command."""

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(
            f"the {module!r} package is needed for this; install it with: "
            f"pip install 'sessiontree[{extra}]'"
        )
        self.extra = extra
        self.module = module


if TYPE_CHECKING:
    _CodedBase = SessionTreeError
else:
    _CodedBase = object


class _Coded(_CodedBase):
    """The ``code`` of an error that has one; ``str(exc)`` starts with ``[code]``.

    A mixin placed before :class:`SessionTreeError` in the bases (``object`` at run time, so
    it is no branch of the tree above); its ``super()`` is that ``SessionTreeError``.

    Attributes:
        code: a short snake_case name the caller can branch on.
    """

    def __init__(
        self, code: str, message: str, *, session_id: str | None = None, entry_id: str | None = None
    ) -> None:
        super().__init__(f"[{code}] {message}", session_id=session_id, entry_id=entry_id)
        self.detail = message
        self.code = code


class CompactionError(_Coded, SessionTreeError, RuntimeError):
    """Compaction could not run (docs/compaction.md).

    Attributes:
        code: ``nothing_to_compact``, ``summary_not_smaller``, ``summarization_failed``,
            ``invalid_settings``, ``leaf_moved``.
    """


class SummaryError(SessionTreeError, RuntimeError):
    """A summariser failed (model error, timeout, empty answer); nothing was changed."""


class ModelError(SessionTreeError, RuntimeError):
    """A model call failed; ``kind`` says how, so a caller can decide to retry.

    The kinds, by what went wrong (:attr:`TRANSIENT` ones are worth retrying):

    * ``auth`` — no API key, or the server rejected it (401/403): :class:`ModelAuthError`.
    * ``config`` — the endpoint or the model is wrong: a base URL that is not a URL or whose
      host does not resolve, a server without the API at that path, an unknown model (404):
      :class:`ModelConfigError`.
    * ``rate_limit`` — 429 or a rate-limit error event: :class:`ModelRateLimitError`.
    * ``server`` — 5xx, 408/409, overloaded, an error event the server sent mid-stream.
    * ``timeout`` — no answer in time.
    * ``connection`` — refused, reset, a stream cut off (the network or the server went away).
    * ``overflow`` — the request exceeds the model's context window.
    * ``bad_request`` — any other 4xx: the server refused this request as it is.
    * ``invalid_response`` — the server answered something the SDK or sessiontree could not
      read (not an API answer).

    Attributes:
        kind: one of the kinds above.
        status: the HTTP status, when there was one.
        retry_after_s: the delay the provider asked for (``retry-after`` headers), seconds;
            always finite and ``>= 0`` when set.
    """

    TRANSIENT = frozenset({"rate_limit", "server", "timeout", "connection"})
    """The kinds worth retrying."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        """Whether the call may succeed if made again."""
        return self.kind in self.TRANSIENT


class ModelAuthError(ModelError):
    """No API key is configured for the model's server, or the server rejected the key
    (``kind`` ``auth``). Never retried."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__("auth", message, status=status)


class ModelConfigError(ModelError):
    """The model's endpoint or name is wrong (``kind`` ``config``): a malformed base URL or one
    whose host does not resolve, a server that does not serve the API there, an unknown model.
    Never retried."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__("config", message, status=status)


class ModelRateLimitError(ModelError):
    """The provider asked to slow down (429; ``kind`` ``rate_limit``); transient, retried
    after ``retry_after_s`` when the provider gave it."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__("rate_limit", message, status=status, retry_after_s=retry_after_s)


class AgentHarnessError(_Coded, SessionTreeError, RuntimeError):
    """An agent-harness operation failed; ``code`` says which (e.g. ``branch_summary``)."""

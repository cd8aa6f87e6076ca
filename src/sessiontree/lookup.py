"""Finding sessions and entries by what a person types: an id, a unique prefix or suffix of one
(the short form :func:`short_ids` prints), a session's name, ``--where`` conditions.

Shared by the CLI and the web viewer, owned by neither.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from sessiontree.errors import (
    EntryNotFoundError,
    InvalidArgumentError,
    InvalidEntryError,
    PrefixError,
    SessionNotFoundError,
)

if TYPE_CHECKING:
    from sessiontree.entries import Entry
    from sessiontree.repos.base import SessionRepo
    from sessiontree.session import Session

__all__ = [
    "MIN_SHORT_ID",
    "ShortIds",
    "match_prefix",
    "plural",
    "resolve_entry",
    "resolve_session",
    "short_id_length",
    "short_ids",
    "where_conditions",
]

MIN_SHORT_ID = 8
"""Shortest short id (prefix or suffix) shown by ``list``, ``show`` and ``search``; an id
suffix typed on the command line needs this many characters too."""


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and the noun in the number it needs: ``1 entry``, ``2 entries``, ``0 files``.

    ``many`` is the plural when adding ``s`` (or ``y`` → ``ies``) is wrong.
    """
    if count == 1:
        return f"1 {word}"
    if many is None:
        many = (
            word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
        )
    return f"{count:,} {many}"


def _candidates(ids: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", … ({len(ids) - limit} more)" if len(ids) > limit else "")


async def resolve_session(repo: SessionRepo, ref: str) -> Session:
    """Open the session whose id is ``ref``, starts or ends with ``ref`` (the short form
    :class:`ShortIds` prints), or (failing these) is named ``ref``.

    Cost: one ``open``; on a miss one ``list`` of every session (headers only).

    Raises:
        SessionNotFoundError: nothing matches.
        PrefixError: the prefix (or the name) is ambiguous; the message lists candidates.
    """
    if not ref:
        raise SessionNotFoundError(ref, "an empty session id")
    try:
        return await repo.open(ref)
    except (SessionNotFoundError, InvalidEntryError):
        pass
    infos = await repo.list()
    matches = match_prefix((i.id for i in infos), ref)
    what = "id prefix" if len(ref) < MIN_SHORT_ID else "id prefix or suffix"
    if not matches:
        matches = sorted(i.id for i in infos if i.name == ref)
        what = "name"
    if len(matches) == 1:
        return await repo.open(matches[0])
    if not matches:
        raise SessionNotFoundError(
            ref, "no session has this id, id prefix or name (see `sessiontree list`)"
        )
    raise PrefixError(
        f"{plural(len(matches), 'session')} have the {what} {ref!r}; name one by its id: "
        f"{_candidates(matches)}"
    )


def match_prefix(ids: Iterable[str], ref: str) -> list[str]:
    """The ids that start with ``ref``, or end with it when it has :data:`MIN_SHORT_ID`
    characters or more; sorted (an exact id: that one only).

    Both ends, so that the prefix a user abbreviates to and the suffix :class:`ShortIds`
    prints (UUID v7 ids written in one millisecond share 28 leading characters) both work.
    """
    suffix = len(ref) >= MIN_SHORT_ID  # a short word matches by prefix (or as a name) only
    found = {i for i in ids if i.startswith(ref) or (suffix and i.endswith(ref))}
    if ref in found:
        return [ref]
    return sorted(found)


async def resolve_entry(session: Session, ref: str) -> Entry:
    """The entry whose id is ``ref``, or starts or ends with ``ref`` (:func:`match_prefix`).

    Cost: one ``find_entry``; on a miss every entry of the session is read.

    Raises:
        EntryNotFoundError: nothing matches. PrefixError: ambiguous (candidates listed).
    """

    if ref:
        exact = await session.find_entry(ref)
        if exact is not None:
            return exact
    entries = await session.get_entries()
    matches = match_prefix((e.id for e in entries), ref) if ref else []
    if len(matches) == 1:
        return next(e for e in entries if e.id == matches[0])
    if not matches:
        raise EntryNotFoundError(
            "no entry id starts or ends with this (see `sessiontree show`)",
            session_id=session.id,
            entry_id=ref,
        )
    raise PrefixError(
        f"entry {'prefix' if len(ref) < MIN_SHORT_ID else 'prefix or suffix'} {ref!r} is "
        f"ambiguous in session {session.id!r}: "
        f"{len(matches)} entries match: {_candidates(matches)}"
    )


def short_id_length(ids: Iterable[str], minimum: int = MIN_SHORT_ID) -> int:
    """The shortest prefix length (at least ``minimum``) at which every id is unique.

    Linear after a sort: the length needed is one more than the longest common prefix of
    two neighbours in sorted order.
    """
    ordered = sorted(set(ids))
    need = minimum
    for a, b in itertools.pairwise(ordered):
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        need = max(need, n + 1)
    return need


@dataclass(frozen=True)
class ShortIds:
    """How a set of ids is shortened for display: its last (``suffix``) or first ``length``
    characters, each unique in the set, so :func:`resolve_entry` / :func:`resolve_session`
    take them back. Call it on an id (``None`` → ``-``)."""

    length: int
    suffix: bool

    def __call__(self, id: str | None) -> str:
        if id is None:
            return "-"
        return id[-self.length :] if self.suffix else id[: self.length]


def short_ids(ids: Iterable[str], minimum: int = MIN_SHORT_ID) -> ShortIds:
    """The shorter of the unique prefix and the unique suffix of ``ids`` (at least
    ``minimum`` characters; the prefix on a tie). A suffix never starts with ``-``.

    UUID v7 ids made in one millisecond share their first 28 characters (time and counter)
    and differ in their random end, so for them the suffix is the short form; ids such as
    ``<session>-agent-<n>`` are told apart at their end too.
    """
    unique = set(ids)
    prefix = short_id_length(unique, minimum)
    suffix = short_id_length((i[::-1] for i in unique), minimum)
    longest = max((len(i) for i in unique), default=0)
    # a short form starting with "-" would be read as an option on the command line
    while suffix < longest and any(i[-suffix:].startswith("-") for i in unique):
        suffix += 1
    return ShortIds(suffix, True) if suffix < prefix else ShortIds(prefix, False)


def where_conditions(conditions: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` (a string) and ``KEY:=JSON`` (a JSON scalar) conditions as the ``where``
    of :meth:`SessionRepo.list` (``sessiontree list --where``, the viewer's filter).

    Raises:
        InvalidArgumentError: a condition that is not ``KEY=VALUE``, or whose JSON does not
            parse (the message names it).
    """
    where: dict[str, Any] = {}
    for condition in conditions:
        key, sep, value = condition.partition("=")
        if not sep or not key or key == ":":
            raise InvalidArgumentError(f"{condition!r} is not KEY=VALUE")
        if key.endswith(":"):
            try:
                where[key[:-1]] = orjson.loads(value)
            except orjson.JSONDecodeError as exc:
                raise InvalidArgumentError(f"{condition!r}: {value!r} is not JSON") from exc
        else:
            where[key] = value
    return where

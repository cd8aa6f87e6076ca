"""Encryption at rest: AES-256-GCM under a key ring (docs/storage.md "Encryption at rest").

Three parts, each usable alone:

* :class:`KeyRing` — named 256-bit keys, the first the *current* one (what new data is sealed
  under); read from ``SESSIONTREE_KEYS`` (``id1:base64key,id2:base64key``), a key file (the
  same pairs, one per line) or given in code. Parsing a ring needs no optional package.
* :class:`Codec` — the cipher over a ring: :meth:`Codec.seal` / :meth:`Codec.open` turn bytes
  into a self-describing envelope (``b"stk1"``, the key id, a 12-byte random nonce, the
  ciphertext and its 16-byte tag; the header is authenticated) and back; :meth:`seal_text` /
  :meth:`open_text` do the same for a stored JSON body as a JSON string
  ``"stk1:<key id>:<base64 of nonce + ciphertext>"`` (valid JSON, so PostgreSQL's ``json``
  columns take it, and the key id is readable by SQL, so ``rekey`` finds what is not under
  the current key). Needs the ``cryptography`` package (``sessiontree[encryption]``),
  imported when a codec is made, never by ``import sessiontree``.
* :func:`check_store_keys` — the store's ``store_meta`` row ``encryption`` against a ring:
  a store that records it is encrypted refuses an open without the ring, or with a ring
  lacking (or holding another key under) an id it uses, before anything is read.
"""

from __future__ import annotations

import binascii
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from sessiontree.errors import EncryptionKeyError, InvalidArgumentError, MissingExtraError

__all__ = [
    "KEYS_ENV",
    "KEY_FILE_ENV",
    "META_KEY",
    "Codec",
    "KeyRing",
    "check_store_keys",
    "keys_only_current",
    "new_key",
]

KEYS_ENV = "SESSIONTREE_KEYS"
"""The environment variable holding a key ring: ``id1:base64key,id2:base64key`` (first current)."""
KEY_FILE_ENV = "SESSIONTREE_KEY_FILE"
"""The environment variable naming a key file (read when :data:`KEYS_ENV` is unset)."""
META_KEY = "encryption"
"""The ``store_meta`` key of the row that says a store is encrypted, and under which keys."""

_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_MAGIC = b"stk1"
_TEXT = '"stk1:'
_NONCE = 12
_CHECK = b"sessiontree key check"


def new_key() -> str:
    """A new random 256-bit key, base64 (what a key ring line takes after ``id:``)."""
    return binascii.b2a_base64(os.urandom(32), newline=False).decode()


class KeyRing:
    """Named AES-256 keys; the first is the current one (new data is sealed under it).

    Args:
        keys: ``(id, key)`` pairs in order, or a mapping (its order); a key is 32 bytes, or
            their base64. Ids are ``[A-Za-z0-9_-]{1,64}``.

    Raises:
        InvalidArgumentError: no key, a bad id, a repeated id, or a key that is not 32 bytes.
    """

    def __init__(self, keys: Mapping[str, bytes | str] | Iterable[tuple[str, bytes | str]]) -> None:
        pairs = list(keys.items() if isinstance(keys, Mapping) else keys)
        if not pairs:
            raise InvalidArgumentError("a key ring needs at least one key")
        self._keys: dict[str, bytes] = {}
        for key_id, key in pairs:
            if not isinstance(key_id, str) or not _KEY_ID.match(key_id):
                raise InvalidArgumentError(
                    f"key id {key_id!r} is not 1-64 characters of [A-Za-z0-9_-]"
                )
            if key_id in self._keys:
                raise InvalidArgumentError(f"key id {key_id!r} appears twice in the key ring")
            raw = _key_bytes(key_id, key)
            self._keys[key_id] = raw

    def __repr__(self) -> str:  # never the keys
        return f"KeyRing(current={self.current_id!r}, ids={self.ids!r})"

    @property
    def current_id(self) -> str:
        """The id of the key new data is sealed under (the first)."""
        return next(iter(self._keys))

    @property
    def ids(self) -> list[str]:
        """Every key id, current first."""
        return list(self._keys)

    def key(self, key_id: str) -> bytes | None:
        """The 32-byte key of ``key_id``, ``None`` when the ring has none."""
        return self._keys.get(key_id)

    @classmethod
    def parse(cls, text: str, source: str = "key ring") -> KeyRing:
        """A ring from ``id:base64key`` pairs separated by commas or lines (blank lines and
        ``#`` comments skipped); ``source`` names it in errors.

        Raises:
            InvalidArgumentError: a malformed pair or key (the message names ``source``).
        """
        pairs = []
        for raw in re.split(r"[,\n]", text):
            item = raw.strip()
            if not item or item.startswith("#"):
                continue
            key_id, sep, key = item.partition(":")
            if not sep:
                raise InvalidArgumentError(f"{source}: {key_id[:64]!r} is not id:base64key")
            pairs.append((key_id.strip(), key.strip()))
        try:
            return cls(pairs)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"{source}: {exc}") from None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeyRing:
        """A ring from a key file (:meth:`parse` format; keep it ``0600``).

        Raises:
            InvalidArgumentError: the file cannot be read or is malformed.
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidArgumentError(f"key file {str(path)!r}: {exc.strerror or exc}") from exc
        return cls.parse(text, f"key file {str(path)!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> KeyRing | None:
        """The ring of :data:`KEYS_ENV`, else of the file :data:`KEY_FILE_ENV` names, else
        ``None`` (no encryption).

        Raises:
            InvalidArgumentError: the variable or the file is malformed.
        """
        env = os.environ if environ is None else environ
        text = env.get(KEYS_ENV, "").strip()
        if text:
            return cls.parse(text, f"${KEYS_ENV}")
        path = env.get(KEY_FILE_ENV, "").strip()
        return cls.from_file(path) if path else None


def _key_bytes(key_id: str, key: bytes | str) -> bytes:
    if isinstance(key, str):
        try:
            key = binascii.a2b_base64(key.encode("ascii"), strict_mode=True)
        except (binascii.Error, UnicodeEncodeError, ValueError):
            raise InvalidArgumentError(f"key {key_id!r} is not valid base64") from None
    if not isinstance(key, bytes) or len(key) != 32:
        raise InvalidArgumentError(
            f"key {key_id!r} must be 32 bytes (256 bits; e.g. base64 of os.urandom(32)), "
            f"not {len(key) if isinstance(key, bytes) else type(key).__name__}"
        )
    return key


def _aead() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:
        raise MissingExtraError("encryption", "cryptography") from exc
    return AESGCM


class Codec:
    """AES-256-GCM over a :class:`KeyRing`: bytes to a sealed envelope carrying its key id, and
    back. Sealing uses the ring's current key and a fresh random 96-bit nonce each time.

    Args:
        ring: the keys.
        where: the store, named in errors.
        index_text: ask for the plaintext of messages to be indexed for search (``None``:
            as the store says; :func:`check_store_keys` settles :attr:`index_text`).

    Raises:
        MissingExtraError: ``cryptography`` is not installed.
    """

    def __init__(self, ring: KeyRing, *, where: str = "store", index_text: bool | None = None):
        aesgcm = _aead()
        self.ring = ring
        """The key ring."""
        self.where = where
        """The store, for error messages."""
        self.asked_index_text = index_text
        """What the opener asked about search (``None``: nothing)."""
        self.index_text = bool(index_text)
        """Messages' text goes into the search index in clear (the store's setting once
        :func:`check_store_keys` has read it)."""
        self._ciphers = {k: aesgcm(ring.key(k)) for k in ring.ids}
        self.current_id = ring.current_id
        """The key id new data is sealed under."""
        self._current = self._ciphers[self.current_id]
        self._header = _MAGIC + bytes([len(self.current_id)]) + self.current_id.encode()
        self._text_head = f"{_TEXT}{self.current_id}:"
        self._text_aad = self._text_head.encode()

    @property
    def text_prefix(self) -> str:
        """How every body sealed under the current key starts (``rekey`` looks for others)."""
        return self._text_head

    def _cipher(self, key_id: str) -> Any:
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise EncryptionKeyError(
                self.where, key_id, "data sealed under a key the key ring does not hold"
            )
        return cipher

    def _decrypt(self, key_id: str, nonce: bytes, sealed: bytes, aad: bytes) -> bytes:
        from cryptography.exceptions import InvalidTag

        try:
            return bytes(self._cipher(key_id).decrypt(nonce, sealed, aad))
        except InvalidTag:
            raise EncryptionKeyError(
                self.where,
                key_id,
                "the key under this id does not decrypt the store's data (a wrong key, or "
                "the data was altered)",
            ) from None

    # ------------------------------------------------------------------ bytes

    def seal(self, data: bytes) -> bytes:
        """``data`` sealed under the current key: ``b"stk1"``, the key id's length (one byte)
        and id, the nonce, the ciphertext and tag (28 + id bytes more than ``data``)."""
        nonce = os.urandom(_NONCE)
        sealed: bytes = self._current.encrypt(nonce, data, self._header)
        return self._header + nonce + sealed

    def open(self, blob: bytes) -> bytes:
        """What :meth:`seal` sealed.

        Raises:
            EncryptionKeyError: not an envelope, an unknown key id, or a failing key.
        """
        key_id = self.key_id_of(blob)
        if key_id is None:
            raise EncryptionKeyError(self.where, None, "not data sealed by sessiontree")
        head = 5 + len(key_id)
        return self._decrypt(
            key_id, blob[head : head + _NONCE], blob[head + _NONCE :], bytes(blob[:head])
        )

    @staticmethod
    def key_id_of(blob: bytes) -> str | None:
        """The key id a :meth:`seal` envelope names, ``None`` when ``blob`` is not one."""
        if blob[:4] != _MAGIC or len(blob) < 5:
            return None
        n = blob[4]
        return bytes(blob[5 : 5 + n]).decode("ascii", "replace") if len(blob) >= 5 + n else None

    # ------------------------------------------------------------------ stored JSON text

    def seal_text(self, text: str | bytes) -> str:
        """A stored body (JSON text) as the JSON string ``"stk1:<id>:<base64>"``."""
        data = text.encode() if isinstance(text, str) else text
        nonce = os.urandom(_NONCE)
        sealed = nonce + self._current.encrypt(nonce, data, self._text_aad)
        return f'{self._text_head}{binascii.b2a_base64(sealed, newline=False).decode()}"'

    def open_text(self, text: str | bytes) -> str:
        """The JSON text :meth:`seal_text` sealed; text that is not sealed (a row written
        before the store was encrypted, which ``rekey`` seals) is returned as it is.

        Raises:
            EncryptionKeyError: an unknown key id, or a failing key.
        """
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).decode()
        if not text.startswith(_TEXT):
            return text
        key_id, _, b64 = text[6:-1].partition(":")
        try:
            raw = binascii.a2b_base64(b64)
        except binascii.Error:
            raise EncryptionKeyError(self.where, key_id, "a sealed body is damaged") from None
        aad = f"{_TEXT}{key_id}:".encode()
        return self._decrypt(key_id, raw[:_NONCE], raw[_NONCE:], aad).decode()

    def open_optional(self, text: str | None) -> str | None:
        """:meth:`open_text`, ``None`` kept."""
        return None if text is None else self.open_text(text)

    @staticmethod
    def text_key_id(text: str) -> str | None:
        """The key id of a sealed body, ``None`` when it is not sealed."""
        if not text.startswith(_TEXT):
            return None
        return text[6:].partition(":")[0]

    def check_token(self) -> str:
        """A value sealed under the current key for the store's ``encryption`` row: an open
        with another key under the same id fails on it before anything else is read."""
        return self.seal_text(_CHECK)


def check_store_keys(codec: Codec | None, stored: str | None, where: str) -> str | None:
    """Check a key ring against the store's ``encryption`` row (``stored``; ``None``: the
    store is not encrypted) and settle ``codec.index_text``; the row to write, ``None``
    when it stays as it is.

    The row is JSON: ``{"cipher": "AES-256-GCM", "keys": {id: check token}, "index_text":
    bool}``, every key id that data of the store may be sealed under with a value sealed
    under it. An open with keys marks a store encrypted (and adds its current key); an open
    without keys of a store so marked is refused.

    Raises:
        EncryptionKeyError: ``stored`` says encrypted and ``codec`` is ``None``, lacks one of
            its key ids, or holds another key under one.
    """
    if codec is None:
        if stored is None:
            return None
        ids = list(orjson.loads(stored).get("keys", {}))
        raise EncryptionKeyError(
            where,
            ids[0] if ids else None,
            f"the store is encrypted (key ids {ids}); open it with its keys: "
            f"${KEYS_ENV}, ${KEY_FILE_ENV}, --key-file, or open_repo(url, keys=KeyRing(...))",
        )
    info: dict[str, Any] = (
        {"cipher": "AES-256-GCM", "keys": {}, "index_text": False}
        if stored is None
        else orjson.loads(stored)
    )
    keys: dict[str, str] = info["keys"]
    for key_id, token in keys.items():
        if codec.ring.key(key_id) is None:
            raise EncryptionKeyError(
                where, key_id, "the store holds data sealed under a key the key ring lacks"
            )
        codec.open_text(token)
    changed = stored is None
    if codec.current_id not in keys:
        keys[codec.current_id] = codec.check_token()
        changed = True
    if codec.asked_index_text is not None and codec.asked_index_text != info["index_text"]:
        info["index_text"] = codec.asked_index_text
        changed = True
    codec.index_text = bool(info["index_text"])
    return orjson.dumps(info).decode() if changed else None


def keys_only_current(codec: Codec, stored: str) -> str:
    """The ``encryption`` row once nothing is sealed under another key than the current."""
    info = orjson.loads(stored)
    info["keys"] = {codec.current_id: info["keys"].get(codec.current_id) or codec.check_token()}
    return orjson.dumps(info).decode()

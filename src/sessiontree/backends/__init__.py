"""The backends, one package each: :mod:`~sessiontree.backends.memory`,
:mod:`~sessiontree.backends.jsonl` and :mod:`~sessiontree.backends.sql` (SQLite and
PostgreSQL). Each holds its storage (the :class:`~sessiontree.storage.base.SessionStorage`
of one session), its repository (many sessions, :class:`~sessiontree.repos.base.SessionRepo`)
and its listing and index code. Importing this package imports no backend.
"""

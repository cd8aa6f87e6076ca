"""SQL storage: SQLite (the embedded default) and PostgreSQL behind one shell.

Modules: :mod:`~sessiontree.storage.sql.schema` (tables and ordered migrations),
:mod:`~sessiontree.storage.sql.plan` (the engine contract and the pure append planner),
:mod:`~sessiontree.storage.sql.sqlite` and :mod:`~sessiontree.storage.sql.postgres` (the two
engines) and :mod:`~sessiontree.storage.sql.storage` (:class:`SQLStorage`, the shell).
Drivers are imported only by the engine that needs them.
"""

from sessiontree.storage.sql.parse_cache import ParseCache
from sessiontree.storage.sql.storage import SQLStorage, make_engine

__all__ = ["ParseCache", "SQLStorage", "make_engine"]

"""SQL storage: SQLite (the embedded default) and PostgreSQL behind one shell.

Modules: :mod:`~sessiontree.backends.sql.schema` (tables and ordered migrations),
:mod:`~sessiontree.backends.sql.plan` (the engine contract and the pure append planner),
:mod:`~sessiontree.backends.sql.sqlite` and :mod:`~sessiontree.backends.sql.postgres` (the two
engines) and :mod:`~sessiontree.backends.sql.storage` (:class:`SQLStorage`, the shell).
Drivers are imported only by the engine that needs them.
"""

from sessiontree.backends.sql.parse_cache import ParseCache
from sessiontree.backends.sql.storage import SQLStorage, make_engine

__all__ = ["ParseCache", "SQLStorage", "make_engine"]

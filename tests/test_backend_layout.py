"""The backends' shape, read from the source with :mod:`ast`: a storage becomes a ``Session``
in one place (:func:`sessiontree.repos.base.session_of`), and a database engine is one class
composed of parts, not a stack of base classes spread over files."""

from __future__ import annotations

import ast
from pathlib import Path

import sessiontree
from sessiontree.backends.memory.storage import MemoryStorage
from sessiontree.repos.base import fork_session, session_of
from sessiontree.session import Session

PACKAGE = Path(sessiontree.__file__).parent

SESSION_MAKERS = {"repos/base.py", "session.py"}
"""Where ``Session(...)`` may be called: :func:`session_of` and a session's own fork."""


def _calls_of(name: str, tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


def test_only_session_of_wraps_a_storage_into_a_session() -> None:
    found = sorted(
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if str(path.relative_to(PACKAGE)) not in SESSION_MAKERS
        for line in _calls_of("Session", ast.parse(path.read_text(encoding="utf-8")))
    )
    assert found == []


def test_the_check_sees_a_session_being_made() -> None:
    assert _calls_of("Session", ast.parse("s = Session(storage)\n")) == [1]
    assert _calls_of("Session", ast.parse("s = session_of(storage)\n")) == []


async def test_session_of_and_fork_session_hand_out_sessions_of_the_storage() -> None:
    storage = MemoryStorage("wrapped")
    session = session_of(storage)
    assert isinstance(session, Session) and session.storage is storage
    first = await session.append_message({"role": "user", "content": "hi"})
    await session.append_message({"role": "user", "content": "again"})
    fork = await fork_session(storage, first)
    assert isinstance(fork, Session) and fork.id != "wrapped"
    assert [e.id for e in await fork.get_branch()] == [first]
    assert len(await session.get_branch()) == 2  # the source is untouched


def test_the_agent_harness_owns_its_context_part_instead_of_inheriting_it() -> None:
    from sessiontree.harness.agent import AgentHarness
    from sessiontree.harness.context import ContextHarness

    assert AgentHarness.__mro__ == (AgentHarness, object)
    harness = AgentHarness(_memory_session(), context_window=100_000)
    assert isinstance(harness._context, ContextHarness)
    assert harness._context.session is harness.session
    harness.summarizer = None
    assert harness._context.summarizer is None


def _memory_session() -> Session:
    return session_of(MemoryStorage())


def test_each_database_engine_is_one_class_composed_of_parts() -> None:
    import inspect

    from sessiontree.backends.sql.sqlite import SQLiteEngine

    assert SQLiteEngine.__mro__ == (SQLiteEngine, object)
    # every operation but close runs on the connection's thread, marked where it is defined
    operations = [
        name
        for name, value in vars(SQLiteEngine).items()
        if inspect.iscoroutinefunction(value) and name != "close"
    ]
    assert "append" in operations and "search" in operations
    assert [
        name
        for name in operations
        if not getattr(vars(SQLiteEngine)[name], "__sessiontree_on_thread__", False)
    ] == []


def test_the_postgres_engine_is_one_class_composed_of_parts() -> None:
    from sessiontree.backends.sql.postgres import PostgresEngine
    from sessiontree.backends.sql.postgres_append import PostgresAppends
    from sessiontree.backends.sql.postgres_pool import PostgresConnection

    assert PostgresEngine.__mro__ == (PostgresEngine, object)
    engine = PostgresEngine("postgresql://nobody@127.0.0.1:1/none")  # connects on first use
    assert isinstance(engine.connection, PostgresConnection)
    assert isinstance(engine._appends, PostgresAppends)
    assert engine._appends.connection is engine.connection

"""The CLI on stores built through the API (no shared files needed): forks after a branch
summary, checkout to the leaf, export's refusals and ``export -``, messages in users' words."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner

from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.entries import BranchSummaryEntry
from sessiontree.testing.builders import assistant, user

STORES = ["sqlite", "jsonl"]


def store_url(kind: str, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 's.db'}" if kind == "sqlite" else f"jsonl://{tmp_path / 'j'}"


def invoke(store: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["--store", store, *args], env={"COLUMNS": "200", "SESSIONTREE_URL": None}
    )
    return result.exit_code, result.stdout, result.stderr


def build_summarised(store: str) -> dict[str, str]:
    """A session: question, answer, an abandoned detour, a branch summary, a new question."""

    async def build() -> dict[str, str]:
        async with open_repo(store) as repo:
            s = await repo.create(id="talk")
            ids = {"u": await s.append_message(user("first question"))}
            ids["a"] = await s.append_message(assistant("first answer"))
            await s.append_message(user("a detour"))
            ids["left"] = await s.append_message(assistant("the detour's answer"))
            summary = await s.navigate(ids["a"], summarize=True)
            assert summary is not None
            ids["summary"] = summary
            ids["after"] = await s.append_message(user("back on track"))
            return ids

    return asyncio.run(build())


async def _entry(store: str, session_id: str, entry_id: str) -> object:
    async with open_repo(store) as repo:
        return await (await repo.open(session_id)).get_entry(entry_id)


@pytest.mark.parametrize("kind", STORES)
def test_fork_command_below_a_branch_summary(kind: str, tmp_path: Path) -> None:
    # `sessiontree fork` failed with "fromId names no entry" on every store
    store = store_url(kind, tmp_path)
    ids = build_summarised(store)
    code, out, err = invoke(store, "fork", "talk", ids["after"])
    assert code == 0, err
    child = out.strip()
    assert "4 entries copied" in err
    copy = asyncio.run(_entry(store, child, ids["summary"]))
    assert isinstance(copy, BranchSummaryEntry) and copy.from_id is None
    code, out, err = invoke(store, "fork", "talk", ids["u"])
    assert code == 0 and "1 entry copied" in err, err


@pytest.mark.parametrize("kind", STORES)
def test_checkout_to_the_current_leaf_writes_nothing(kind: str, tmp_path: Path) -> None:
    store = store_url(kind, tmp_path)
    ids = build_summarised(store)

    async def count() -> int:
        async with open_repo(store) as repo:
            return len(await (await repo.open("talk")).get_entries())

    before = asyncio.run(count())
    code, out, err = invoke(store, "checkout", "talk", ids["after"])
    assert code == 0, err
    assert out.strip() == f"the leaf is already at {ids['after']}: nothing changed"
    assert "→" not in out
    assert asyncio.run(count()) == before
    code, out, _ = invoke(store, "checkout", "talk", ids["u"])
    assert code == 0 and f"leaf moved: {ids['after']} → {ids['u']}" in out
    assert asyncio.run(count()) == before + 1


def test_help_speaks_to_users_without_design_references() -> None:
    def texts(command: click.Command, name: str) -> list[tuple[str, str]]:
        out = [(name, CliRunner().invoke(cli, [*name.split(), "--help"]).stdout)]
        if isinstance(command, click.Group):
            for sub, cmd in command.commands.items():
                out += texts(cmd, f"{name} {sub}".strip())
        return out

    for name, text in texts(cli, ""):
        assert "SPEC" not in text and "§" not in text and "LESSONS" not in text, name


def test_a_shared_session_name_is_called_a_name(tmp_path: Path) -> None:
    store = store_url("jsonl", tmp_path)

    async def build() -> None:
        async with open_repo(store) as repo:
            for sid in ("one", "two"):
                s = await repo.create(id=sid)
                await s.append_message(user("hi"))
                await s.append_session_name("work")

    asyncio.run(build())
    code, _, err = invoke(store, "show", "work")
    assert code == 1
    assert err == "error: 2 sessions have the name 'work'; name one by its id: one, two\n"
    code, _, err = invoke(store, "show", "nothing-like-it")
    assert code == 1 and "no session has this id, id prefix or name" in err


def test_import_of_a_parent_cycle_reports_it_in_words(tmp_path: Path) -> None:
    # the report read "entry a has parent 'c' that cycle"
    header = {"type": "session", "version": 3, "id": "cyc", "timestamp": "2026-01-01T00:00:00Z"}
    lines = [header]
    for eid, parent in (("a", "c"), ("c", "a")):
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": eid, "timestamp": 1},
            }
        )
    src = tmp_path / "cycle.jsonl"
    src.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    code, out, err = invoke(store_url("sqlite", tmp_path), "import", str(src))
    assert code == 0, err
    assert "that cycle" not in out
    assert "leads back to this entry (a cycle); imported as a root" in out
    assert "1 entry with a missing parent" in out


def _special_files(tmp_path: Path) -> list[tuple[str, Path]]:
    """A symlink to a file, a dangling symlink, a FIFO, a directory and (as root) a device."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir.jsonl").mkdir()
    out = [
        ("a symbolic link", tmp_path / "link"),
        ("a symbolic link", tmp_path / "dangling"),
        ("a FIFO", tmp_path / "fifo"),
        ("a directory", tmp_path / "dir.jsonl"),
    ]
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        out.append(("a character device", tmp_path / "null"))
    except PermissionError:
        pass  # not root: no device node can be made, and none could be replaced either
    return out


def test_export_refuses_anything_but_a_regular_file(tmp_path: Path) -> None:
    # run as root, `export --force` replaced /dev/full with a regular file
    store = store_url("sqlite", tmp_path)
    build_summarised(store)
    for kind, path in _special_files(tmp_path):
        mode = os.lstat(path).st_mode
        for force in ([], ["--force"]):
            code, _, err = invoke(store, "export", "talk", str(path), *force)
            assert code != 0, (path, force)
            assert path.name in err and err.count("\n") == 1, err
            assert os.lstat(path).st_mode == mode, path  # untouched
        if kind != "a directory":  # click refuses a directory itself, naming it
            code, _, err = invoke(store, "export", "talk", str(path), "--force")
            assert f"is {kind}, not a regular file" in err, err
    assert (tmp_path / "victim.txt").read_text() == "keep me"
    assert not (tmp_path / "nowhere").exists()
    # a regular file: refused without --force, replaced with it
    plain = tmp_path / "out.jsonl"
    plain.write_text("old")
    assert invoke(store, "export", "talk", str(plain))[0] == 1
    assert plain.read_text() == "old"
    code, out, _ = invoke(store, "export", "talk", str(plain), "--force")
    assert code == 0 and "6 entries" in out
    assert orjson.loads(plain.read_bytes().splitlines()[0])["id"] == "talk"


def test_export_dash_writes_standard_output(tmp_path: Path) -> None:
    store = store_url("sqlite", tmp_path)
    ids = build_summarised(store)
    code, out, err = invoke(store, "export", "talk", "-")
    assert code == 0, err
    lines = [orjson.loads(x) for x in out.encode().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == "talk"
    assert [x["id"] for x in lines[1:]][-1] == ids["after"]
    assert "wrote 6 entries to standard output" in err
    assert not (tmp_path / "-").exists()

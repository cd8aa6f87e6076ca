"""``sessiontree export --format markdown`` on the base install: the Markdown export is text
and needs none of the ``web`` extra's packages (Starlette, uvicorn, Jinja2, markdown-it-py)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WEB_ONLY = (
    "starlette",
    "uvicorn",
    "jinja2",
    "markdown_it",
    "markupsafe",
    "multipart",
    "python_multipart",
)
"""The packages the ``web`` extra brings (and Jinja2's markupsafe), as named in site-packages."""

MAKE_SESSION = """
import asyncio, sys
from sessiontree import open_repo


async def main():
    async with open_repo(sys.argv[1]) as repo:
        session = await repo.create()
        await session.append_session_name("notes <b>")
        await session.append_message({"role": "user", "content": "Read [main.py](http://x)"})
        await session.append_message({
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "read",
                         "arguments": {"path": "main.py"}}],
            "provider": "openai", "model": "m",
        })
        await session.append_message({
            "role": "toolResult", "toolCallId": "c1", "toolName": "read",
            "content": [{"type": "text", "text": "print('hi')"}],
        })
        print(session.id)

asyncio.run(main())
"""


def _base_install_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a ``python -S`` process that sees this venv's packages except the
    web extra's: a folder of links to every other entry of site-packages is its whole path."""
    site = tmp_path / "site"
    site.mkdir()
    packages = Path(sysconfig.get_paths()["purelib"])
    for entry in packages.iterdir():
        if not entry.name.lower().startswith(WEB_ONLY):
            (site / entry.name).symlink_to(entry)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(site)])
    env["HOME"] = str(tmp_path / "home")
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-S", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_markdown_export_needs_only_the_base_install(tmp_path: Path) -> None:
    env = _base_install_env(tmp_path)
    blocked = _run(["-c", "import jinja2"], env, tmp_path)
    assert "No module named 'jinja2'" in blocked.stderr  # as on a base install
    store = f"jsonl://{tmp_path / 'store'}"
    made = _run(["-c", MAKE_SESSION, store], env, tmp_path)
    assert made.returncode == 0, made.stderr
    sid = made.stdout.strip()

    out = tmp_path / "out.md"
    export = ["-m", "sessiontree", "--store", store, "export", sid, str(out)]
    done = _run([*export, "--format", "markdown"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith(f"# notes &lt;b&gt; `{sid}`")
    assert "Read \\[main.py](http://x)" in text  # escaped as before: no link forms
    assert "**→ tool call `read`**" in text and "print('hi')" in text

    # the library function as well, with the module imported the ordinary way
    lib = _run(
        [
            "-c",
            "import asyncio, sys\n"
            "from sessiontree import open_repo\n"
            "from sessiontree.web.export import export_markdown\n"
            "async def main():\n"
            "    async with open_repo(sys.argv[1]) as repo:\n"
            "        print(await export_markdown(await repo.open(sys.argv[2])), end='')\n"
            "asyncio.run(main())\n",
            store,
            sid,
        ],
        env,
        tmp_path,
    )
    assert lib.returncode == 0, lib.stderr
    assert lib.stdout == text

    # HTML still needs the extra, and says which install gives it; nothing is written
    html = _run([*export[:-1], str(tmp_path / "out.html"), "--format", "html"], env, tmp_path)
    assert html.returncode != 0
    assert "sessiontree[web]" in html.stderr, html.stderr
    assert "Traceback" not in html.stderr
    assert not (tmp_path / "out.html").exists()

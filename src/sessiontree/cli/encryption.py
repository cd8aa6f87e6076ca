"""``rekey``: seal an encrypted store again under its current key (docs/storage.md
"Encryption at rest")."""

from __future__ import annotations

import click

from sessiontree.cli._common import App, key_file_option, repo_command
from sessiontree.errors import StorageError

__all__ = ["rekey_cmd"]


@click.command("rekey")
@click.option(
    "--batch",
    default=500,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Rows sealed again per transaction.",
)
@key_file_option
@repo_command
async def rekey_cmd(app: App, batch: int) -> int | None:
    """Seal every entry, draft and first message of an encrypted store again under the
    current key (the first of the key ring), in batches, showing progress.

    Safe to interrupt (even kill -9): every value stays readable with the key ring, and
    running it again finishes the job. Values still in clear (written before the store was
    encrypted) are sealed too. Once it has finished, the old keys may leave the ring.
    """
    rekey = getattr(app.repo, "rekey", None)
    if rekey is None:
        raise StorageError("rekey is for encrypted SQLite and PostgreSQL stores")
    err = app.err

    def progress(table: str, done: int, total: int) -> None:
        err.print(f"rekey {table}: {done:,}/{total:,}", highlight=False)

    changed = await rekey(batch=batch, progress=progress)
    app.out.print(f"sealed again under the current key: {changed:,} value(s)")
    return None

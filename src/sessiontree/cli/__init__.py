"""The ``sessiontree`` command line: click for the commands, rich for the output.

Modules, one concern each:

* ``_common`` — the store (``--store`` / ``SESSIONTREE_URL``), id-prefix resolution, errors;
* ``render`` — rich trees, entry lines and message lists;
* ``importing`` — ``import``; ``browse`` — ``list``, ``show``, ``context``, ``search``,
  ``stats``; ``edit`` — ``checkout``, ``fork``, ``label``, ``name``, ``export``, ``rm``;
  ``maintenance`` — ``verify``, ``compact``; ``retention`` — ``prune``, ``trash``, ``du``;
  ``encryption`` — ``rekey``;
  ``chat`` — ``chat`` (a model continues a session);
  ``serve`` — the web viewer.

Errors print one line (``error: …``) on stderr and exit with status 1 (status 2 for a
command line that does not parse, 130 on Ctrl-C); ``--debug`` shows the traceback instead.
Unexpected exceptions (bugs) are one line too, with a hint to rerun with ``--debug``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from sessiontree.cli._common import (
    EXIT_ERROR,
    EXIT_USAGE,
    CliState,
    check_store_url,
    error_line,
    key_file_option,
)
from sessiontree.cli.browse import context_cmd, list_cmd, search_cmd, show_cmd, stats_cmd
from sessiontree.cli.chat import chat_cmd
from sessiontree.cli.edit import (
    checkout_cmd,
    export_cmd,
    fork_cmd,
    handoff_cmd,
    label_cmd,
    name_cmd,
    rm_cmd,
)
from sessiontree.cli.encryption import rekey_cmd
from sessiontree.cli.importing import import_cmd
from sessiontree.cli.maintenance import compact_cmd, verify_cmd
from sessiontree.cli.retention import du_cmd, prune_cmd, trash_group
from sessiontree.cli.serve import serve_cmd
from sessiontree.cli.sync import sync_cmd
from sessiontree.cli.usage import usage_cmd
from sessiontree.errors import SessionTreeError

__all__ = ["CliState", "cli", "main"]


class _Group(click.Group):
    """A click group whose failures are one line on stderr (tracebacks only with ``--debug``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were added, not alphabetical

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        state = extra.pop("obj", None)
        if not isinstance(state, CliState):
            state = CliState()
        try:
            code = super().main(
                args, prog_name, complete_var, standalone_mode=False, obj=state, **extra
            )
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx is not None else str(exc))
            code = 0
        except click.exceptions.Abort:
            click.echo("error: aborted", err=True)
            code = EXIT_ERROR
        except click.ClickException as exc:
            if state.debug:
                raise
            click.echo(error_line(exc), err=True)
            code = EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
        except SessionTreeError as exc:
            if state.debug:
                raise
            click.echo(error_line(exc), err=True)
            code = EXIT_ERROR
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            code = 130
        except Exception as exc:  # a bug or an untranslated driver error: still one line
            if state.debug:
                raise
            click.echo(f"{error_line(exc)} (run with --debug for the traceback)", err=True)
            code = EXIT_ERROR
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


@click.group(
    cls=_Group, no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--store",
    envvar="SESSIONTREE_URL",
    default=None,
    metavar="URL",
    help="The store: sqlite:///file.db (relative to here; sqlite:////abs/file.db for an "
    "absolute path), jsonl:///dir, postgresql://user@host/db, memory://. "
    "Default: $SESSIONTREE_URL, else a SQLite file in the user data directory.",
)
@key_file_option
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="sessiontree")
@click.pass_context
def cli(ctx: click.Context, store: str | None, debug: bool) -> None:
    """sessiontree: look at, branch and continue agent session histories.

    Sessions and entries can be named by a unique prefix of their id, or by the short id
    that list and show print (sessions also by name). Import files written by pi, Claude
    Code, Codex, SWE-agent, Aider, Cline / Roo Code or Gemini CLI with import, then use
    list, show, context and the other commands.
    """
    state = ctx.ensure_object(CliState)
    state.store = check_store_url(store)
    state.debug = debug


for _command in (
    import_cmd,
    sync_cmd,
    list_cmd,
    show_cmd,
    context_cmd,
    checkout_cmd,
    fork_cmd,
    label_cmd,
    name_cmd,
    export_cmd,
    handoff_cmd,
    rm_cmd,
    search_cmd,
    stats_cmd,
    usage_cmd,
    verify_cmd,
    compact_cmd,
    du_cmd,
    prune_cmd,
    trash_group,
    rekey_cmd,
    chat_cmd,
    serve_cmd,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI on ``argv`` (default ``sys.argv[1:]``) and exit."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="sessiontree")

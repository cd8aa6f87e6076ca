"""``serve``: the local web viewer (needs the ``web`` extra)."""

from __future__ import annotations

import ipaddress

import click

from sessiontree.cli._common import CliState, open_store

__all__ = ["is_loopback", "serve_cmd"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option(
    "--store",
    "store",
    default=None,
    metavar="URL",
    help="The store to show (default: the global --store / $SESSIONTREE_URL).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="TCP port (0: any free port).",
)
@click.option(
    "--host",
    default=None,
    metavar="HOST",
    help=f"Address to bind (default {DEFAULT_HOST}, this machine only). Another address "
    "serves your sessions to the network: give it only on purpose.",
)
@click.option(
    "--write",
    is_flag=True,
    help="Allow checkout, label, name and fork from the pages (read-only without it).",
)
@click.pass_context
def serve_cmd(
    ctx: click.Context, store: str | None, port: int, host: str | None, write: bool
) -> None:
    """Browse sessions in a web browser.

    Serves the session list, each session's tree, context, branch diff and stats on
    http://127.0.0.1:PORT until Ctrl-C. Read-only unless --write. Only a --host given
    on the command line makes it bind an address other than the loopback one.
    """
    from sessiontree.web import require_web

    require_web()
    from sessiontree.redact import redact_url
    from sessiontree.web.app import create_app
    from sessiontree.web.server import bind, serve_forever, url_of

    state = ctx.find_object(CliState) or CliState()
    if store is not None:
        state = CliState(store=store, debug=state.debug, repo_factory=state.repo_factory)
    address = DEFAULT_HOST if host is None else host
    hosts = ["127.0.0.1", "localhost", "::1"]
    if not is_loopback(address):
        click.echo(
            f"warning: serving on {address}: anyone who can reach this address can read the "
            "sessions" + (" and change them (--write)" if write else ""),
            err=True,
        )
        hosts = ["*"]
    try:
        sock = bind(address, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {address}:{port}: {exc.strerror or exc}")
    repo = open_store(state)
    app = create_app(repo, write=write, hosts=hosts)
    click.echo(
        f"sessiontree: serving {redact_url(repo.url)} on {url_of(sock)}/ "
        f"({'read-write' if write else 'read-only'}; Ctrl-C stops)",
        err=True,
    )
    serve_forever(app, sock)

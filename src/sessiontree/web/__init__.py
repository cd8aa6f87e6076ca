"""A local web viewer and single-file exports (optional extra ``sessiontree[web]``).

* :mod:`~sessiontree.web.app` — the Starlette app of ``sessiontree serve``;
* :mod:`~sessiontree.web.reading` — the reader threads every page is read and built on;
* :mod:`~sessiontree.web.tree` — the tree page, paged through ``get_entries``;
* :mod:`~sessiontree.web.views` — the context, diff, stats and entry views, read through the
  public :class:`~sessiontree.Session` methods;
* :mod:`~sessiontree.web.listing` — the session list's columns, filters and search marks;
* :mod:`~sessiontree.web.charts` — the usage page's numbers (from :mod:`sessiontree.usage`);
* :mod:`~sessiontree.web.render` — messages to safe HTML (Markdown without raw HTML);
* :mod:`~sessiontree.web.export` — ``sessiontree export --format html|markdown``;
* :mod:`~sessiontree.web.server` — uvicorn on a bound socket, in the foreground or a thread.

Importing this package imports none of Starlette, uvicorn, Jinja2 or markdown-it-py;
:mod:`~sessiontree.web.app` and :mod:`~sessiontree.web.server` do, and the functions that make
HTML import Jinja2 and markdown-it-py when called, so :mod:`~sessiontree.web.tree`, the views
and the Markdown export need only the base install. :func:`require_web` names a missing
package with :class:`~sessiontree.errors.MissingExtraError`.
"""

from __future__ import annotations

import importlib.util

from sessiontree.errors import MissingExtraError

__all__ = ["require_web"]


def require_web() -> None:
    """Check that the ``web`` extra is installed.

    Raises:
        MissingExtraError: starlette, uvicorn, jinja2 or markdown-it-py is missing.
    """
    for module in ("starlette", "uvicorn", "jinja2", "markdown_it"):
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError("web", module)

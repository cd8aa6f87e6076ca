"""A store URL's password never leaves the process: not in the viewer's pages, not in the
``serve`` start-up line, not in error messages."""

from __future__ import annotations

from starlette.testclient import TestClient

from backends import throwaway_pg_database
from sessiontree import open_repo
from sessiontree.redact import redact_url
from sessiontree.web.app import create_app


def test_passwords_in_a_url_are_replaced() -> None:
    assert redact_url("postgresql://bob:s3cret@db:5432/x?options=-c") == (
        "postgresql://bob:***@db:5432/x?options=-c"
    )
    assert redact_url("postgresql://db/x?user=bob&password=s3cret&sslmode=require") == (
        "postgresql://db/x?user=bob&password=***&sslmode=require"
    )
    assert redact_url("sqlite:////home/u/s.db") == "sqlite:////home/u/s.db"
    assert redact_url("postgresql://bob@db/x") == "postgresql://bob@db/x"


async def test_the_viewer_never_shows_the_store_password() -> None:
    with throwaway_pg_database() as url:
        # trust authentication: any password is accepted, so the URL can carry one
        secret_url = url.replace("postgresql://postgres@", "postgresql://postgres:s3cretPW@", 1)
        assert "s3cretPW" in secret_url
        async with open_repo(secret_url) as repo:
            await repo.create()
            page = TestClient(create_app(repo), base_url="http://127.0.0.1").get("/")
    assert page.status_code == 200
    assert "s3cretPW" not in page.text and "postgres:***@" in page.text

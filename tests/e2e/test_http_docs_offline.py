"""``/docs`` works offline (issue 35, finding 6): Swagger UI's files come from a pip
package (swagger-ui-py) through the server itself, never a CDN, and with
``--public-docs`` the page and its document need no token (a browser cannot send one)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from context_compaction import Settings, bootstrap
from context_compaction.infrastructure.http import create_app

TOKEN = "docs-token-0123456789abcdef"


@pytest.fixture(params=[True, False], ids=["public-docs", "token-docs"])
def client(request: pytest.FixtureRequest) -> Iterator[tuple[TestClient, bool]]:
    bus = bootstrap(Settings(database_url="memory://", summarizer="extractive"))
    app = create_app(bus, token=TOKEN, max_body_bytes=100_000, public_docs=request.param)
    with TestClient(app) as test_client:
        yield test_client, request.param
    bus.close()


def test_docs_load_swagger_ui_from_the_server_not_a_cdn(client: tuple[TestClient, bool]) -> None:
    http, public = client
    headers = {} if public else {"Authorization": f"Bearer {TOKEN}"}
    page = http.get("/docs", headers=headers)
    assert page.status_code == 200, page.text
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']|url:\s*['"]([^'"]+)['"]""", page.text)
    loaded = [a or b for a, b in urls]
    assert loaded and all(u.startswith("/") for u in loaded), loaded  # nothing from another host
    assert "cdn" not in page.text.lower()
    # Swagger UI would ask validator.swagger.io about the document by default
    assert '"validatorUrl": null' in page.text, page.text
    for url in loaded:
        asset = http.get(url, headers=headers)  # the assets themselves never need the token
        assert asset.status_code == 200, url
    script = http.get("/docs/static/swagger-ui-bundle.js")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text
    assert http.get("/docs/static/../../etc/passwd").status_code == 404
    assert http.get("/docs/static/index.html").status_code == 404  # only the files the page uses


def test_public_docs_need_no_token_and_private_docs_do(client: tuple[TestClient, bool]) -> None:
    http, public = client
    for path in ("/docs", "/openapi.json"):
        assert http.get(path).status_code == (200 if public else 401), path
    assert http.post("/v1/commands", json={"type": "list_sessions"}).status_code == 401  # commands always do


def test_the_inspectors_login_opens_the_documents_in_a_browser_but_never_the_commands() -> None:
    """Without ``--public-docs`` a browser reaches ``/docs`` through the inspector's login
    form (issue 35): the cookie it sets is sent to ``/docs`` and ``/openapi.json``; the
    command routes read only the bearer token, so the cookie opens nothing else."""
    bus = bootstrap(Settings(database_url="memory://", summarizer="extractive"))
    app = create_app(bus, token=TOKEN, max_body_bytes=100_000, public_docs=False)
    with TestClient(app, base_url="http://127.0.0.1") as http:
        assert http.get("/docs").status_code == 401
        wrong = http.post("/ui/login", data={"token": "not-the-token"}, follow_redirects=False)
        assert wrong.status_code == 401 and not http.cookies
        login = http.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
        assert login.status_code == 303 and http.cookies, login.text
        assert http.get("/docs").status_code == 200
        assert http.get("/openapi.json").json()["openapi"].startswith("3.")
        assert http.post("/v1/commands", json={"type": "list_sessions"}).status_code == 401
        http.post("/ui/logout", follow_redirects=False)
        assert http.get("/docs").status_code == 401
    bus.close()

"""The browser inspector's pages over HTTP (issue 41): what each page says equals what
the bus's queries answer; content is escaped; auth, CSP and read-only routes."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
import re
from typing import Any
from urllib.parse import quote

import markupsafe
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from inspector_fixture import CANARY, SETTINGS, SID, build

from context_compaction.infrastructure.inspector import mount
from context_compaction.infrastructure.inspector.routes import COOKIE, COOKIE_MAX_AGE, cookie_value

TOKEN = "inspector-test-token-0123456789"


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The inspected session, built once per backend for the module: the tests given it
    only read it (one was ~0.7 s a test to build, 40 tests). A test that changes the
    session takes ``fresh_built``."""
    from backends import Databases, postgres_reachable

    if request.param == "postgres" and (problem := postgres_reachable()) is not None:
        pytest.fail(f"PostgreSQL is not reachable ({problem})", pytrace=False)  # never skip (issue 5)
    dbs = Databases(request.param, tmp_path_factory.mktemp("inspector"))
    h = dbs.harness("main", **SETTINGS)
    facts = build(h.bus)
    yield h.bus, facts
    dbs.cleanup()


@pytest.fixture
def fresh_built(make_harness: Any) -> Any:
    h = make_harness("main", **SETTINGS)
    facts = build(h.bus)
    return h.bus, facts


def client(bus: Any, token: str | None = None) -> TestClient:
    app = FastAPI()
    mount(app, bus, token)
    return TestClient(app, follow_redirects=False)


def q(bus: Any, **command: Any) -> dict[str, Any]:
    envelope = bus.dispatch_json(command)
    assert envelope["ok"], envelope
    return envelope["result"]


def cells(page: str, table_id: str) -> list[list[str]]:
    """The text of each body row's cells of the table ``table_id``."""
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', page, re.S)
    assert table, f"no table {table_id}"
    body = table.group(0).split("<tbody>", 1)[1]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in rows]


def test_the_grid_shows_info_s_numbers_and_marks_the_trigger(built: Any) -> None:
    bus, _ = built
    page = client(bus).get(f"/ui/session?id={SID}")
    assert page.status_code == 200
    usage = q(bus, type="get_context_usage", session_id=SID)
    shown = {row[0]: int(row[1].replace(",", "")) for row in cells(page.text, "grid") if row[2]}
    for part, tokens in usage["breakdown"].items():
        assert shown[part] == tokens, part
    assert shown["reserve"] == usage["reserve_tokens"]
    assert shown["free"] == max(0, usage["effective_window_tokens"] - usage["reserve_tokens"]
                                - sum(usage["breakdown"].values()))
    assert f'id="threshold">{usage["compression_threshold_tokens"]:,}<' in page.text
    assert 'class="trigger"' in page.text


def test_the_chart_marks_every_compaction_and_the_timeline_pages(built: Any) -> None:
    bus, facts = built
    c = client(bus)
    page = c.get(f"/ui/session?id={SID}").text
    checkpoints = q(bus, type="list_checkpoints", session_id=SID)["checkpoints"]
    assert page.count('class="mark mark-compaction"') == len(checkpoints) == 2
    assert "<polyline" in page and "<script" not in page
    version = q(bus, type="read_session_events", session_id=SID, limit=1)["version"]
    first = cells(page, "timeline")
    assert len(first) == 50 and first[0][0] == str(version) and first[-1][0] == str(version - 49)
    older = cells(c.get(f"/ui/session?id={SID}&page=1").text, "timeline")
    assert older[0][0] == str(version - 50)
    for cp in checkpoints:
        assert f"cp={cp['checkpoint_id']}" in page


def test_a_dropped_item_links_to_the_message_that_states_it(built: Any) -> None:
    bus, facts = built
    c = client(bus)
    cp = facts["second"]
    page = c.get(f"/ui/checkpoint?id={SID}&cp={cp['checkpoint_id']}").text
    dropped = cp["ledger"]["dropped_items"]
    assert dropped and f"<b>{cp['ledger']['dropped']}</b> dropped" in page
    links = re.findall(r'class="dropped-link" href="([^"]+)"', page)
    assert len(links) == len(dropped)
    for item, link in list(zip(dropped, links))[:5]:
        target = c.get(html.unescape(link))
        message = re.search(rf'<li id="m-{item["seq"]}".*?</li>', target.text, re.S)
        assert message, link
        assert str(markupsafe.escape(item["value"])) in message.group(0)


def test_the_checkpoint_page_diffs_against_the_previous_summary(built: Any) -> None:
    bus, facts = built
    page = client(bus).get(f"/ui/checkpoint?id={SID}&cp={facts['second']['checkpoint_id']}").text
    checkpoints = {cp["checkpoint_id"]: cp for cp in q(bus, type="list_checkpoints", session_id=SID)["checkpoints"]}
    old = checkpoints[facts["first"]["checkpoint_id"]]["summary"]
    new = checkpoints[facts["second"]["checkpoint_id"]]["summary"]

    def lines(text: str) -> set[str]:
        return {x.strip().lstrip("-* ").strip() for x in text.splitlines()} - {""}

    forgotten = re.findall(r"<li>(.*?)</li>", page.split('id="forgotten"')[1].split("</ul>")[0])
    assert {html.unescape(x) for x in forgotten} == lines(old) - lines(new) != set()
    added = re.findall(r"<li>(.*?)</li>", page.split('id="added"')[1].split("</ul>")[0])
    assert {html.unescape(x) for x in added} == lines(new) - lines(old)
    assert f"from seq {facts['second']['first_retained_seq']}</a>" in page
    assert 'id="attempt"' in page


def test_the_version_picker_shows_what_replay_session_returns(built: Any) -> None:
    bus, facts = built
    c = client(bus)
    checkpoints = q(bus, type="list_checkpoints", session_id=SID)["checkpoints"]
    for version in (3, checkpoints[0]["version"], checkpoints[1]["version"] - 1):
        page = c.get(f"/ui/history?id={SID}&at={version}").text
        replay = q(bus, type="replay_session", session_id=SID, at_version=version)
        pairs = re.findall(r'<li class="pm role-[^"]*"><span class="role">([^<]*)</span><pre>(.*?)</pre></li>',
                           page, re.S)
        expected = [(m["role"], m.get("content") if isinstance(m.get("content"), str) else
                     "\n".join(p.get("text", "") for p in m.get("content") or []))
                    for m in replay["projection"]["messages"]]
        assert [(r, html.unescape(t)) for r, t in pairs] == expected
        assert len(pairs) == len(expected) > 0
        assert f"active checkpoint {replay['active_checkpoint_id'] or 'none'}" in page


def test_history_marks_pins_deletions_and_pairs_tool_calls(built: Any) -> None:
    bus, facts = built
    c = client(bus)
    page = c.get(f"/ui/history?id={SID}").text
    pinned = re.search(rf'<li id="m-{facts["pinned"]}" class="([^"]*)"', page)
    deleted = re.search(rf'<li id="m-{facts["deleted"]}" class="([^"]*)"', page)
    assert pinned and "pinned" in pinned.group(1).split()
    assert deleted and "invalidated" in deleted.group(1).split()
    call_seq = next(m["seq"] for m in q(bus, type="get_history", session_id=SID)["messages"] if m["tool_calls"])
    around = c.get(f"/ui/history?id={SID}&from={call_seq - 1}").text
    assert 'id="call-call_read_1"' in around
    assert f'<a href="#m-{call_seq}">call_read_1 (seq {call_seq})</a>' in around


def test_search_shows_search_history_s_hits(built: Any) -> None:
    bus, _ = built
    page = client(bus).get(f"/ui/history?id={SID}&q=module_7.py").text
    hits = q(bus, type="search_history", session_id=SID, query="module_7.py", limit=50, include_invalidated=True)
    rows = cells(page, "hits")
    assert [r[0] for r in rows] == [f"seq {h['seq']}" for h in hits["hits"]] and rows


def test_every_piece_of_content_is_escaped(built: Any) -> None:
    bus, _ = built
    c = client(bus)
    seq = next(m["seq"] for m in q(bus, type="get_history", session_id=SID)["messages"] if m["content"] == CANARY)
    pages = [c.get(f"/ui/history?id={SID}&from={seq}").text,
             c.get(f"/ui/history?id={SID}&q=bold").text,
             c.get(f"/ui/history?id={SID}&at={q(bus, type='read_session_events', session_id=SID, limit=1)['version']}").text]
    for page in pages:
        assert "<script" not in page and "onerror=\"" not in page and "<img" not in page
    assert str(markupsafe.escape(CANARY)) in pages[0]
    # a hostile session id and query are escaped too (in text and in attributes)
    hostile = '"><script>x()</script>'
    for url in (f"/ui?q={quote(hostile)}", f"/ui/session?id={quote(hostile)}",
                f"/ui/history?id={quote(SID)}&q={quote(hostile)}"):
        answer = c.get(url)
        assert "<script>x()" not in answer.text, url


def test_every_answer_carries_a_strict_csp_and_no_external_origin(built: Any) -> None:
    bus, facts = built
    c = client(bus)
    for url in ("/ui", f"/ui/session?id={SID}", f"/ui/history?id={SID}",
                f"/ui/checkpoint?id={SID}&cp={facts['first']['checkpoint_id']}", "/ui/login", "/ui/static/inspector.css"):
        answer = c.get(url)
        assert answer.status_code == 200, url
        csp = answer.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "unsafe" not in csp
        assert answer.headers["x-content-type-options"] == "nosniff"
        if "html" in answer.headers["content-type"]:
            assert not re.search(r'(?:src|href|action)="(?:https?:)?//', answer.text), url
            assert "<script" not in answer.text and " style=" not in answer.text


def test_the_token_guards_every_page_by_header_or_login_cookie(built: Any) -> None:
    bus, _ = built
    c = client(bus, TOKEN)
    assert c.get("/ui").status_code == 303 and c.get("/ui").headers["location"] == "/ui/login"
    assert c.get(f"/ui/session?id={SID}", headers={"Authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
    assert c.get(f"/ui/session?id={SID}", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert c.post("/ui/login", data={"token": "not-it"}).status_code == 401
    done = c.post("/ui/login", data={"token": TOKEN})
    assert done.status_code == 303
    cookie = done.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower() and TOKEN not in cookie
    assert re.search(rf"{COOKIE}=\d+\.[0-9a-f]{{64}};", cookie) and "max-age=43200" in cookie.lower()
    assert c.get(f"/ui/session?id={SID}").status_code == 200  # the client keeps the cookie
    c.cookies.clear()
    c.cookies.set(COOKIE, "0" * 64)
    assert c.get("/ui").status_code == 303


def test_no_inspector_route_changes_state(built: Any) -> None:
    bus, _ = built
    app = FastAPI()
    mount(app, bus, TOKEN)
    posts = {r.path for r in app.routes if "POST" in getattr(r, "methods", set())}
    assert posts == {"/ui/login", "/ui/logout"}
    version = q(bus, type="read_session_events", session_id=SID, limit=1)["version"]
    c = TestClient(app, follow_redirects=False)
    assert c.post(f"/ui/session?id={SID}", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 405
    c.post("/ui/login", data={"token": TOKEN})
    for url in ("/ui", f"/ui/session?id={SID}", f"/ui/history?id={SID}&at=5&q=module"):
        assert c.get(url).status_code == 200
    assert q(bus, type="read_session_events", session_id=SID, limit=1)["version"] == version


def test_an_unknown_session_or_checkpoint_is_a_404_page(built: Any) -> None:
    bus, _ = built
    c = client(bus)
    assert c.get("/ui/session?id=nobody").status_code == 404
    assert c.get(f"/ui/checkpoint?id={SID}&cp=cp_nope").status_code == 404
    assert c.get(f"/ui/history?id={SID}&at=999999").status_code == 404


def test_the_sessions_list_filters_by_id_and_pages(make_harness: Any) -> None:
    bus = make_harness("main", **SETTINGS).bus
    for n in range(30):
        q(bus, type="start_session", session_id=f"{'alpha' if n % 3 else 'beta'}-{n:02d}", model="tiny")
    c = client(bus)
    first, second = cells(c.get("/ui").text, "sessions"), cells(c.get("/ui?page=1").text, "sessions")
    assert len(first) == 25 and len(second) == 5
    listed = [s["session_id"] for s in q(bus, type="list_sessions", limit=100)["sessions"]]
    assert [r[0] for r in first + second] == listed
    beta = cells(c.get("/ui?q=BETA").text, "sessions")
    assert sorted(r[0] for r in beta) == sorted(s for s in listed if "beta" in s) and len(beta) == 10
    row = first[0]
    usage = q(bus, type="get_context_usage", session_id=row[0])
    assert row[3] == f"{usage['used_tokens']:,} / {usage['effective_window_tokens']:,}"


def test_serve_mounts_the_inspector_behind_the_api_token(built: Any) -> None:
    from context_compaction.infrastructure.http import create_app

    bus, _ = built
    c = TestClient(create_app(bus, token=TOKEN, max_body_bytes=1_000_000), follow_redirects=False)
    assert c.get(f"/ui/session?id={SID}").status_code == 303
    assert c.get(f"/ui/session?id={SID}", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert "/ui" not in c.get("/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).json()["paths"]


def test_no_page_logs_message_content(built: Any, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    bus, facts = built
    c = client(bus)
    with caplog.at_level(logging.DEBUG):
        for url in ("/ui", f"/ui/session?id={SID}", f"/ui/history?id={SID}&q=canary&at=5",
                    f"/ui/checkpoint?id={SID}&cp={facts['first']['checkpoint_id']}"):
            assert c.get(url).status_code == 200
    # (the test client's own log line names the URL it asked for: not the server's)
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records if not r.name.startswith("httpx"))
    assert "canary" not in logged and "module_3.py" not in logged and "Edit src/pkg" not in logged


def test_a_failed_compaction_attempt_is_on_the_timeline(make_harness: Any, provider: Any) -> None:
    from fakeprovider import Reply
    from helpers import FAKE_MODEL, llm_settings
    from inspector_fixture import facts

    bus = make_harness("main", **llm_settings(provider.base_url, token_limit=4000, timeout=2.0),
                       context_compaction={"reserve_tokens": 1000, "keep_recent_tokens": 300}).bus
    q(bus, type="start_session", session_id="f", model=FAKE_MODEL)
    q(bus, type="append_messages", session_id="f", messages=facts(1, 20))
    provider.queue(Reply(status=500))
    assert bus.dispatch_json({"type": "compact", "session_id": "f"})["error"]["code"] == "summary_failed"
    attempt = q(bus, type="list_compaction_attempts", session_id="f")["attempts"][0]
    page = client(bus).get("/ui/session?id=f").text
    rows = cells(page, "timeline")
    assert rows[0][:3] == ["—", attempt["at"][:19].replace("T", " "), "AttemptFailed"]
    assert "summary_failed" in rows[0][3] and len(rows) == 1 + 1 + 38  # the attempt, started, the appends
    assert cells(page, "attempts")[0][2].startswith("summary_failed")


def test_a_deleted_session_still_shows_its_history_and_timeline(fresh_built: Any) -> None:
    bus, _ = fresh_built
    q(bus, type="delete_session", session_id=SID)
    c = client(bus)
    page = c.get(f"/ui/session?id={SID}")
    assert page.status_code == 200 and 'id="grid"' not in page.text and ">deleted</span>" in page.text
    assert cells(page.text, "timeline")[0][2] == "Deleted"
    assert c.get(f"/ui/history?id={SID}").text.count('<li id="m-') == 50


def test_a_checkpoint_chosen_in_the_picker_wins_over_the_number_box(built: Any) -> None:
    bus, _ = built
    version = q(bus, type="list_checkpoints", session_id=SID)["checkpoints"][0]["version"]
    page = client(bus).get(f"/ui/history?id={SID}&at=3&at={version}").text
    assert f"The context as of version {version}<" in page


HOSTILE = [
    "/ui?page=-1", "/ui?page=abc", "/ui?page=1.5", "/ui?page=999999999999999999", "/ui?page=%D9%A3",
    f"/ui/session?id={SID}&page=-3", f"/ui/session?id={SID}&page=x", f"/ui/session?id={SID}&chart=-1",
    f"/ui/session?id={SID}&chart=1e3", f"/ui/history?id={SID}&from=-5", f"/ui/history?id={SID}&from=0",
    f"/ui/history?id={SID}&from=abc", f"/ui/history?id={SID}&at=abc", f"/ui/history?id={SID}&at=0",
    f"/ui/history?id={SID}&at=-2", f"/ui/history?id={SID}&at=99999999999999999999999",
    f"/ui/history?id={SID}&q=%00", "/ui/session", "/ui/session?id=", "/ui/history?id=%00", "/ui/checkpoint",
]


def test_a_hostile_parameter_is_a_clear_400_never_a_500_nor_ignored(built: Any) -> None:
    bus, _ = built
    c = client(bus)
    for url in HOSTILE:
        page = c.get(url)
        assert page.status_code == 400, (url, page.status_code)
        assert "Bad request" in page.text and page.headers["Content-Security-Policy"], url


def test_the_picker_s_empty_checkpoint_choice_is_not_a_bad_parameter(built: Any) -> None:
    bus, _ = built
    version = q(bus, type="read_session_events", session_id=SID, limit=1)["version"]
    page = client(bus).get(f"/ui/history?id={SID}&at=4&at=")  # the form sends both fields
    assert page.status_code == 200 and "The context as of version 4<" in page.text
    assert client(bus).get(f"/ui/history?id={SID}&at={version + 1}").status_code == 404


def test_a_cross_site_login_or_logout_is_refused(built: Any) -> None:
    bus, _ = built
    c = client(bus, TOKEN)
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
                    {"Origin": "http://testserver.evil.example"}, {"Sec-Fetch-Site": "same-site"},
                    {"Origin": "http://testserver", "Sec-Fetch-Site": "cross-site"}):
        for path, data in (("/ui/login", {"token": TOKEN}), ("/ui/logout", {})):
            answer = c.post(path, data=data, headers=headers)
            assert answer.status_code == 403, (path, headers)
            assert "set-cookie" not in answer.headers and answer.headers["Content-Security-Policy"]
    same = c.post("/ui/login", data={"token": TOKEN},
                  headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"})
    assert same.status_code == 303 and COOKIE in same.headers["set-cookie"]
    assert c.post("/ui/login", data={"token": TOKEN}).status_code == 303  # no Origin: not a browser's form
    # our own form under Referrer-Policy: no-referrer: Chromium sends Origin "null"
    own = c.post("/ui/login", data={"token": TOKEN}, headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"})
    assert own.status_code == 303


class _Markup(HTMLParser):
    """Every element a page's markup creates, to find one that content smuggled in."""

    def __init__(self) -> None:
        super().__init__()
        self.smuggled: list[Any] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "img", "iframe", "object", "embed", "base", "style", "link") and tag != "link":
            self.smuggled.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name in ("src", "srcset", "style", "formaction", "xlink:href"):
                self.smuggled.append((tag, name, value))
            if name == "href" and tag != "link" and not (value or "").startswith(("/ui", "#")):
                self.smuggled.append((tag, name, value))


def test_hostile_ids_models_tool_calls_and_summaries_never_become_markup(make_harness: Any, provider: Any) -> None:
    from fakeprovider import Reply
    from helpers import FAKE_MODEL, llm_settings
    from inspector_fixture import facts

    x = '"><script>alert(1)</script><img src=x onerror=alert(2)><a href="http://evil.invalid/">\'`'
    settings = llm_settings(provider.base_url, token_limit=4000, timeout=2.0)
    settings["models"][f"m{x}"] = {"token_limit": 4000}
    bus = make_harness("main", **settings, context_compaction={"reserve_tokens": 1000, "keep_recent_tokens": 300}).bus
    sid = f"s{x}"
    q(bus, type="start_session", session_id=sid, model=f"m{x}")
    q(bus, type="append_messages", session_id=sid, messages=facts(1, 20) + [
        {"role": "user", "content": [{"type": "text", "text": f"part{x}"}], "name": f"n{x}"},
        {"role": "assistant", "content": x, "reasoning": f"r{x}",
         "tool_calls": [{"id": f"c{x}", "name": f"f{x}", "arguments": json.dumps({"a": x})}]},
        {"role": "tool", "tool_call_id": f"c{x}", "name": f"f{x}", "content": f"res{x}"}])
    assert not bus.dispatch_json({"type": "compact", "session_id": sid})["ok"]  # a failed attempt, model x
    q(bus, type="start_session", session_id="b", model=FAKE_MODEL)
    q(bus, type="append_messages", session_id="b", messages=facts(1, 60))
    provider.queue(Reply(text=f"# Goal {x}\n- item {x} (seq 1)\n- (seq 2{x}) (seq 3)\n{x}\n## {x}"))
    cp = q(bus, type="compact", session_id="b")["checkpoint_id"]
    assert x in q(bus, type="list_checkpoints", session_id="b")["checkpoints"][0]["summary"]
    c = client(bus)
    s = quote(sid, safe="")
    urls = [f"/ui?q={quote(x)}", "/ui", f"/ui/session?id={s}", f"/ui/history?id={s}", f"/ui/history?id={s}&q=part",
            f"/ui/history?id={s}&q={quote(x)}", f"/ui/history?id={s}&at=3", f"/ui/checkpoint?id={s}&cp={quote(x)}",
            f"/ui/session?id={quote(x)}", "/ui/session?id=b", f"/ui/checkpoint?id=b&cp={cp}", "/ui/history?id=b&at=3"]
    for url in urls:
        answer = c.get(url)
        assert answer.status_code in (200, 404), url
        markup = _Markup()
        markup.feed(answer.text)
        assert not markup.smuggled, (url, markup.smuggled)
    # the summary is rendered (a heading), its markup shown as text
    assert "<h3>Goal &quot;&gt;&lt;script&gt;" in c.get(f"/ui/checkpoint?id=b&cp={cp}").text


def test_each_checkpoint_shows_its_own_attempt_when_two_have_the_same_tokens(make_harness: Any) -> None:
    from inspector_fixture import facts

    bus = make_harness("main", **SETTINGS).bus
    q(bus, type="start_session", session_id="twice", model="tiny")
    q(bus, type="append_messages", session_id="twice", messages=facts(1, 40))
    first = q(bus, type="compact", session_id="twice")["checkpoint_id"]
    q(bus, type="revert_checkpoint", session_id="twice", checkpoint_id=first)
    second = q(bus, type="compact", session_id="twice")["checkpoint_id"]
    cps = {cp["checkpoint_id"]: cp for cp in q(bus, type="list_checkpoints", session_id="twice")["checkpoints"]}
    assert (cps[first]["tokens_before"], cps[first]["tokens_after"]) == (
        cps[second]["tokens_before"], cps[second]["tokens_after"])  # the case this test is about
    attempts = q(bus, type="list_compaction_attempts", session_id="twice")["attempts"]
    assert len(attempts) == 2 and attempts[0]["at"] != attempts[1]["at"]
    assert [a["checkpoint_id"] for a in attempts] == [second, first]  # each names what it made
    c = client(bus)
    for cp, attempt in ((second, attempts[0]), (first, attempts[1])):  # newest first
        page = c.get(f"/ui/checkpoint?id=twice&cp={cp}").text
        shown = re.search(r'id="attempt-at">([^<]*)<', page)
        assert shown and shown.group(1) == attempt["at"][:23].replace("T", " "), cp


def test_a_forged_or_expired_login_cookie_is_refused(built: Any) -> None:
    import time

    bus, _ = built
    c = client(bus, TOKEN)
    now = int(time.time())
    c.cookies.set(COOKIE, cookie_value(TOKEN, now - 60))
    assert c.get("/ui").status_code == 200
    issued, mac = cookie_value(TOKEN, now - 60).split(".")
    for forged in (cookie_value(TOKEN, now - COOKIE_MAX_AGE - 1),  # expired
                   cookie_value(TOKEN, now + 3600),  # from the future
                   f"{now}.{mac}",  # a fresh date on an old mac
                   cookie_value("another-token-0123456789abc", now),  # another server's
                   mac, TOKEN, f"{issued}.", ".", f"x{issued}.{mac}", f"-{issued}.{mac}"):
        c.cookies.clear()
        c.cookies.set(COOKIE, forged)
        assert c.get("/ui").status_code == 303, forged


def test_a_failed_attempt_between_two_timeline_pages_is_on_one_of_them(make_harness: Any, provider: Any) -> None:
    from fakeprovider import Reply
    from helpers import FAKE_MODEL, llm_settings
    from inspector_fixture import facts

    from context_compaction.infrastructure.inspector import views

    bus = make_harness("main", **llm_settings(provider.base_url, token_limit=4000, timeout=2.0),
                       context_compaction={"reserve_tokens": 1000, "keep_recent_tokens": 300}).bus
    q(bus, type="start_session", session_id="f", model=FAKE_MODEL)
    q(bus, type="append_messages", session_id="f", messages=facts(1, 30))
    provider.queue(Reply(status=500))
    assert bus.dispatch_json({"type": "compact", "session_id": "f"})["error"]["code"] == "summary_failed"
    # exactly one page of events after the attempt: it falls between page 0 and page 1
    q(bus, type="append_messages", session_id="f", messages=facts(30, 55)[:views.EVENTS_PER_PAGE])
    c = client(bus)
    rows = cells(c.get("/ui/session?id=f").text, "timeline") + cells(c.get("/ui/session?id=f&page=1").text,
                                                                     "timeline")
    assert [r[2] for r in rows].count("AttemptFailed") == 1

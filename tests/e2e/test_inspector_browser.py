"""The inspector in a real browser (issue 41): headless Chromium (Debian's ``chromium``
and ``chromium-driver``, installed by ``.ci/run``) driven by selenium opens every page
that ``ctxc inspect`` serves, on the demo's database and on a PostgreSQL one, and checks
what a person reads there against the bus's own answers. An XSS canary in a message
must never run, and no page may ask another origin for anything. Screenshots are saved
(``$INSPECTOR_SCREENSHOTS`` or the test's temporary folder).

Without the browser the tests skip, unless ``INSPECTOR_REQUIRE_BROWSER=1`` (``.ci/run`` sets
it), when they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspector_fixture import CANARY, FIRED, SETTINGS, build

from context_compaction import Settings, bootstrap

TOKEN = "browser-test-token-0123456789abc"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
CTXC = str(Path(sys.executable).with_name("ctxc"))


def _browser_or_skip() -> None:
    if CHROMIUM and DRIVER:
        return
    if os.environ.get("INSPECTOR_REQUIRE_BROWSER") == "1":
        pytest.fail("chromium and chromedriver are required (INSPECTOR_REQUIRE_BROWSER=1): "
                    "apt-get install -y chromium chromium-driver")
    pytest.skip("no chromium/chromedriver on this machine")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1600",
                "--disable-background-networking", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER or ""), options=options)
    yield d
    d.quit()


class Inspector:
    """``ctxc inspect`` in its own process, on a database the test built."""

    def __init__(self, url: str, env: dict[str, str]) -> None:
        self.db = url
        self.proc = subprocess.Popen([CTXC, "inspect", "--db", url, "--port", "0", "--token", TOKEN],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        assert line.startswith("inspector: http://127.0.0.1:"), (line, self.proc.stderr and self.proc.stderr.read())
        self.url = line.split(": ", 1)[1].strip()
        self.base = self.url.rsplit("/ui", 1)[0]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


def _env() -> dict[str, str]:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("CTXC_HTTP_TOKEN", None)
    return env


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Inspector, str]]:
    _browser_or_skip()
    work = tmp_path_factory.mktemp("demo")
    subprocess.run([CTXC, "demo", "--workdir", str(work / "d")], check=True, capture_output=True,
                   env=_env(), timeout=600)
    url = f"sqlite:///{work / 'd' / 'demo.db'}"
    bus = bootstrap(Settings(database_url=url))
    sid = bus.dispatch_json({"type": "list_sessions"})["result"]["sessions"][0]["session_id"]
    # the canary, in the demo's own session
    assert bus.dispatch_json({"type": "append_messages", "session_id": sid,
                              "messages": [{"role": "user", "content": CANARY}]})["ok"]
    bus.close()
    inspector = Inspector(url, _env())
    yield inspector, sid
    inspector.close()


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Inspector, str]]:
    _browser_or_skip()
    from backends import Databases, postgres_reachable

    if postgres_reachable() is not None:
        pytest.fail(f"PostgreSQL is part of the suite: {postgres_reachable()}")
    dbs = Databases("postgres", tmp_path_factory.mktemp("pg"))
    h = dbs.harness("main", **SETTINGS)
    build(h.bus)
    inspector = Inspector(h.url, _env())
    yield inspector, "inspect-me"
    inspector.close()
    dbs.cleanup()


def _shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("INSPECTOR_SCREENSHOTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _same_origin_only(d: Any, base: str) -> None:
    entries = d.execute_script(
        "return performance.getEntries().map(e => e.name).filter(n => /^[a-z]+:/.test(n))")
    foreign = [n for n in entries if not n.startswith(base + "/")]
    assert not foreign, foreign
    # nothing on the page needed what the CSP forbids (an inline style, a script, ...)
    refused = [e["message"] for e in d.get_log("browser") if "Content Security Policy" in e["message"]]
    assert not refused, refused


def _click(d: Any, element: Any) -> None:
    """Click, then wait for the next page to replace this one."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    page = d.find_element(By.TAG_NAME, "html")
    element.click()
    # (Chrome may answer the staleness probe of a page being replaced with "Node with given
    # id does not belong to the document" instead of a stale-element error: that is stale too)
    WebDriverWait(d, 30).until(lambda _: _gone(expected_conditions.staleness_of(page)))


def _gone(stale: Any) -> bool:
    from selenium.common.exceptions import WebDriverException

    try:
        return bool(stale(None))
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise


def _visit(d: Any, inspector: Inspector, path: str) -> None:
    d.get(inspector.base + path)
    assert d.title != FIRED, f"the XSS canary ran on {path}"
    _same_origin_only(d, inspector.base)


@pytest.mark.parametrize("which", ["demo", "postgres"])
def test_every_page_reads_right_in_a_browser(which: str, driver: Any, request: pytest.FixtureRequest,
                                             tmp_path: Path, record_property: Any) -> None:
    from selenium.webdriver.common.by import By

    inspector, sid = request.getfixturevalue(which)
    d, shots = driver, _shots(tmp_path)
    bus = bootstrap(Settings(database_url=inspector.db))
    try:
        # Login: the form sets the cookie; before it, every page sends the reader there.
        d.delete_all_cookies()
        _visit(d, inspector, "/ui")
        assert d.current_url.endswith("/ui/login")
        d.find_element(By.ID, "token").send_keys(TOKEN)
        _click(d, d.find_element(By.CSS_SELECTOR, "form.login button"))
        assert d.find_element(By.TAG_NAME, "h1").text == "Sessions"
        cookie = d.get_cookie("ctxc_inspector")
        assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] != TOKEN
        rows = d.find_elements(By.CSS_SELECTOR, "#sessions tbody tr.session-row")
        assert sid in [r.find_element(By.TAG_NAME, "a").text for r in rows]
        d.save_screenshot(str(shots / f"{which}-sessions.png"))

        # A session: the grid's numbers are /info's.
        _click(d, d.find_element(By.LINK_TEXT, sid))
        usage = bus.dispatch_json({"type": "get_context_usage", "session_id": sid})["result"]
        for part, tokens in usage["breakdown"].items():
            cell = d.find_element(By.CSS_SELECTOR, f'#grid tr[data-part="{part}"] td.tokens')
            assert cell.text == f"{tokens:,}", part
        assert d.find_element(By.ID, "threshold").text == f"{usage['compression_threshold_tokens']:,}"
        checkpoints = bus.dispatch_json({"type": "list_checkpoints", "session_id": sid})["result"]["checkpoints"]
        marks = d.find_elements(By.CSS_SELECTOR, "svg.chart line.mark-compaction")
        assert len(marks) == len(checkpoints) > 0
        assert len(d.find_elements(By.CSS_SELECTOR, "#timeline tbody tr")) == 50
        _same_origin_only(d, inspector.base)
        d.save_screenshot(str(shots / f"{which}-session.png"))

        # Every checkpoint; a dropped item's link lands on the message that states it.
        clicked = 0
        for cp in checkpoints:
            _visit(d, inspector, f"/ui/checkpoint?id={sid}&cp={cp['checkpoint_id']}")
            ledger = cp["ledger"] or {}
            assert d.find_element(By.TAG_NAME, "h1").text == f"Checkpoint {cp['checkpoint_id']}"
            if ledger:
                assert d.find_element(By.ID, "ledger-counts").text.startswith(f"{ledger['items_total']} items")
            d.save_screenshot(str(shots / f"{which}-checkpoint-{cp['generation']}.png"))
            if ledger.get("dropped_items") and not clicked:
                item = ledger["dropped_items"][0]
                _click(d, d.find_element(By.CSS_SELECTOR, "a.dropped-link"))
                assert d.current_url.endswith(f"#m-{item['seq']}")
                assert item["value"] in d.find_element(By.ID, f"m-{item['seq']}").text
                clicked += 1
        if which == "postgres":
            assert clicked == 1  # its fixture drops ledger items

        # History: the canary is shown as text, never run.
        history = bus.dispatch_json({"type": "get_history", "session_id": sid})["result"]["messages"]
        canary = next(m["seq"] for m in history if m["content"] == CANARY)
        _visit(d, inspector, f"/ui/history?id={sid}&from={canary}")
        assert CANARY in d.find_element(By.ID, f"m-{canary}").text
        assert not d.find_elements(By.CSS_SELECTOR, f"#m-{canary} pre *, #messages img, #messages script")
        d.save_screenshot(str(shots / f"{which}-history.png"))

        # Search, through the form.
        box = d.find_element(By.ID, "q")
        box.send_keys("canary")
        _click(d, d.find_element(By.CSS_SELECTOR, "#search-form button"))
        assert d.find_element(By.CSS_SELECTOR, "#hits td a").text == f"seq {canary}"

        # The version picker: the projection replay_session returns, message by message.
        version = checkpoints[-1]["version"]
        box = d.find_element(By.ID, "at")
        box.clear()
        box.send_keys(str(version))
        _click(d, d.find_element(By.CSS_SELECTOR, "#version-form button"))
        replay = bus.dispatch_json({"type": "replay_session", "session_id": sid, "at_version": version})["result"]
        shown = d.find_elements(By.CSS_SELECTOR, "#replay li.pm")
        wanted = replay["projection"]["messages"][:200]
        assert len(shown) == len(wanted) > 0
        for li, message in zip(shown, wanted, strict=True):
            assert li.find_element(By.CLASS_NAME, "role").text.lower() == message["role"]
            text = message["content"] if isinstance(message["content"], str) else ""
            if text:
                assert li.find_element(By.TAG_NAME, "pre").text.strip() == text.strip()
        assert f"active checkpoint {replay['active_checkpoint_id'] or 'none'}" in d.find_element(By.ID, "replay-facts").text
        assert d.title != FIRED
        _same_origin_only(d, inspector.base)
        d.save_screenshot(str(shots / f"{which}-version.png"))
        record_property("screenshots", str(shots))
    finally:
        bus.close()

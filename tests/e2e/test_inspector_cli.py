"""``ctxc inspect`` (issue 41): serves the inspector alone on 127.0.0.1 and prints the URL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

CTXC = str(Path(sys.executable).with_name("ctxc"))


def _start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([CTXC, "inspect", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    return proc, [first]


def test_inspect_prints_its_url_and_a_token_made_for_the_run(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("CTXC_HTTP_TOKEN", None)
    db = tmp_path / "x.db"
    subprocess.run([CTXC, "dispatch", "--db", str(db)], input='{"type": "start_session", "session_id": "s", '
                   '"model": "gpt-4o"}\n', text=True, check=True, capture_output=True, env=env)
    proc, lines = _start(["--db", str(db), "--port", "0"], env)
    try:
        assert proc.stdout is not None
        lines.append(proc.stdout.readline())
        assert lines[0].startswith("inspector: http://127.0.0.1:") and lines[0].rstrip().endswith("/ui")
        assert lines[1].startswith("token (paste it into the login form): ")
        url, token = lines[0].split(": ", 1)[1].strip(), lines[1].rsplit(" ", 1)[1].strip()
        assert len(token) >= 16
        assert httpx.get(url, follow_redirects=False).status_code == 303
        page = httpx.get(url, headers={"Authorization": f"Bearer {token}"})
        assert page.status_code == 200 and ">s</a>" in page.text
        # only the inspector: the command endpoint is not served here
        assert httpx.post(url.replace("/ui", "/v1/commands"), json={"type": "list_sessions"},
                          headers={"Authorization": f"Bearer {token}"}).status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_inspect_refuses_a_missing_database_and_a_weak_token(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    missing = subprocess.run([CTXC, "inspect", "--db", str(tmp_path / "none.db"), "--port", "0"],
                             capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode != 0 and not (tmp_path / "none.db").exists()
    weak = subprocess.run([CTXC, "inspect", "--db", str(tmp_path / "none.db"), "--token", "short"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert weak.returncode == 2 and "at least 16" in weak.stderr


def test_inspect_refuses_a_port_out_of_range_as_a_usage_error(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    db = tmp_path / "x.db"
    subprocess.run([CTXC, "dispatch", "--db", str(db)], input='{"type": "start_session", "session_id": "s", '
                   '"model": "gpt-4o"}\n', text=True, check=True, capture_output=True, env=env)
    for port in ("70000", "-1"):
        done = subprocess.run([CTXC, "inspect", "--db", str(db), "--port", port],
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2 and "0 to 65535" in done.stderr and "internal_error" not in done.stderr, port

"""`ctxc fork`, `ctxc sessions --tree`, `ctxc verify` and the same commands over HTTP (issue 42)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from cli_inprocess import run_cli
from context_compaction import Settings, bootstrap
from context_compaction.infrastructure.http import create_app

TOKEN = "tree-token"


def seed(db: Path) -> None:
    bus = bootstrap(Settings(database_url=f"sqlite:///{db}", summarizer="extractive"))
    try:
        for command in (
            {"type": "start_session", "session_id": "root", "model": "gpt-4o"},
            {"type": "append_messages", "session_id": "root",
             "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]},
        ):
            assert bus.dispatch_json(command)["ok"]
    finally:
        bus.close()


def test_ctxc_fork_sessions_tree_and_verify(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "tree.db"
    seed(db)
    assert run_cli(["fork", "root", "child", "--db", str(db), "--at-seq", "1"]) == 0
    assert "child: forked from root" in capsys.readouterr().out
    assert run_cli(["fork", "child", "grandchild", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parent_session_id"] == "child"
    assert run_cli(["sessions", "--tree", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("root") and "└ child" in lines[1] and "└ grandchild" in lines[2]
    assert run_cli(["history", "grandchild", "--db", str(db), "--json"]) == 0
    assert [m["content"] for m in json.loads(capsys.readouterr().out)["messages"]] == ["hello"]
    assert run_cli(["fork", "root", "root", "--db", str(db)]) == 1  # invalid_command
    capsys.readouterr()
    assert run_cli(["verify", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tree"] == []


def test_fork_and_tree_over_http(tmp_path: Path) -> None:
    db = tmp_path / "http.db"
    seed(db)
    bus = bootstrap(Settings(database_url=f"sqlite:///{db}", summarizer="extractive"))
    try:
        transport = httpx.ASGITransport(app=create_app(bus, token=TOKEN, max_body_bytes=64_000))

        async def go() -> list[httpx.Response]:
            async with httpx.AsyncClient(transport=transport, base_url="http://test",
                                         headers={"Authorization": f"Bearer {TOKEN}"}) as client:
                return [
                    await client.post("/v1/commands", json={"type": "fork_session", "session_id": "root",
                                                            "new_session_id": "web"}),
                    await client.post("/v1/commands", json={"type": "list_sessions", "tree": True}),
                    await client.post("/v1/commands", json={"type": "fork_session", "session_id": "root",
                                                            "new_session_id": "web"}),
                    await client.post("/v1/commands", json={"type": "purge_session", "session_id": "root"}),
                ]

        import asyncio

        forked, tree, again, purge = asyncio.run(go())
        assert forked.status_code == 200 and forked.json()["result"]["fork_seq"] == 2
        assert tree.json()["result"]["tree"][0]["children"][0]["session"]["session_id"] == "web"
        assert again.status_code == 409 and again.json()["error"]["code"] == "session_exists"
        assert purge.status_code == 409 and purge.json()["error"]["code"] == "session_has_children"
    finally:
        bus.close()

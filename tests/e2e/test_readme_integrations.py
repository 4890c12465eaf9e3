"""The "Framework integrations" recipes (docs/integrations.md; the README keeps one) run as written (issue 40), each with its
framework's own test model in place of the provider's, twice on one SQLite file (the
second run is a new process's bootstrap); and each adds at most 15 lines."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from context_compaction import Settings, bootstrap, commands

# Moved out of the README by issue 39; still run as written.
README = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
MAX_ADDED_LINES = 15


def recipe(name: str) -> str:
    section = README.read_text(encoding="utf-8").split("\n## Framework integrations\n", 1)[1].split("\n## ", 1)[0]
    part = section.split(f"\n### {name}\n", 1)[1].split("\n### ", 1)[0]
    match = re.search(r"```python\n(.*?)```", part, re.S)
    assert match is not None, f"no python block in recipe {name!r}"
    return match.group(1)


def run_recipe(name: str, model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The recipe with its ``model = ...`` line standing for the test model."""
    code = recipe(name)
    added = [line for line in code.splitlines() if line.rstrip().endswith("# + compaction")]
    assert 0 < len(added) <= MAX_ADDED_LINES, added
    lines = code.splitlines()
    assert sum(1 for line in lines if line.startswith("model = ")) == 1
    code = "\n".join("" if line.startswith("model = ") else line for line in lines)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app.py").write_text("raise SystemExit(1)\n", encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "recipe", "model": model}
    exec(compile(code, f"README:{name}", "exec"), namespace)  # noqa: S102 - the README's own code
    namespace["bus"].close()
    return namespace


def logged(tmp_path: Path, session_id: str) -> list[Any]:
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'agent.db'}"))
    try:
        return bus.dispatch(commands.GetHistory(session_id=session_id)).messages
    finally:
        bus.close()


def test_the_langchain_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain")
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    def model() -> Any:
        class Fake(FakeMessagesListChatModel):
            def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
                return self

        return Fake(responses=[
            AIMessage(content="", tool_calls=[{"name": "read_file", "args": {"path": "app.py"}, "id": "c1"}]),
            AIMessage(content="app.py exits with status 1."),
        ])

    run_recipe("LangChain / LangGraph", model(), tmp_path, monkeypatch)
    run_recipe("LangChain / LangGraph", model(), tmp_path, monkeypatch)  # a new process, a new graph
    # Both runs' messages, each once: question, call, result, answer.
    assert [m.role for m in logged(tmp_path, "ticket-4711")] == ["user", "assistant", "tool", "assistant"] * 2


def test_the_openai_agents_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("agents")
    from agents.testing.model import ScriptedModel, assistant_message, function_call

    def model(n: int) -> Any:
        return ScriptedModel([[function_call("read_file", {"path": "app.py"}, call_id=f"c{n}", item_id=f"fc{n}")],
                              [assistant_message("app.py exits with status 1.", item_id=f"m{n}")]])

    first = model(1)
    run_recipe("OpenAI Agents SDK", first, tmp_path, monkeypatch)
    second = model(2)
    run_recipe("OpenAI Agents SDK", second, tmp_path, monkeypatch)
    # The second run's model got the first run's history from our log.
    seen = second.calls[0].input
    assert [i.get("type") or "message" for i in seen] == ["message", "function_call", "function_call_output",
                                                           "message", "message"]
    assert [m.role for m in logged(tmp_path, "ticket-4711")] == ["user", "assistant", "tool", "assistant"] * 2


def test_the_pydantic_ai_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    seen: list[Any] = []

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(messages)
        if messages[-1].parts[-1].part_kind == "tool-return":
            return ModelResponse(parts=[TextPart("app.py exits with status 1.")])
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": "app.py"}, tool_call_id=f"c{len(seen)}")])

    run_recipe("pydantic-ai", FunctionModel(respond), tmp_path, monkeypatch)
    run_recipe("pydantic-ai", FunctionModel(respond), tmp_path, monkeypatch)
    # The second process's first request carried the first run from our log: the
    # question, call, result and answer before its own question.
    assert len(seen[2]) == 5
    assert len(logged(tmp_path, "ticket-4711")) == 8


def test_the_litellm_proxy_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: Any) -> None:
    from fakeprovider import Reply
    from helpers import FAKE_MODEL

    monkeypatch.setenv("CTXC_DATABASE_URL", f"sqlite:///{tmp_path / 'proxy.db'}")
    code = recipe("LiteLLM proxy")
    (tmp_path / "proxy_hooks.py").write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("proxy_hooks", tmp_path / "proxy_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    provider.queue(Reply(text="Hello."), Reply(text="Still here."))

    async def ask(messages: list[dict[str, Any]]) -> str:
        import litellm

        data = {"model": FAKE_MODEL, "messages": messages, "metadata": {"session_id": "ticket-4711"}}
        data = await hooks.compaction.async_pre_call_hook(None, None, data, "acompletion")
        response = await litellm.acompletion(model=data["model"], messages=data["messages"],
                                             api_base=provider.base_url, api_key="k")
        return str(response.choices[0].message.content)

    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    history.append({"role": "assistant", "content": asyncio.run(ask(history))})
    history.append({"role": "user", "content": "still there?"})
    assert asyncio.run(ask(history)) == "Still here."
    assert [m["role"] for m in provider.requests[-1].body["messages"]] == ["system", "user", "assistant", "user"]
    hooks.compaction.bus.close()
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'proxy.db'}"))
    assert [m.content for m in bus.dispatch(commands.GetHistory(session_id="ticket-4711")).messages] == [
        "hi", "Hello.", "still there?"]
    bus.close()


def test_the_readmes_integration_example_is_a_recipe_that_runs() -> None:
    """Issue 39: the README keeps one short framework example; it must be one of the
    recipes above, verbatim, so that the test that runs that recipe runs the README's."""
    readme = (README.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Framework integrations\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    assert blocks[0] == recipe("pydantic-ai")

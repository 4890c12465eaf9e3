"""The hand-out copy reads what the projection's builder found when it converted each
message (flat, or holding a dict or list), instead of looking at every message again
(issue 38, ADR 0098); what it copies is the same, on both of its paths."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from helpers import Harness, mixed_session
from projection_builders import rec

from context_compaction.application.contracts.commands import AppendMessages, GetProjection, PrepareTurn
from context_compaction.application.runtime import handout
from context_compaction.domain.projection import KnownFlat, ProjectionBuilder, calls_only, is_flat
from containers import containers

BACKENDS = ("memory",)


def _records() -> list[dict[str, Any]]:
    return [
        rec(1, "user"),
        rec(2, "assistant", calls=["k1", "k2"], content=None),
        rec(3, "tool", call_id="k1"),
        rec(4, "tool", call_id="k2"),
        rec(5, "user", content=[{"type": "text", "text": "parts"}]),
        rec(6, "assistant", content="done"),
        rec(7, "assistant", calls=["k3"], content=None),  # open: not stable, not known
    ]


def _shares_nothing(given: list[Any], cached: list[Any]) -> None:
    assert given == cached
    originals = {id(c) for c in containers(cached)}
    assert len(containers(given)) == len(originals)
    assert not any(id(c) in originals for c in containers(given))


def test_the_builder_names_exactly_the_stable_messages_that_hold_a_dict_or_list() -> None:
    builder = ProjectionBuilder(None)
    builder.extend(_records()[:3])
    builder.extend(_records()[3:])
    projection = builder.build(checkpoint=None, context_generation=0)
    known = projection.known_flat
    assert known is not None and known.messages is projection.messages
    assert (known.start, known.stop) == (0, 6)  # the open group at seq 7 is not stable
    assert sorted([*known.nested, *known.calls]) == [i for i in range(6) if not is_flat(projection.messages[i])]
    assert (list(known.calls), list(known.nested)) == ([1], [4])


def test_a_known_copy_shares_nothing_on_either_path(handout_path: str) -> None:
    builder = ProjectionBuilder(None)
    builder.extend(_records())
    projection = builder.build(checkpoint=None, context_generation=0)
    cached = [{"role": "system", "content": "s", "extra": {"a": [1]}}, *projection.messages]
    assert projection.known_flat is not None
    known = projection.known_flat.moved(cached, 1)
    given = handout.handed_out(cached, known)
    _shares_nothing(given, cached)
    assert type(given) is list and all(type(m) is dict for m in given)


def test_knowledge_about_another_list_is_refused() -> None:
    messages = [{"role": "user", "content": "x"}]
    with pytest.raises(ValueError):
        handout.handed_out(list(messages), KnownFlat(messages, 0, 1, []))


@pytest.mark.parametrize("command", ["prepare_turn", "get_projection"])
def test_the_bus_hands_the_builder_s_knowledge_to_the_copy_and_keeps_none_of_it(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, handout_path: str, command: str
) -> None:
    mixed_session(harness, "k")
    harness.bus.dispatch(AppendMessages(session_id="k", messages=[{"role": "user", "content": "more"}]))
    seen: list[KnownFlat | None] = []
    real = handout.handed_out

    def spy(messages: list[Any], known: KnownFlat | None = None) -> list[Any]:
        seen.append(known)
        return real(messages, known)

    monkeypatch.setattr(handout, "handed_out", spy)
    cmd = PrepareTurn(session_id="k", system_prompt="Be brief.") if command == "prepare_turn" \
        else GetProjection(session_id="k")
    result = harness.bus.dispatch(cmd)
    assert len(seen) == 1 and seen[0] is not None
    assert seen[0].stop - seen[0].start == len(result.messages) - (command == "prepare_turn")
    assert result.known_flat() is None  # the cache's list is not kept beside the copy
    before = copy.deepcopy(result.messages)
    for message in result.messages:
        message["content"] = "edited by the host"
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = "changed"
    assert harness.bus.dispatch(cmd).messages == before


def _call(**extra: Any) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, **extra}


@pytest.mark.parametrize(("message", "expected"), [
    ({"role": "assistant", "content": None, "tool_calls": [_call(), _call(id="c2")]}, True),
    ({"role": "assistant", "content": None, "tool_calls": []}, True),
    ({"role": "assistant", "content": None, "tool_calls": [_call(provider_specific_fields={"sig": "s"})]}, False),
    ({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}", "x": []}}]}, False),
    ({"role": "assistant", "content": None, "tool_calls": [_call()], "thinking_blocks": [{"t": "x"}]}, False),
    ({"role": "assistant", "content": [{"type": "text", "text": "x"}], "tool_calls": [_call()]}, False),
    ({"role": "assistant", "content": None, "tool_calls": ["not a call"]}, False),
    ({"role": "user", "content": "flat"}, False),
])
def test_only_tool_calls_of_the_builder_s_own_shape_take_the_call_free_copy(
    message: dict[str, Any], expected: bool
) -> None:
    assert calls_only(message) is expected


def test_a_copy_told_which_messages_are_tool_calls_shares_nothing(handout_path: str) -> None:
    cached = [{"role": "user", "content": "q"},
              {"role": "assistant", "content": None, "tool_calls": [_call(), _call(id="c2")]},
              {"role": "assistant", "content": None, "tool_calls": [_call(provider_specific_fields={"s": [1]})]},
              {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    given = handout.handed_out(cached, KnownFlat(cached, 0, 4, nested=[2], calls=[1]))
    _shares_nothing(given, cached)

"""The hand-out copy reads what the projection's builder found when it converted each
message (flat, or holding a dict or list), instead of looking at every message again
(issue 38, ADR 0098); what it copies is the same, on both of its paths."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from helpers import Harness, mixed_session
from projection_builders import rec

from context_compaction.application.contracts.commands import AppendMessages, GetProjection, PrepareTurn
from context_compaction.application.runtime import handout
from context_compaction.domain.messages import Message
from context_compaction.domain.projection import KnownFlat, ProjectionBuilder
from context_compaction.domain.provider_messages import ProviderIdentity, calls_only, is_flat
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


# ---------------------------------------------- any shape a host appends (property)
_IDENTITY = ProviderIdentity("openai", "gpt-4o")
_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
                     lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
                     max_leaves=4)
_parts = st.lists(st.sampled_from([{"type": "text", "text": "t"},
                                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]),
                  min_size=1, max_size=2)
_provider_fields = st.fixed_dictionaries({}, optional={
    "provider_specific_fields": st.dictionaries(st.text(max_size=2), _json, max_size=2),
    "thinking_blocks": st.lists(st.fixed_dictionaries({"type": st.just("thinking"), "thinking": st.text(max_size=2)}),
                                max_size=1),
    "function_call": st.fixed_dictionaries({"name": st.just("g"), "arguments": _json}),
    "reasoning_content": st.text(min_size=1, max_size=2),
    "refusal": st.text(max_size=2),
    "reasoning_items": st.lists(st.fixed_dictionaries({"type": st.just("reasoning"), "summary": st.lists(_json, max_size=1)}),
                                max_size=1),
    "annotations": st.lists(st.fixed_dictionaries({"type": st.just("url_citation"), "url_citation": _json}), max_size=1),
    "images": st.lists(st.fixed_dictionaries({"image_url": st.fixed_dictionaries({"url": st.just("u")})}), max_size=1),
    "audio": st.fixed_dictionaries({"id": st.just("a"), "transcript": st.text(max_size=2)}),
})


@st.composite
def _session(draw: Any) -> list[dict[str, Any]]:
    """Records as ``AppendMessages`` stores them (``Message.to_record``), every group closed."""
    out: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["user", "parts", "assistant", "calls"]))
        if kind == "user":
            messages = [{"role": "user", "content": "q"}]
        elif kind == "parts":
            messages = [{"role": "user", "content": draw(_parts)}]
        elif kind == "assistant":
            messages = [{"role": "assistant", "content": "a", **draw(_provider_fields)}]
        else:
            ids = [f"c{n}_{i}" for i in range(draw(st.integers(1, 2)))]
            private = draw(st.sampled_from([{}, {"provider_specific_fields": {"sig": "s"}},
                                            {"provider_specific_fields": {"sig": ["s"]}}]))
            messages = [{"role": "assistant", "content": draw(st.sampled_from([None, "a"])), **draw(_provider_fields),
                         "tool_calls": [{"id": i, "type": "function",
                                         "function": {"name": "f", "arguments": "{}"}, **private} for i in ids]}]
            messages += [{"role": "tool", "tool_call_id": i, "content": draw(st.sampled_from(["r", [{"type": "text", "text": "r"}]]))}
                         for i in ids]
        for message in messages:
            record = Message.model_validate(message).to_record(("openai", "gpt-4o"))
            out.append({**record, "seq": len(out) + 1, "created_at": "", "visible": True})
    return out


@settings(max_examples=150, deadline=None)
@given(records=_session(), split=st.integers(0, 30), lazy=st.booleans())
def test_the_builder_s_record_is_right_for_any_appended_shape_and_the_copy_shares_nothing(
    records: list[dict[str, Any]], split: int, lazy: bool
) -> None:
    builder = ProjectionBuilder(_IDENTITY)
    builder.extend(records[:split])
    builder.extend(records[split:])
    projection = builder.build(checkpoint=None, context_generation=0)
    known = projection.known_flat
    assert known is not None
    span = projection.messages[known.start:known.stop]
    for index, message in enumerate(span):  # exactly what a look at each message finds
        assert (index in known.calls) is (not is_flat(message) and calls_only(message)), message
        assert (index in known.nested) is (not is_flat(message) and not calls_only(message)), message
    was = handout.LAZY_TRACKING
    handout.LAZY_TRACKING = lazy and was  # (the type scan forced on any interpreter)
    try:
        given_ = handout.handed_out(projection.messages, known)
    finally:
        handout.LAZY_TRACKING = was
    # (not ``_shares_nothing``: a record may hold one dict twice, which the copy need not)
    assert given_ == projection.messages
    originals = {id(c) for c in containers(projection.messages)}
    assert not any(id(c) in originals for c in containers(given_))

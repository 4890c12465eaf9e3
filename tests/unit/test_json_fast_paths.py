"""The JSON edge's fast paths (ADR 0056) refuse exactly what the slow path refused.

``decode_command`` parses with orjson and settles portability with one quick walk,
falling back to ``json.loads`` + ``json_problem``; ``parse`` then validates with the
messages' own walks skipped. The reference here is the path before ADR 0056, spelled
out: ``json.loads``, ``json_problem`` of the whole command, validation with each
message checking itself.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from context_compaction import Settings, bootstrap
from helpers import parse_before_adr_0056
from context_compaction.application.runtime.bus import MessageBus, decode_command
from context_compaction.domain.errors import ContextCompactionError, InvalidCommand
from context_compaction.domain.messages import json_problem
from context_compaction.domain.portable_json import parsed_fine, plainly_fine

_scalars = st.one_of(
    st.none(), st.booleans(),
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec=None, categories=("Cs", "Lu", "Nd", "So")), max_size=6),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**62, 2**62 + 1, -(2**62) - 1, 2**63, 2**64, -(2**63) - 1, 2**63 - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([2.0**63, -(2.0**63), 1.8446744073709552e19, 9.2e18, 1e300, -0.0, 5e-324]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=14,
)


def _deep(depth: int) -> Any:
    value: Any = "x"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal JSON values, NaN equal to NaN, and -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _texts(value: Any) -> list[str]:
    """A command holding ``value`` as JSON text, as clients write it (NaN and all)."""
    command = {"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "x",
                                                                          "steering": value}], "v": value}
    return [json.dumps(command), json.dumps(command, ensure_ascii=False)]


# Literals no Python value serializes to: integers and exponents past every range.
_LITERALS = ["123456789012345678901234567890", "-9223372036854775809", "18446744073709551616",
             "18446744073709551615", "9223372036854775808", "4611686018427387905", "1e400", "-1e400",
             "NaN", "-Infinity", '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', "1E19", "9.3e18"]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(_values, st.builds(_deep, st.integers(58, 70))))
@example(value=float("nan"))
@example(value=[2**64])
@example(value={"k": -(2**63) - 1})
@example(value="\ud800")
def test_the_fast_decode_gives_what_json_loads_gives_and_passes_only_portable_commands(value: Any) -> None:
    for text in _texts(value):
        for given_text in (text, text.encode("utf-8", "surrogatepass")):
            try:
                reference = json.loads(given_text)
            except ValueError:
                with pytest.raises(InvalidCommand):
                    decode_command(given_text)
                continue
            decoded, checked = decode_command(given_text)
            assert _same(decoded, reference)
            if checked:  # the fast verdict: portable, so the slow walk must find nothing
                assert json_problem(reference) is None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(_values, st.builds(_deep, st.integers(58, 70))))
@example(value=_deep(64))
@example(value=_deep(65))
@example(value={"k": [2**62, -(2**62)]})
@example(value={"k": [2**62 + 1]})
@example(value=[9.2e18, {"f": 2.0**63}])
def test_parsed_fine_answers_as_plainly_fine_on_whatever_orjson_returns(value: Any) -> None:
    # The decode's walk skips strings (orjson never returns a lone surrogate): on every
    # value orjson gives back it must say what the full quick walk says.
    for text in _texts(value) + [json.dumps(value, ensure_ascii=False)]:
        try:
            parsed = orjson.loads(text.encode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            continue
        assert parsed_fine(parsed) is plainly_fine(parsed), parsed


@pytest.mark.parametrize("literal", _LITERALS)
def test_literals_orjson_reads_otherwise_take_the_slow_path(literal: str) -> None:
    text = '{"type": "append_messages", "v": ' + literal + "}"
    try:
        reference = json.loads(text)
    except ValueError:
        with pytest.raises(InvalidCommand):
            decode_command(text)
        return
    decoded, checked = decode_command(text)
    assert _same(decoded, reference)
    assert not checked or json_problem(reference) is None
    if isinstance(reference["v"], int) and abs(reference["v"]) > 2**62:
        assert not checked  # an integer past 64 bits is a float to orjson: never passed as is


def test_a_float_past_two_to_the_63_is_never_plainly_fine() -> None:
    # What orjson makes of an integer beyond 64 bits; the full walk still accepts floats.
    for value in (2.0**63, -(2.0**63), 1.8446744073709552e19, float("inf"), float("nan")):
        assert not plainly_fine({"v": value})
    assert plainly_fine({"v": 2.0**62}) and json_problem({"v": 2.0**63}) is None


# ------------------------------------------------------------ parse parity
def _outcome(parse: Any, bus: MessageBus, data: Any) -> Any:
    try:
        return ("ok", parse(bus, data))
    except ContextCompactionError as exc:
        return ("error", exc.code, str(exc) if exc.code != "invalid_command" or "type" not in str(exc) else "")


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.one_of(st.text(max_size=8), _values)},
    optional={"tool_call_id": st.sampled_from(["c1", ""]), "provider_state": _values, "name": _values,
              "tool_calls": st.lists(st.fixed_dictionaries(
                  {"id": st.sampled_from(["c1", "c2"]),
                   "function": st.fixed_dictionaries({"name": st.just("f"), "arguments": st.text(max_size=6)},
                                                     optional={"provider_specific_fields": _values})}),
                  max_size=2),
              "thinking_blocks": _values, "surprise": _values},
)


@pytest.fixture(scope="module")
def bus() -> MessageBus:
    return bootstrap(Settings(database_url="memory://", summarizer="extractive"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(st.one_of(_message, _values), min_size=0, max_size=3), as_text=st.booleans())
@example(messages=[{"role": "user", "content": "x", "surprise": float("nan")}], as_text=True)
@example(messages=[{"role": "assistant", "content": "x", "surprise": 2**64}], as_text=True)
@example(messages=[{"role": "assistant", "content": "x", "thinking_blocks": [_deep(63)]}], as_text=True)
@example(messages=[{"role": "user", "content": "\ud800"}], as_text=True)
def test_parse_answers_every_command_as_the_slow_path_did(bus: MessageBus, messages: list[Any], as_text: bool) -> None:
    command = {"type": "append_messages", "session_id": "s", "messages": messages}
    data: Any = json.dumps(command) if as_text else command
    fast, slow = _outcome(MessageBus.parse, bus, data), _outcome(parse_before_adr_0056, bus, data)
    assert fast == slow

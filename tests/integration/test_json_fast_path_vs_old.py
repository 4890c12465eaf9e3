"""The JSON fast path of ADR 0056 against the old path.

The old path is spelled out here (``json.loads``, ``json_problem`` of the whole
command, validation with each message checking itself), as before ADR 0056, and run
on raw texts the property test in tests/unit/test_json_fast_paths.py never makes
(it builds its texts with ``json.dumps``): BOMs, UTF-16/32 bytes, duplicate keys, raw
control characters, CESU-encoded surrogates, nesting around orjson's own limit,
numbers orjson reads otherwise. The portability flag (``PORTABLE_CHECKED``) is a
plain validation-context key: a host that validates a typed command with it skips
the messages' portability walk, which the typed path had always run.
"""

from __future__ import annotations

import json
import math
from collections import UserDict
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from context_compaction import Settings, bootstrap
from helpers import parse_before_adr_0056
from context_compaction.application.runtime.bus import MessageBus
from context_compaction.application.contracts.commands import AppendMessages
from context_compaction.domain.errors import ContextCompactionError
from context_compaction.domain.messages import PORTABLE_CHECKED, json_problem


@pytest.fixture
def bus(tmp_path: Path) -> Any:
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/events.db", summarizer="extractive"))
    assert bus.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o"})["ok"]
    yield bus
    bus.close()


def _appended(bus: MessageBus) -> list[dict[str, Any]]:
    envelope = bus.dispatch_json({"type": "read_events", "after": 0, "limit": 1000})
    assert envelope["ok"], envelope
    return [e for e in envelope["result"]["events"] if e["type"] == "MessageAppended"]


# ------------------------------------------------------------ the old path
def _outcome(parse: Any, bus: MessageBus, data: Any) -> Any:
    try:
        command = parse(bus, data)
    except ContextCompactionError as exc:
        return ("error", exc.code, str(exc))
    return ("ok", type(command).__name__, repr(command.model_dump(mode="python")))


def _append(message: str) -> str:
    return '{"type":"append_messages","session_id":"s","messages":[%s]}' % message


class _Str(str):
    pass


class _Bytes(bytes):
    pass


def _raw_inputs() -> list[Any]:
    plain = _append('{"role":"user","content":"x"}')
    out: list[Any] = [
        _append('{"role":"user","content":"a","content":"b"}'),
        _append('{"role":"user","content":5,"content":"a"}'),
        '{"type":"bogus","type":"append_messages","session_id":"s","messages":[{"role":"user","content":"x"}]}',
        _append('{"role":"assistant","content":"x","provider_specific_fields":{"a":1,"b":2,"a":{"c":3}}}'),
        "\ufeff" + plain, b"\xef\xbb\xbf" + plain.encode(),
        plain.encode("utf-16"), plain.encode("utf-16-le"), plain.encode("utf-32"),
        " \n\t\r" + plain + " \r\n", "\x0c" + plain, "\u00a0" + plain, plain + "\x00", plain + " x",
        _append('{"role":"user","content":"a\\u0000b"}'), _append('{"role":"user","content":"a\x00b"}'),
        _append('{"role":"user","content":"a\tb"}'), _append('{"role":"user","content":"a\x7fb"}'),
        _append('{"role":"user","content":"\\ud83d\\ude00"}'), _append('{"role":"user","content":"\\ud83d"}'),
        _append('{"role":"user","content":"\\ude00\\ud83d"}'), _append('{"role":"user","content":"x","k\\ud800":1}'),
        _append('{"role":"user","content":"a\ud800b"}'), _append('{"role":"user","content":"a\ud83d\ude00b"}'),
        plain.encode().replace(b'"x"', b'"\xed\xa0\x80"'), plain.encode().replace(b'"x"', b'"\xed\xa0\xbd\xed\xb8\x80"'),
        plain.encode().replace(b'"x"', b'"\xc0\xaf"'), plain.encode().replace(b'"x"', b'"\xf4\x90\x80\x80"'),
        bytearray(plain.encode()), _Str(plain), _Bytes(plain.encode()),
        "[]", '"x"', "1", "null", "", "{}", "{}{}", '{"type":"list_sessions",}', "{'type':'list_sessions'}",
    ]
    for number in ["1.0", "-0.0", "-0", "1e308", "1e309", "1e-400", "5e-324", "1.7976931348623159e308",
                   str(2**62), str(2**62 + 1), str(2**63), str(2**64), str(-(2**63) - 1), "1" * 400,
                   "9223372036854775808.0", "9.2e18", "4611686018427387904.0", "9007199254740993.0", "NaN", "-Infinity"]:
        out.append(_append('{"role":"assistant","content":"n","thinking_blocks":[{"x":%s}]}' % number))
        out.append('{"type":"read_events","after":%s,"limit":%s}' % (number, number))
        out.append('{"type":"configure_session","session_id":"s","agent_token_limit":%s}' % number)
    for depth in (62, 63, 64, 1023, 1024, 1025, 5000):
        out.append(_append('{"role":"assistant","content":"d","thinking_blocks":[%s]}' % ("[" * depth + "]" * depth)))
        out.append("[" * depth + "]" * depth)
    return out


def test_raw_texts_get_the_answer_the_old_path_gave(bus: MessageBus) -> None:
    differ = []
    for index, data in enumerate(_raw_inputs()):
        old, new = _outcome(parse_before_adr_0056, bus, data), _outcome(MessageBus.parse, bus, data)
        if old != new:
            differ.append((index, old, new))
    assert not differ, f"the fast path answers otherwise: {differ[:3]}"


def test_raw_texts_store_what_the_old_path_stored(bus: MessageBus) -> None:
    # Accepted commands go through dispatch_json: the stored payloads are the values
    # json.loads gave (duplicate keys: the last value, the first key's place).
    text = _append('{"role":"assistant","content":"x","provider_specific_fields":{"a":1,"b":-0.0,"a":{"c":[1.0,5e-324]}}}')
    assert bus.dispatch_json(text)["ok"]
    stored = bus.dispatch_json({"type": "get_history", "session_id": "s"})["result"]["messages"][0]
    expected = json.loads(text)["messages"][0]["provider_specific_fields"]
    data = stored["provider_state"]["data"]["provider_specific_fields"]
    assert list(data) == list(expected) == ["a", "b"]
    assert data == expected and math.copysign(1, data["b"]) == -1.0


# ------------------------------------------------------------ the context flag
_UNPORTABLE = [
    ("nan", {"role": "assistant", "content": "x", "thinking_blocks": [{"v": float("nan")}]}),
    ("lone surrogate", {"role": "user", "content": "a\ud800b"}),
    ("integer past 64 bits", {"role": "assistant", "content": "x", "provider_specific_fields": {"v": 2**70}}),
]


@pytest.mark.parametrize(("label", "message"), _UNPORTABLE, ids=[label for label, _ in _UNPORTABLE])
def test_a_typed_command_validated_with_the_flag_still_refuses_unportable_messages(
    bus: MessageBus, label: str, message: dict[str, Any]
) -> None:
    # Before ADR 0056 every Message checked itself: no context could skip it. A host
    # that validates with the (exported) key must get invalid_message and no event,
    # not a NaN stored as null or a TypeError out of the store.
    try:
        command = AppendMessages.model_validate(
            {"session_id": "s", "messages": [message]}, context={PORTABLE_CHECKED: True}
        )
        bus.dispatch(command)
    except ValidationError:
        pass  # refused at validation, as before
    except ContextCompactionError as exc:
        assert exc.code == "invalid_message", f"{label}: {exc.code}"
    except Exception as exc:  # noqa: BLE001 - the defect is which exception escapes
        pytest.fail(f"{label}: {type(exc).__name__} escaped dispatch, not a contract error")
    else:
        pytest.fail(f"{label}: accepted and stored: {_appended(bus)[-1]['payload']}")
    assert _appended(bus) == []


# ------------------------------------------------------------ pre-existing (old path too)
@pytest.mark.parametrize(
    ("label", "message"),
    [("nan", {"role": "assistant", "content": "a", "thinking_blocks": [{"v": float("nan")}]}),
     ("lone surrogate", {"role": "user", "content": "a\ud800"})],
    ids=["nan", "lone-surrogate"],
)
def test_a_mapping_message_that_is_not_a_dict_is_checked_for_portability(
    bus: MessageBus, label: str, message: dict[str, Any]
) -> None:
    # dispatch_json takes a Mapping; a message that is a Mapping but not a dict
    # (UserDict) is skipped by json_problem's walk on main and on integ alike:
    # NaN is stored as null (ok: true), a lone surrogate is internal_error.
    envelope = bus.dispatch_json({"type": "append_messages", "session_id": "s", "messages": [UserDict(message)]})
    assert not envelope["ok"] and envelope["error"]["code"] == "invalid_message", f"{label}: {envelope}"
    assert _appended(bus) == []

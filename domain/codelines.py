"""Code lines and the pins people say among them (ADRs 0109, 0116). Pure.

A line of code is no statement for the coverage check (code lives in files; its
identifiers are on every line), but a pin or an assignment a person writes in their own
message ("Hold ruamel.yaml==0.18.6 until the fix lands", a one-line ``{"burst": 40}``)
states a value as plainly as a sentence does.
"""

from __future__ import annotations

import ast
import json
import re

# (code, not a statement: a block's punctuation, a keyword or a prompt at the start, a call
# at the end. Narrower than a remark's test: "reviewer -> Priya", "MAX_WORKERS: 12" and
# "LOG_LEVEL=debug" are what people say in chat)
_CODE = re.compile(r"[{}]|;\s*$|==|!=|=>|::|^\s*(?:def|class|import|from \S+ import|return|raise|assert|elif|"
                   r"except|Traceback|#include|SELECT\b.*\bFROM)\b|^\s*(?:\$|>>>|#|%)\s|^\s*File \"|"
                   r"\w\([^()]*\)[.\w]*\s*$|^\s*(?:if|for|while|with|else|try)\b.*:\s*$", re.I)
_TOKEN_PLAIN = re.compile(r"[(\"'\u201c]?[^\W\d_][^\W\d_'\u2019-]*[.,;:!?)\"'\u201d]*|[$€£]?\d[\d,.:]*\w{0,3}[.,;:!?)]*|[-\u2013\u2014&>]+")


# (a pin or an assignment said in a person's own message, ADR 0116: "Hold ruamel.yaml==0.18.6",
# ``{"burst": 40}``, "region >= eu-west-3"; taken out before the code test, so only
# what else the line holds can make it code: a condition, a call, a pasted test line)
_PIN = re.compile(r"(?<![\w.-])[A-Za-z_][\w.-]*\s?(?:==|~=|>=|<=|=)\s?[\w.\"'-]*\w[\"']?(?![\w(])")


def stated_pin(sentence: str) -> bool:
    """A code-like line that states a value: a pin, an assignment or a one-line object,
    with nothing else of code around it."""
    bare = sentence
    for start, end in _objects(sentence):  # (its braces out, what it holds stays: same length)
        bare = bare[:start] + bare[start:end].replace("{", " ").replace("}", " ") + bare[end:]
    bare = _PIN.sub("value", bare)
    return bare != sentence and not code_like(bare)


#: The longest one-line object read as a statement: a longer one is a payload, not said.
OBJECT_CHARS = 2_000


def _objects(sentence: str) -> list[tuple[int, int]]:
    """The spans of the one-line objects in ``sentence`` (``{"burst": 40}``, ``{'region':
    'eu-west-3'}``, nested ones too), anywhere in it: a balanced pair of braces, found in one
    pass, whose text a JSON or a Python-literal parser reads as a mapping. (A parser, not a
    pattern: a pattern over "key: value" pairs backtracks exponentially on a failing line,
    review of ADR 0116.)"""
    spans, depth, start = [], 0, 0
    for at, char in enumerate(sentence):
        if char == "{":
            start = at if depth == 0 else start
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0 and at + 1 - start <= OBJECT_CHARS and _mapping(sentence[start:at + 1]):
                spans.append((start, at + 1))
    return spans


def _mapping(text: str) -> bool:
    for parse in (json.loads, ast.literal_eval):
        try:
            read = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return isinstance(read, dict) and bool(read)
    return False


def code_like(sentence: str) -> bool:
    """Code or a pasted tool line: code punctuation, a keyword or a prompt at the start, or
    (four tokens or more) under a third of them plain words or numbers."""
    if _CODE.search(sentence):
        return True
    tokens = sentence.split()
    plain = sum(1 for t in tokens if _TOKEN_PLAIN.fullmatch(t))
    return len(tokens) >= 4 and plain * 3 < len(tokens)

"""Code lines and the pins people say among them (ADRs 0109, 0116). Pure.

A line of code is no statement for the coverage check (code lives in files; its
identifiers are on every line), but a pin or an assignment a person writes in their own
message ("Hold ruamel.yaml==0.18.6 until the fix lands", a one-line ``{"burst": 40}``)
states a value as plainly as a sentence does.
"""

from __future__ import annotations

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
_ONE_LINE_JSON = re.compile(r"^[^{}]*\{\s*(?:\"[\w.-]+\"\s*:\s*[^{}:,]{1,40}(?:,\s*|(?=\s*\})))+\s*\}[.,]?\s*$")


def stated_pin(sentence: str) -> bool:
    """A code-like line that states a value: a pin, an assignment or a one-line object,
    with nothing else of code around it."""
    bare = _PIN.sub("value", sentence)
    if _ONE_LINE_JSON.match(sentence):
        bare = bare.replace("{", " ").replace("}", " ")
    return bare != sentence and not code_like(bare)


def code_like(sentence: str) -> bool:
    """Code or a pasted tool line: code punctuation, a keyword or a prompt at the start, or
    (four tokens or more) under a third of them plain words or numbers."""
    if _CODE.search(sentence):
        return True
    tokens = sentence.split()
    plain = sum(1 for t in tokens if _TOKEN_PLAIN.fullmatch(t))
    return len(tokens) >= 4 and plain * 3 < len(tokens)

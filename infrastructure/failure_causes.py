"""Why a provider call failed, for every interface (issue 35, finding 3): the exception's
type, the provider's HTTP status and its message with secrets redacted, and what to do
about missing credentials. Python callers read ``exc.details``, JSON and HTTP callers
``error.details``; the CLI prints the message, which ends with the hint."""

from __future__ import annotations

import os
import re
from typing import Any

from context_compaction.domain.errors import SummaryFailed

#: The provider's message is cut here: enough for its reason, not a whole error page.
CAUSE_CHARS = 600
_REDACTED = "[redacted]"
# Credentials in the forms providers and proxies echo them: key prefixes (OpenAI and
# Anthropic sk-, Google AIza, AWS AKIA, xAI, Groq, Hugging Face, GitHub), an
# ``Authorization`` value whatever its scheme (Bearer, Basic, Token, also URL-encoded),
# ``key=value`` pairs, a key quoted after "API key provided:", and URL passwords. A
# configured key is also removed by value, whatever its form.
_PATTERNS = [
    (re.compile(r"\b(sk|pk|rk|xai)-[A-Za-z0-9_\-*.]{6,}"), r"\1-" + _REDACTED),
    (re.compile(r"\b(gsk|hf|ghp|gho|ghu|ghs|github_pat)_[A-Za-z0-9_]{10,}"), r"\1_" + _REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), _REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{12,}"), _REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)(\s+|%20|\+)[A-Za-z0-9._~+/=%\-]{4,}"), r"\1\2" + _REDACTED),
    # an Authorization value in another scheme (Token, ApiKey...): the scheme stays
    (re.compile(r"(?i)\b(authorization\"?'?\s*(?:[:=]|%3A|%3D)\s*\"?'?[A-Za-z]+)(\s+|%20|\+)[^\s\"',;}&]{4,}"),
     r"\1\2" + _REDACTED),
    (re.compile(r"(?i)\b(api[ _-]?key provided:?\s*)(\S+?)([.,;]?(?:\s|$))"), r"\1" + _REDACTED + r"\3"),
    (re.compile(r"(?i)\b([\w\-]*(?:key|token|secret|password|passwd|authorization|credentials?))"
                r"(\"?'?\s*(?:[:=]|%3D)\s*\"?'?)(?!bearer\b|basic\b)([^\s\"',;}&]+)"), r"\1\2" + _REDACTED),
    (re.compile(r"://([^:/@\s]+):([^@\s]+)@"), r"://\1:" + _REDACTED + "@"),
]
_SECRET_VARIABLE = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS)$")


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` without credentials: the given secrets and any value of a ``*KEY``
    (``AWS_SECRET_ACCESS_KEY`` too), ``*TOKEN``, ``*SECRET``, ``*PASSWORD`` or
    ``*CREDENTIALS`` variable by value, then the known forms."""
    known = {s for s in secrets if s and len(s) >= 6}
    known.update(v for k, v in os.environ.items() if _SECRET_VARIABLE.search(k) and len(v) >= 6)
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def provider_cause(exc: BaseException, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """``error_class``, ``status_code`` and ``provider`` when the exception has them
    (litellm's do), and ``cause``: its message, redacted and cut."""
    details: dict[str, Any] = {"error_class": type(exc).__name__}
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        details["status_code"] = status
    provider = getattr(exc, "llm_provider", None)
    if isinstance(provider, str) and provider:
        details["provider"] = provider
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else str(exc)
    text = redact(" ".join(text.split()), secrets)
    details["cause"] = text[:CAUSE_CHARS] + ("…" if len(text) > CAUSE_CHARS else "")
    return details


def provider_failure(exc: BaseException, settings: Any, model: str, what: str, litellm: Any) -> SummaryFailed:
    """The ``SummaryFailed`` of a provider call that raised ``exc``: its cause in
    ``details`` and the credentials hint (asked of ``litellm``, the module the call
    used) in ``details["hint"]`` and the message."""
    config = settings.model_config_for(model)
    secrets = (config.api_key.get_secret_value(),) if config.api_key is not None else ()
    details = provider_cause(exc, secrets)
    hint = summary_hint(settings, model, litellm)
    details["hint"] = hint.removeprefix("; ")
    status = f" (HTTP {details['status_code']})" if "status_code" in details else ""
    return SummaryFailed(f"the {what} failed: {details['error_class']}{status}{hint}", details=details)


def summary_hint(settings: Any, model: str | None, litellm: Any) -> str:
    """What to do about a failed summary call: the credentials litellm looked for and
    did not find, and the offline summarizer."""
    offline = "or summarize offline with --summarizer extractive (CTXC_SUMMARIZER=extractive)"
    if model is None or settings.model_config_for(model).api_key is not None:
        return f"; {offline}"
    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:  # noqa: BLE001 - a hint must never hide the error it explains
        missing = []
    if not missing:
        return f"; check the credentials for model {model!r}, {offline}"
    return (f"; no credentials for model {model!r}: set {' and '.join(missing)}, or "
            f"models[{model!r}].api_key in the settings (CTXC_MODELS), {offline}")

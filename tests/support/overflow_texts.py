"""Real provider overflow texts and litellm's wrapping of them (overflow detection tests)."""

from __future__ import annotations

import litellm

# (name, text as a provider sends it, window, prompt tokens)
REAL_TEXTS = [
    ("openai", "This model's maximum context length is 128000 tokens. However, your messages resulted in "
               "130491 tokens. Please reduce the length of the messages.", 128000, 130491),
    ("openai-completion", "This model's maximum context length is 4097 tokens, however you requested 4226 tokens "
                          "(3226 in your prompt; 1000 for the completion). Please reduce your prompt; or completion "
                          "length.", 4097, 3226),
    ("gpt-5", "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289650 "
              "tokens. Please reduce the length of the messages.", 272000, 289650),
    ("openai-responses", "Your input exceeds the context window of this model. Please adjust your input and try "
                         "again.", None, None),
    ("anthropic", "prompt is too long: 210000 tokens > 200000 maximum", 200000, 210000),
    ("anthropic-max-tokens", "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
                             "decrease input length or `max_tokens` and try again", 200000, 199759),
    ("gemini", "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
     1048576, 1200293),
    ("vllm", "This model's maximum context length is 16384 tokens. However, you requested 122946 tokens "
             "(112946 in the messages, 10000 in the completion). Please reduce the length of the messages or "
             "completion.", 16384, 112946),
    ("mistral", "Prompt contains 40129 tokens and 0 draft tokens, too large for model with 32768 maximum context "
                "length", 32768, 40129),
    ("openrouter", "This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 "
                   "tokens (42832 of text input). Please reduce the length of either one, or use the "
                   "\"middle-out\" transform to compress your prompt automatically.", 32768, 42832),
]


def wrapped(text: str, provider: str = "openai") -> str:
    """``str()`` of the exception litellm raises for a provider's overflow text."""
    return str(litellm.ContextWindowExceededError(message=text, model="gpt-4o", llm_provider=provider))

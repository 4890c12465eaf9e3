"""Adapters for the agent frameworks teams already use (issue 40, ADR 0074).

One module per framework, each behind its own extra; importing this package imports no
framework, only ``context_compaction.integrations.<framework>`` does:

- ``langchain``: ``CompactionMiddleware`` for LangChain v1 ``create_agent`` (``[langchain]``)
- ``openai_agents``: ``CompactingSession``, an OpenAI Agents SDK session (``[openai-agents]``)
- ``pydantic_ai``: ``CompactionProcessor``, a pydantic-ai capability (``[pydantic-ai]``)
- ``litellm_proxy``: ``CompactionHook``, a LiteLLM proxy pre-call hook (``[litellm-proxy]``)

Every adapter is non-destructive: the framework keeps what it keeps, our event log holds
every message, and the model sees our projection (summary block + pinned + raw tail).
"""

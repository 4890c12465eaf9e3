"""``ctxc eval``: what a summarizer keeps, measured on material it was not written for (issue 44).

Typed canaries (rules with their values, decisions with reasons, people, dates,
amounts, versions, settings, preferences, task state, open questions) are planted with
varied wording in generated sessions: multi-round runs at output budgets of 10, 20 and
30 % of the session, and long coding conversations at 8K, 32K and 128K windows driven
like the README's host loop. Phrasing sets (``report.SETS``): ``phrasings.TUNING`` (the
one the checklist was tuned against), ``heldout.HELD_OUT`` (separate templates, reported
separately; ADR 0077), and later sets each reported apart; ``blind``, ``blind2``, ``blind3``,
``blind4`` and ``blind5`` were written without reading the extractor and are frozen (ADR 0097,
ADR 0102, ADR 0105, ADR 0108, ADR 0113).
"""

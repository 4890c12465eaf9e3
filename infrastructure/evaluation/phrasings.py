"""The tuning phrasing set: the wording the checklist's extraction was checked against.

The held-out set lives in ``heldout.py``, written from separate templates and never used
while tuning; ``ctxc eval`` reports the two apart.
"""

from __future__ import annotations

from .canaries import Phrasings

TUNING = Phrasings(
    name="tuning",
    templates={
        "rule": (
            "Hard constraint: the {s} is {v}; never go over it.",
            "The {s} is {v} total. Never exceed it without explicit approval.",
            "Please keep the {s} at {v} at most, that one is not negotiable.",
            "Rule from ops: {v} is the {s}, do not raise it.",
        ),
        "decision": (
            "We went with {v} for the {s} because {r}.",
            "Settled on {v} as the {s}, since {r}.",
            "Decision: the {s} will be {v} because {r}.",
            "I compared the options and chose {v} for the {s}; the reason is that {r}.",
        ),
        "person": (
            "{V} is the {s} this quarter.",
            "Ask {v} about it, they're the {s}.",
            "The {s} is {v}.",
            "Loop in {v} ({s}) before merging anything there.",
        ),
        "date": (
            "The {s} is on {v}.",
            "We need everything ready for the {s} by {v}.",
            "Heads up: the {s} happens {v}.",
            "Mark {v} in the calendar, that's the {s}.",
        ),
        "amount": (
            "The {s} is around {v}.",
            "Right now the {s} comes to {v}.",
            "Measured the {s}: {v}.",
            "We budget {v} for the {s}.",
        ),
        "version": (
            "Pin {s} to {v}.",
            "We're on {s} {v} in the lockfile.",
            "Upgrade {s} to {v} before the release.",
            "The {s} version must stay at {v}.",
        ),
        "setting": (
            "Set {k}={v} in the env file.",
            "Configure {k} to {v} for staging.",
            "{k} should be {v}.",
        ),
        "preference": (
            "I prefer {v} for {s}.",
            "For {s}, I'd like {v}, please.",
            "My preference is {v} when it comes to {s}.",
        ),
        "task": (
            "Step {n} of {m} done: the {s}.",
            "Finished step {n} of {m}, the {s}.",
            "The {s} is done, that was step {n} of {m}.",
        ),
        "question": (
            "Open question: whether {s}.",
            "We still haven't decided whether {s}.",
            "Unresolved: do we agree that {s}?",
        ),
    },
    negated=(
        "Please don't use {v} in {s}.",
        "Never add {v} to {s}.",
        "I don't want {v} in {s}.",
    ),
    updates={
        "rule": ("Change of plan: the {s} is now {v}.", "Correction, the {s} moved to {v}."),
        "decision": ("We switched the {s} to {v} because {r}.", "Change of plan: the {s} is now {v}, since {r}."),
        "person": ("The {s} changed: it's {v} now.", "{V} is the new {s}."),
        "date": ("The {s} moved to {v}.", "Update: the {s} is now {v}."),
        "amount": ("Update: the {s} is now {v}.", "Correction, the {s} is {v}."),
        "version": ("Change of plan: pin {s} to {v} instead.", "We moved {s} to {v}."),
        "setting": ("Change {k} to {v}.", "Update: {k} is now {v}."),
    },
)

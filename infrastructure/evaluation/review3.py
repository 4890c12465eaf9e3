"""A third phrasing set, written by a reviewer of issue 44 from scratch after the
checklist was tuned (never used for tuning): varied wording, reported apart
(``ctxc eval --sets review``)."""

from __future__ import annotations

from .canaries import Phrasings

REVIEW = Phrasings(
    name="review",
    templates={
        "rule": (
            "Quick reminder from legal: the {s} cannot go beyond {v}, full stop.",
            "We agreed the {s} stays at or below {v} no matter what the client asks.",
            "Keep the {s} under {v} — anything above that gets rejected in review.",
        ),
        "decision": (
            "After comparing the options we're going with {v} for the {s}, mainly because {r}.",
            "The {s} will be {v}; {r}.",
            "Team vote is in: {v} for the {s}, since {r}.",
        ),
        "person": (
            "If the {s} question comes up, {v} is the one to talk to.",
            "{V} is our {s} for this project.",
            "Heads up that {v} is now the {s}, so route approvals there.",
        ),
        "date": (
            "Mark your calendar: the {s} is {v}.",
            "The {s} is pencilled in for {v}.",
            "We committed to the {s} on {v} with the customer.",
        ),
        "amount": (
            "Last I measured, the {s} was about {v}.",
            "The {s} comes out to {v} on average.",
            "FYI the {s} sits at {v} right now.",
        ),
        "version": (
            "Make sure {s} stays pinned to {v} in the lockfile.",
            "We're on {s} {v} everywhere, please don't upgrade it.",
            "Production has {s} version {v}.",
        ),
        "setting": (
            "In the config, set {k} to {v}.",
            "Remember {k} needs to be {v} for the tests.",
            "I changed {k} to {v} in the staging env.",
        ),
        "preference": (
            "For {s}, I really prefer {v}.",
            "When it comes to {s}, {v} please.",
            "My taste for {s}: {v}, every time.",
        ),
        "task": (
            "Progress update: {s} is done, that's {n} of {m}.",
            "Finished {s}; we're at step {n} of {m}.",
            "{S} — done. {n}/{m} tasks complete.",
        ),
        "question": (
            "Still open: whether {s}.",
            "We haven't decided whether {s} yet.",
            "Open question for later: {s}?",
        ),
    },
    negated=(
        "Please don't use {v} for {s}.",
        "I don't want {v} anywhere near {s}.",
        "No {v} for {s}, please.",
    ),
    updates={
        "rule": ("Update from legal: the {s} is now {v}.",),
        "decision": ("We changed our minds on the {s}: it's {v} now, because {r}.",),
        "person": ("{V} is taking over as {s} starting today.",),
        "date": ("The {s} moved to {v}.",),
        "amount": ("Re-measured: the {s} is now {v}.",),
        "version": ("We upgraded {s} to {v}.",),
        "setting": ("Switch {k} to {v} from now on.",),
    },
)

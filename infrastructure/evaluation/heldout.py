"""The held-out phrasing set (ADR 0077): separate templates, written before any
tuning and never used for it. ``ctxc eval`` reports its figures apart from the tuning set's."""

from __future__ import annotations

from .canaries import Phrasings

HELD_OUT = Phrasings(
    name="held-out",
    templates={
        "rule": (
            "Whatever happens we stay within {v} for the {s}.",
            "{S} tops out at {v}. Going past that needs sign-off from finance.",
            "Non-negotiable: {s} of {v}.",
        ),
        "decision": (
            "{V} wins for the {s}: {r}.",
            "Let's lock in {v} as our {s} given that {r}.",
            "Final call on the {s} is {v} ({r}).",
        ),
        "person": (
            "{V} took over as {s} last week.",
            "Ping {v}, our {s}, if anything breaks.",
            "For anything touching that, {v} acts as {s}.",
        ),
        "date": (
            "{S} lands {v}, plan around it.",
            "Don't forget the {s} on {v}.",
            "Our {s} got scheduled for {v}.",
        ),
        "amount": (
            "{S}? Roughly {v} last time I checked.",
            "Expect the {s} to be {v}.",
            "Numbers from the dashboard put the {s} at {v}.",
        ),
        "version": (
            "Lock {s} at {v}; the newer one breaks us.",
            "{s}=={v} is what production runs.",
            "Bump {s} to {v} when you get a chance.",
        ),
        "setting": (
            "The deployment uses {k} {v}.",
            "Flip {k} over to {v}.",
            "Our .env has {k} set as {v}.",
        ),
        "preference": (
            "{V} is how I like {s} done.",
            "Go with {v} for {s} whenever you can.",
            "In {s} I always favour {v}.",
        ),
        "task": (
            "Checked off {s} ({n}/{m}).",
            "{S}: complete. {n} of {m} steps behind us.",
            "Wrapped up the {s}, so {n} out of {m} are finished.",
        ),
        "question": (
            "Someone needs to answer whether {s}.",
            "Not sure yet if {s}, let's come back to it.",
            "TBD: {s}?",
        ),
    },
    negated=(
        "Leave {v} out of {s}, I can't stand them.",
        "No {v} in {s}, ever.",
        "Avoid {v} in {s} please.",
    ),
    updates={
        "rule": ("Scratch the old number, {s} becomes {v} from today.",),
        "decision": ("Reversing course on the {s}: {v} instead, as {r}.",),
        "person": ("From now on {v} handles the {s} role.",),
        "date": ("New date for the {s}: {v}.",),
        "amount": ("Revised {s} is {v}.",),
        "version": ("Roll {s} forward to {v}.",),
        "setting": ("We now run with {k} {v}.",),
    },
)

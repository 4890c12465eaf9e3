"""A fourth phrasing set, ``spoken`` (issue 44, ADR 0083): written the way people talk in a
chat — hedges, asides, fillers, the subject after the value, two-sentence statements —
before the changes of ADR 0083 and never used to tune them. ``ctxc eval --sets spoken``
reports it apart from the tuning set.
"""

from __future__ import annotations

from .canaries import Phrasings

SPOKEN = Phrasings(
    name="spoken",
    templates={
        "rule": (
            "Oh and one thing finance was really clear about, the {s} is {v}, we can't go above that.",
            "So yeah, {v}. That's the {s}, and it's firm.",
            "honestly the {s} being {v} is the one thing I won't budge on",
            "btw whatever we build, {s} has to be {v} or lower, ok?",
        ),
        "decision": (
            "ok so I talked to the team and we're doing {v} for the {s}, {r} basically.",
            "Yeah let's just go {v} on the {s}. Mostly because {r}.",
            "I think {v} makes the most sense for the {s} tbh, {r}.",
        ),
        "person": (
            "oh if you need a review, {v} is the {s} now so just ask them",
            "fyi {v} ended up being the {s}, so anything there goes through them",
            "You'll want {v} for that, they're our {s}.",
        ),
        "date": (
            "the {s} is {v} btw, so no pressure lol",
            "Just so you know, we've got the {s} on {v}.",
            "I think it was {v}? For the {s}, yeah, pretty sure.",
        ),
        "amount": (
            "last time I looked the {s} was like {v}, give or take",
            "so the {s} ends up being {v} which is fine honestly",
            "We're looking at {v} for the {s}, roughly.",
        ),
        "version": (
            "heads up, we have {s} on {v} and it has to stay there for now",
            "can you keep {s} at {v}? the next one broke our build",
            "oh we're running {s} {v} btw, in case it matters",
        ),
        "setting": (
            "fwiw {k} is {v} on our boxes",
            "you'll probably need {k} at {v} or the tests go weird",
            "I bumped {k} to {v} locally, seems happier",
        ),
        "preference": (
            "I'm a big fan of {v} for {s}, if that's ok",
            "personally I'd go with {v} for {s} every time",
            "for {s} can we stick to {v}? it's just easier to read",
        ),
        "task": (
            "ok {s} is done! so that's {n} out of {m}",
            "nice, that wraps the {s}. {n} of the {m} things on the list are finished now",
            "{S} is sorted, we're {n} of {m} through",
        ),
        "question": (
            "hmm, I actually don't know whether {s}, we should figure that out",
            "no idea yet whether {s}, need to check with the team",
            "one thing nobody's answered: whether {s}",
        ),
    },
    negated=(
        "ugh please no {v} in {s}, I really don't like it",
        "can we not do {v} for {s}? it always bites us",
        "let's keep {v} out of {s} if possible",
    ),
    updates={
        "rule": ("ok small change, finance came back and the {s} is {v} now",
                 "oh wait, they raised it: {s} is {v} from here on"),
        "decision": ("hmm so we ended up switching the {s} to {v}, {r}",
                     "scrap that, we're doing {v} for the {s} now since {r}"),
        "person": ("oh {v} is the {s} now, the other person moved teams",),
        "date": ("bad news, the {s} slipped to {v}",
                 "they pushed the {s}, it's {v} now"),
        "amount": ("re-ran it and the {s} is actually {v} now",),
        "version": ("we bumped {s} to {v} yesterday, so that's what we're on now",),
        "setting": ("I set {k} back to {v}, the other value was flaky",),
    },
)

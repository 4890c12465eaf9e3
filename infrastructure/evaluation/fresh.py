"""A fifth phrasing set, ``fresh`` (issue 44): written after the tuning, held-out, review and
spoken sets had all been used to diagnose the offline summarizer, by someone who had not
read the summarizer, to keep one measurement that nothing was tuned on. Chat as people
type it: terse imperatives, run-on sentences, asides, semicolon lists, quoted values, the
value before its subject, questions, lowercase, British and American spelling.
"""

from __future__ import annotations

from .canaries import Phrasings

FRESH = Phrasings(
    name="fresh",
    templates={
        "rule": (
            "hard limit on the {s}: {v}. don't go past it.",
            "{v} — that's the {s}, and it stays that way unless finance signs off",
            "Just so it's written down somewhere: the {s} is capped at {v} (ops were very clear about this).",
            "Can we treat {v} as the absolute {s}? Nothing above that, ever.",
            "non-negotiable: {s} = \"{v}\"; anything over gets rejected in review",
        ),
        "decision": (
            "ok going with {v} for the {s} — {r}",
            ("After a fair bit of back and forth (and one very long thread) we've picked {v} as our {s}, "
             "mainly because {r}."),
            "{S}: {v}. Reason: {r}.",
            "so the {s} question is closed, it's {v}; {r}, and nobody objected",
            "Why {v} for the {s}? Because {r}. That's final.",
        ),
        "person": (
            "{V} owns this now — {s} until further notice.",
            "if anything breaks ping {v}, they're our {s}",
            "Quick one: who's the {s}? It's {v}, as of this sprint.",
            "the {s} for this quarter is {v} (not me, before anyone asks)",
            "Please cc {v} on every PR touching this; {v} is the {s}.",
        ),
        "date": (
            "{s} is {v}, put it in your calendars",
            "Reminder that the {s} lands on {v} — we can't let this one slip.",
            "{V} is the {s}, so plan backwards from there.",
            "When's the {s}? {v}, last I heard.",
            "heads-up re the {s}: it's scheduled for {v}; if that changes I'll shout",
        ),
        "amount": (
            "fyi the {s} is sitting at roughly {v}",
            "We measured it twice: {v} for the {s}, give or take.",
            "{s} ≈ {v} (from last week's dashboard)",
            "Could you bear in mind that the {s} is {v}? It matters for the sizing.",
            "the {s} came in at {v} after we optimised the queries",
        ),
        "version": (
            "pin {s}=={v}",
            "We're locked to {s} {v} until the upgrade ticket gets picked up.",
            "{v} is the {s} version we ship with; please don't bump it casually",
            "bump {s} to {v} in requirements.txt, and regenerate the lock",
            "Which {s}? {v}, the one in the lockfile.",
        ),
        "setting": (
            "export {k}={v}",
            "In the staging env file, {k} needs to be \"{v}\".",
            "can you flip {k} to {v}? thanks",
            "{v} for {k}, please — both in .env and in the Helm values.",
            "Settings-wise: {k}: {v}; leave everything else at the defaults.",
        ),
        "preference": (
            "for {s} I'd rather we use {v}",
            "{V}, please, whenever we touch {s}.",
            "Personally I like {v} for {s} — it reads better and it's what I'm used to.",
            "could we standardise on {v} for {s}?",
        ),
        "task": (
            "{S}: done ({n}/{m}).",
            "ok so step {n} of {m} is finished — the {s}",
            "Ticked another one off: the {s} is completed, which makes it {n} out of {m} steps.",
            "the {s} landed this morning; that's step {n} of {m}",
            "Progress update — {n} of {m} steps wrapped up, the latest being the {s}.",
        ),
        "question": (
            "open question — {s}?",
            "Does anyone actually know whether {s}? we never settled it",
            "Still TBD: whether {s}.",
            "Not sure yet if {s}; let's park it and come back.",
        ),
    },
    negated=(
        "no {v} in {s}, please.",
        "Avoid {v} in {s} — it has bitten us before.",
        "{S}: never any {v}. I mean it.",
        "I really don't want to see {v} creeping into {s} again",
    ),
    updates={
        "rule": (
            "scratch that, the {s} is {v} now",
            "New number from ops for the {s}: {v} (replaces the old one).",
            "{v} is the new {s}, effective today.",
        ),
        "decision": (
            "we've moved the {s} over to {v}, {r}",
            "Reversing the earlier call: {v} for the {s} instead, because {r}.",
            "{S} is now {v} — {r}.",
        ),
        "person": (
            "heads up, {v} has taken over as {s}",
            "{V} replaces the previous {s} from next week.",
            "New {s}: {v}.",
        ),
        "date": (
            "{s} got pushed to {v}",
            "Slight change — the {s} is now {v} rather than the original date.",
            "the {s} was brought forward to {v}, sorry for the churn",
        ),
        "amount": (
            "re-measured: the {s} is {v} now",
            "Revised figure for the {s} — {v}.",
            "{v} is the updated {s}, the earlier number was wrong",
        ),
        "version": (
            "actually let's go with {s}=={v} instead",
            "Bumped {s} to {v} in the lockfile this morning.",
            "{s} is {v} from now on",
        ),
        "setting": (
            "flip {k} to {v} instead",
            "New value for {k}: \"{v}\".",
            "{k} is {v} now, I've updated the env file",
        ),
    },
)

"""A sixth phrasing set, ``blind`` (issue 44, ADR 0097): written by someone who had not read
the extractor (nor the checklist's ADRs), only the evaluation's plug-in format and the
scorer, and never rephrased after a run. It is frozen: a change to it is a new set.

Registers mixed on purpose: terse chat, long-winded explanations, hedges, passive voice,
the value before its subject, numbered lists, questions answered a sentence later,
numbers in words, soft and hard preferences, negations, updates worded unlike the first
statement, and whole sentences in German, Spanish and Chinese (English subjects and
values inside them, as mixed teams write; spaces around them, as Chinese writers set
Latin words).
"""

from __future__ import annotations

from .canaries import Phrasings

BLIND = Phrasings(
    name="blind",
    templates={
        "rule": (
            "Constraints, in order of importance: 1) {s} no higher than {v}; 2) no exceptions without sign-off.",
            ("I'll say it once more because it keeps coming up in review: the {s} must never exceed {v}, "
             "regardless of what the customer wants or how convenient a bit more would be."),
            "If I remember right (and I'm fairly sure I do), the {s} can't go beyond {v}.",
            "{V} is the ceiling. For the {s}, that is.",
            "The {s} has been fixed at {v} by the platform group and may not be raised.",
            "what's the {s} again? — {v}, and it's a hard ceiling",
            "Wichtig: {s} höchstens {v}, da gibt es keine Ausnahme.",
            "{s} 的上限是 {v}，任何情况下都不能超过。",
        ),
        "decision": (
            "Between the three candidates, {v} came out on top as the {s} — {r}.",
            "{V} has been selected as the {s}, because {r}.",
            ("I'm not a hundred percent sure it's the perfect choice, but we're committing to {v} "
             "for the {s}: {r}."),
            "decided: {s} -> {v} ({r})",
            "Which {s} did we pick in the end? {V}. Main argument: {r}.",
            "For the record, after two rounds of benchmarks the {s} is going to be {v}, given that {r}.",
            "Decidimos usar {v} como {s} porque {r}.",
            "{s} 最后定了 {v}，理由是 {r}。",
        ),
        "person": (
            "Who's the {s} these days? That'd be {v}.",
            "{V} — {s}, effective immediately.",
            "Approvals on this go through the {s}, which at the moment is {v}.",
            "The role of {s} has been assigned to {v}.",
            "I believe {v} is still acting as {s}, but double-check before escalating.",
            "Als {s} ist ab sofort {v} zuständig.",
            "{V} es ahora el {s}; cualquier duda, habla con {v}.",
        ),
        "date": (
            "{S}: {v}. Not movable.",
            ("Just to confirm the timeline, we're targeting {v} for the {s}, assuming nothing else "
             "slips in the meantime."),
            "{V} — that's when the {s} is.",
            "The {s} has been set for {v}.",
            "Anyone know when the {s} is? Never mind, found the invite: {v}.",
            "I think the {s} might be {v}, but don't quote me on it.",
            "Termin für {s}: {v}, bitte im Kalender eintragen.",
            "{s} 定在 {v}，大家提前准备。",
        ),
        "amount": (
            "rough numbers: {s} {v}",
            ("Having gone through the numbers line by line over the weekend, I can tell you the {s} "
             "works out to {v}, a bit more than any of us guessed."),
            "{V}, give or take ten percent: that's the {s}.",
            "The {s} was measured at {v} on the last three runs.",
            "How large is the {s}, roughly? I checked: {v}.",
            "I'd guess the {s} is somewhere near {v}, though I haven't re-checked since the upgrade.",
            "El {s} ronda los {v}, según el panel de ayer.",
            "Der {s} liegt aktuell bei etwa {v}.",
        ),
        "version": (
            "{s} {v}, nothing newer",
            ("Production is running {s} at {v} and I'd rather nobody touch that until the data "
             "migration is behind us."),
            "{v} of {s} is the last release that works with our plugins.",
            "{s} has been pinned to {v} in pyproject.",
            "Which {s} are we on? Checked the lockfile: {v}.",
            "I'm fairly sure we need {s} {v} or the tests break, but let me verify.",
            "Wir bleiben bei {s} {v}, bis das Upgrade getestet ist.",
            "{s} 锁定在 {v}，先别升级。",
        ),
        "setting": (
            "env -> {k}={v}, the rest default",
            ("When you deploy the worker tonight, please double-check that {k} is set to {v}; last "
             "time it silently fell back to the default and we spent an hour figuring out why."),
            "{v} is the value for {k} everywhere except local dev.",
            "{k} has been configured as {v} on all three clusters.",
            "what should {k} be? {v}, per the runbook.",
            "I think {k} wants to be {v} here, if I'm reading the docs right.",
            "生产环境里 {k} 要设成 {v}。",
            "En producción, {k} tiene que ser {v}.",
        ),
        "preference": (
            "If it's all the same to you, I'd lean towards {v} for {s}.",
            "{V} for {s}. Always. Not up for debate.",
            "Small thing, but I do appreciate it when {s} uses {v}.",
            "When it's {s}, {v} is what I reach for first.",
            "My strong preference: {v} in {s}, wherever possible.",
            "Bei {s} bitte {v}, das liest sich für mich am besten.",
            "Para {s} prefiero {v}, si no te importa.",
        ),
        "task": (
            "{s}: checked off, {n}/{m}",
            ("Of the {m} steps in the plan, {n} are now finished, the most recent being the {s}, "
             "which took longer than it should have."),
            "Done: {s}. That's {n} of {m}.",
            "The {s} has been completed — step {n} out of {m}.",
            "Is the {s} finished? Yes, merged an hour ago; we're at {n} of {m}.",
            "I think the {s} is sorted now (step {n} of {m}), but I'll rerun CI to be sure.",
            "{n} down out of {m}: the {s} landed.",
        ),
        "question": (
            "Something we keep dodging: whether {s}.",
            "Still unresolved after two meetings — does anyone know if {s}?",
            "Whether {s} remains up in the air.",
            "Before we ship, someone has to decide whether {s}; I don't have an answer.",
            "Q: {s}? A: nobody knows yet.",
            "还没定下来的问题：{s}？",
            "Noch offen: ob {s}.",
        ),
    },
    negated=(
        "Hard no on {v} in {s}.",
        ("I know it's tempting and everyone does it, but please never reach for {v} when you're "
         "working on {s}."),
        "{S} must not contain {v}.",
        "I won't approve changes to {s} that bring in {v}.",
        "Could {s} go without {v} from now on? It has caused trouble twice.",
        "No quiero ver {v} en {s}, por favor.",
    ),
    updates={
        "rule": (
            "Ops just revised it — {s} goes to {v}, starting now.",
            "Forget the earlier figure; from this sprint on the {s} is {v}.",
            "The {s} was changed to {v} in yesterday's review.",
            "Neue Vorgabe vom Betrieb: {s} ab sofort {v}.",
        ),
        "decision": (
            "On reflection the {s} becomes {v}; {r}.",
            "We've ditched the earlier pick — {v} is the {s} going forward, since {r}.",
            "{V} replaced our old {s} choice this week because {r}.",
            "Al final cambiamos el {s} a {v}, porque {r}.",
        ),
        "person": (
            "{V} stepped in as {s} after the reshuffle.",
            "Ownership moved: the {s} is {v} from Monday.",
            "Going forward, direct {s} questions to {v}.",
            "Neue Zuständigkeit: {s} ist jetzt {v}.",
        ),
        "date": (
            "The {s} has been rescheduled for {v}.",
            "Calendar change: {v} for the {s} now, not the old date.",
            "they moved the {s} — {v}, so plan accordingly",
            "Cambio de fecha: la {s} pasa al {v}.",
        ),
        "amount": (
            "New measurement after the fix: {s} at {v}.",
            "Ignore the earlier number, the {s} actually comes to {v}.",
            "{V} — that's the corrected {s} from today's run.",
            "更新一下：{s} 现在是 {v}。",
        ),
        "version": (
            "{s} got bumped to {v} in the last dependency PR.",
            "Moved {s} over to {v}; the old pin broke an import.",
            "lockfile now says {s} {v}",
            "{s} läuft jetzt auf {v}, bitte lokal nachziehen.",
        ),
        "setting": (
            "Changed my mind on {k}: make it {v}.",
            "{k} was switched to {v} after the incident.",
            "new {k} is {v}, redeploying now",
            "Ahora {k} vale {v}, ya lo cambié en el .env.",
        ),
    },
)

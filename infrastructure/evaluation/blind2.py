"""A seventh phrasing set, ``blind2`` (issue 44, ADR 0102): written under ADR 0097's rule (the
extractor and the checklist's ADRs unread; only the plug-in format, the scorer, how sessions
plant and supersede, and ``--sets``), after ``blind`` had been used to diagnose. Never
rephrased after a run, frozen: a change to it is a new set.

Registers chosen to differ from ``blind``'s: status-report prose, chat shorthand, meeting
minutes ("- AI: ..."), the fact in a subordinate clause of a sentence about something else,
reported speech, conditionals, a value given as the fix of a typo, the unit spelled out,
first-person statements by the assistant for the kinds the session gives it (decisions,
amounts, versions, task state), and whole French, Portuguese and Japanese sentences with the
English subject and value inside (in Japanese set off by spaces, as Latin words often are).
Updates never say "update", "now", "changed" or "actually".
"""

from __future__ import annotations

from .canaries import Phrasings

BLIND2 = Phrasings(
    name="blind2",
    templates={
        "rule": (
            "Status for the week: the {s} was confirmed at {v} by ops, so planning assumes it and nothing above it.",
            "fyi {s} hard cap {v}, ops orders",
            "- Agreed (ops sync): {s} stays at or under {v}, no exceptions granted in the meeting.",
            ("While you're in the deploy scripts, and bearing in mind that the {s} may not go past {v}, could "
             "you also tidy the retry loop nobody has looked at since spring?"),
            "Dana from ops said the {s} is {v} and she will bounce any change that goes over it.",
            "If a change would take the {s} past {v}, it doesn't merge; that is the rule.",
            "Typo in the ticket: the {s} ceiling is {v}, not the figure written there.",
            "Attention : le {s} ne doit jamais dépasser {v}.",
            "{s} は {v} を超えてはいけません。",
        ),
        "decision": (
            "Status: the {s} work is unblocked, I've gone with {v} since {r}.",
            "re {s}: {v}, bc {r}",
            "- DECISION (architecture review): {v} for the {s}; rationale: {r}.",
            ("I rewrote the connection setup in the worker, which, with {v} as our {s} because {r}, no longer "
             "needs the hand-rolled reconnect logic."),
            "Dana told me the architecture group signed off on {v} as the {s}, as {r}.",
            "Unless someone objects by Friday, the {s} is {v}: {r}.",
            "I picked {v} over the alternatives for the {s}; {r}.",
            "Escolhemos {v} para o {s}, já que {r}.",
            "{s} は {v} に決めました。理由は {r} です。",
        ),
        "person": (
            "Staffing note for this sprint: {v} holds the {s} role.",
            "{s} = {v} this wk, ping them not me",
            "- AI: {v} to act as {s} through the release",
            "The flaky login test, which {v} as our {s} already flagged twice last month, is back after the merge.",
            "Dana said {v} took on the {s} duties while she is on leave.",
            "If the pager goes off overnight, wake {v}; they're the {s}.",
            "Pour toute question, le {s} c'est {v}.",
            "Quem responde como {s} é {v}, pelo menos até o fim do mês.",
            "{s} の担当は {v} です。",
        ),
        "date": (
            "Timeline is unchanged: {s} on {v}, everything else hangs off it.",
            "{s} {v}, dont book leave that week",
            "- Date set: {s}, {v}.",
            ("Could you move the export job off the shared runner before the {s} on {v}, since that box will "
             "be busy with the load tests all week?"),
            "Dana said the {s} is booked for {v} and the invites went out this morning.",
            "If the {s} really is on {v}, the schema work has to merge a week before.",
            "La date du {s} est fixée au {v}.",
            "O {s} ficou marcado para {v}.",
            "{s} は {v} に決まりました。",
        ),
        "amount": (
            "Numbers for the report: the {s} stands at {v} as of this morning's run.",
            "{s} ~{v} fwiw",
            "- Noted: {s} measured at {v} (source: the load test dashboard).",
            ("I split the query into two passes, which, given that the {s} is {v} at the moment, should leave "
             "enough headroom for the next import."),
            "Dana from SRE told me the {s} was {v} over the weekend, and my own run agrees.",
            "If the {s} stays at {v}, we can skip the extra node this quarter.",
            "In full units, to avoid a mix-up with the other dashboard: {s} is {v}.",
            "Small correction to what I wrote above: the {s} is {v}; I had two digits swapped.",
            "D'après le tableau de bord, le {s} est d'environ {v}.",
        ),
        "version": (
            "Dependency status: {s} sits at {v}, pinned, and I'm leaving it there for the release.",
            "{s}@{v} fyi",
            "- AI: keep {s} on {v} until the upgrade spike is through",
            ("I fixed the serializer warning, which only shows because we're on {s} {v} and it deprecates the "
             "old keyword, so the logs are quiet again."),
            "Dana said the security scan passes only with {s} {v}, so I pinned it there.",
            "If anyone regenerates the lockfile, {s} has to come out as {v} or the plugin tests break.",
            "My last message had a typo in the version: {s} is {v}.",
            "Deixei o {s} travado na versão {v}.",
            "{s} は {v} に固定しています。",
        ),
        "setting": (
            "Config status: {k} reads {v} on every cluster after last night's deploy.",
            "{k}: {v} plz, all envs",
            "- AI (infra): set {k} to {v} in the Helm chart",
            ("When you get to the worker Dockerfile, and remembering that {k} has to be {v} there or the "
             "health check lies, please also drop the unused build stage."),
            "Dana said {k} is {v} in prod and she'd like staging to match.",
            "If {k} isn't {v}, the canary deploy fails its smoke test.",
            "Typo fix for the runbook: {k} should say {v}.",
            "En prod, {k} doit valoir {v}.",
            "本番では {k} を {v} に設定してください。",
        ),
        "preference": (
            "Style note for the review checklist: {v} in {s} wherever it fits.",
            "{v} for {s} pls, easier on my eyes",
            "- Team convention: {s} written with {v}.",
            ("When you refactor the exporter, which I'd like done with {v} as I always prefer for {s}, keep "
             "its signature stable."),
            "Dana mentioned I'm the one who keeps asking for {v} in {s}, and yes, I still want it.",
            "If you have the choice, go for {v} in {s}; it's what I like reading.",
            "Em {s}, prefiro {v}.",
            "{s} では {v} を使ってほしいです。",
        ),
        "task": (
            "Status: {n} of {m} steps complete; the {s} was the one finished today.",
            "{s} done ({n}/{m}), moving on",
            "- Closed: {s}, step {n}/{m}, landed on main.",
            ("I cleaned up the fixtures, which became possible once the {s} was finished as step {n} of {m}, "
             "and deleted two dead helpers."),
            "The CI bot reports the {s} as completed, so we're {n} steps into {m}.",
            "Since the {s} is done, step {n} of {m}, I can start on the next one.",
            "Terminei o {s} (passo {n} de {m}): landed no main.",
            "{s} は landed です（ステップ {n}/{m}）。",
        ),
        "question": (
            "Open item for the status report: whether {s}; no owner yet.",
            "q: {s}?? nobody's answered",
            "- Parked: whether {s} (revisit next sync).",
            ("The export refactor is fine to merge, although we still owe legal an answer on whether {s}, "
             "which might change the column list."),
            "Dana asked whether {s}, and none of us could say.",
            "If it turns out that {s}, the migration plan has to change; we don't know yet.",
            "Question ouverte : est-ce que {s} ? Personne ne sait.",
            "未解決: {s} かどうか、まだ誰も分かりません。",
        ),
    },
    negated=(
        "Review rule of mine: no {v} in {s}, whoever wrote it.",
        "pls no {v} in {s} ty",
        "- Agreed: {s} ships without {v}.",
        ("While you're restructuring {s}, which should never pick up {v} again after last time, also rename "
         "the helpers."),
        "Dana reminded everyone that I don't accept {v} in {s}, and she's right.",
        "If a patch doesn't keep {v} out of {s}, I'll send it back.",
        "Correction to my earlier note, I meant the opposite: avoid {v} in {s}.",
    ),
    updates={
        "rule": (
            "Per the new memo from ops the {s} is {v}, starting with this sprint.",
            "Scratch the old ceiling: {s}, {v}.",
            "- AI (ops): {s} reset to {v}, effective Monday",
            "Dana said finance signed off a different {s}: {v}.",
            "Le {s} passe à {v} à partir de lundi.",
        ),
        "decision": (
            "I walked back the earlier pick: {v} is the {s} from here on, since {r}.",
            "I've swapped the {s} for {v}; {r}.",
            "Following the retro, {v} takes over as the {s}, because {r}.",
            "O {s} passou a ser {v}, porque {r}.",
            "- DECISION revised: {s} -> {v} ({r})",
        ),
        "person": (
            "{V} is covering as {s} from Monday; the rota got reshuffled.",
            "Per the new org chart, {s}: {v}.",
            "- AI: hand the {s} duties over to {v}",
            "Dana said {v} took the {s} hat this morning.",
            "Le nouveau {s}, c'est {v}.",
        ),
        "date": (
            "We slipped: the {s} lands on {v}.",
            "{S} pushed back again, to {v}.",
            "Bin the old date for the {s} in your calendars: {v}.",
            "The client asked to move the {s}; it is {v}.",
            "新しい日程: {s} は {v} です。",
        ),
        "amount": (
            "I re-ran the benchmark after the fix and the {s} comes in at {v}.",
            "Correcting my own figure: {s} is {v}, I misread the dashboard.",
            "Fresh numbers on the {s}: {v}.",
            "With the new index in place the {s} settles at {v}.",
            "O {s} ficou em {v} depois da correção.",
        ),
        "version": (
            "I bumped {s} to {v} to pick up the security fix.",
            "I re-pinned {s} at {v} after the import error.",
            "Dependabot's PR moving {s} to {v} is merged.",
            "Lockfile regenerated; {s} resolves to {v}.",
            "{s} を {v} に切り替えました。",
        ),
        "setting": (
            "Flip {k} over to {v}; the old value was a typo.",
            "Per the new runbook {k} should read {v}.",
            "ops wants {k}={v} going forward",
            "Après l'incident, on met {k} à {v}.",
            "Scratch the earlier {k}, make it {v}.",
        ),
    },
)

"""An eighth phrasing set, ``blind3`` (issue 44, ADR 0105): written under ADR 0097's rule (the
extractor and the checklist's ADRs unread; only the plug-in format, the scorer, how sessions
plant and supersede, and ``--sets``), after ``blind2`` had been used to diagnose. No
summarizer was run on it while it was written; frozen: a change to it is a new set.

Registers chosen to differ from ``blind``'s and ``blind2``'s: commit messages and changelog
entries, code-review comments ("nit:", "blocking:"), incident postmortem prose, ticket
fields ("Owner: ...", "Due: ..."), the fact inside parentheses or after a semicolon, other
numbers in words and digits around the value, long sentences that hold the subject and the
value far apart, a terse reply quoted under its question, passive and impersonal forms, and
whole Italian, Dutch and Korean sentences with the English subject and value inside (in
Korean a space or a punctuation mark follows the value, never a particle, so the value
stays a token of its own).
Updates are corrections of a colleague, retractions, plans that moved ("aiming for ...
instead", "pushed to"), and some name the subject with another noun first ("that knob")
and its name only afterwards.
"""

from __future__ import annotations

from .canaries import Phrasings

BLIND3 = Phrasings(
    name="blind3",
    templates={
        "rule": (
            "chore(limits): enforce a {s} of {v} in the deploy gate",
            "blocking: this PR would push the {s} past {v}, and that is the one line we agreed not to cross.",
            ("Postmortem, contributing factor 2: nobody enforced the {s} of {v}, so a single tenant "
             "saturated the cluster at 03:12."),
            "Constraint: {S} | Limit: {v} | Enforced by: CI gate | Waivers: none",
            "Keep the new importer lean (the {s} is {v}, full stop) and ship it behind the flag.",
            ("It is expected that the {s} will be held to {v} in every environment, including the ones "
             "people forget about, like the nightly sandbox."),
            ("The {s}, which finance, ops and two platform leads argued over for the better part of a "
             "quarter before anyone wrote it somewhere people would read, is {v}."),
            "Of the 4 limits in the doc, the one with teeth is the {s}: {v}, a hundred percent of the time.",
            "Regola fissa: il {s} resta entro {v}, senza eccezioni.",
            "{s}의 상한은 {v}, 예외는 없습니다.",
        ),
        "decision": (
            "feat(infra): adopt {v} as the {s} ({r})",
            "Changelog, Added: {v} as our {s}, chosen because {r}.",
            "suggestion (non-blocking): since {r}, I kept {v} for the {s} rather than rolling our own.",
            ("Remediation item 3 was choosing a {s}; I went with {v}, as {r}, and the rollback drill "
             "passed with it."),
            "Decision record | Topic: {s} | Outcome: {v} | Why: {r}",
            "I routed the retry path through the new client (the {s} is {v}, because {r}) and deleted the shim.",
            "{V} has been adopted as the {s} on the grounds that {r}.",
            ("The {s}, after I had compared four candidates, read two years of their issue trackers and "
             "soaked each on the spare box over a long weekend, ends up being {v}, mostly because {r}."),
            "Per il {s} ho scelto {v}, perché {r}.",
            "Voor de {s} heb ik voor {v} gekozen, omdat {r}.",
        ),
        "person": (
            "Owner: {v} | Role: {s} | Backup: whoever is next on the rota",
            "nit: CODEOWNERS should list {v}, who is the {s}, not the old alias.",
            "Timeline, 02:40: the page went to {v} as {s}, who acknowledged within 4 minutes.",
            "docs(team): name {v} as {s} in the runbook",
            "Send the draft to the {s} ({v}) before Thursday.",
            "Escalations skip me this month; the {s} is {v}.",
            "The {s} duties are being handled by {v} until further notice.",
            "> and the {s} this cycle?  {v}, per the rota.",
            "Il {s} è {v}, almeno fino a fine trimestre.",
            "{s} 담당자는 {v} 님입니다.",
        ),
        "date": (
            "Milestone: {s} | Due: {v} | Slack: none left",
            "chore(calendar): pin the {s} to {v} in the release plan",
            "blocking: this migration has to merge before the {s} ({v}), otherwise it waits a month.",
            ("Lessons learned: the last outage fell nine days before the {s} on {v}, which is why change "
             "reviews tighten around it."),
            "Book nothing big that week; the {s} falls on {v}.",
            ("The {s}, which legal wanted earlier, sales wanted later, and which I was told three different "
             "things about in three meetings before somebody put it in the shared calendar, is {v}."),
            "It has been agreed that the {s} takes place on {v}.",
            "T-minus twelve working days and 1 rehearsal, then the {s} on {v}.",
            "De {s} staat gepland op {v}.",
            "{s} 일정은 {v}, 변동 없음.",
        ),
        "amount": (
            "Changelog (metrics): {s} measured at {v} on the release candidate.",
            "nit: the docstring says otherwise, but I measured the {s} at {v} on this branch.",
            "Impact section: with the hotfix in, the {s} sits at {v}, which the SLO tolerates.",
            "Metric: {s} | Observed: {v} | Source: my benchmark run",
            "I left the cron schedule alone (the {s} is {v}, well inside the window) and moved on to the alerts.",
            "No extra node needed; the {s} came out at {v} in my three runs.",
            "Averaged over twenty-four runs on 2 machines, I get a {s} of {v}.",
            ("The {s}, once I had excluded the cold-start runs, the two where the VPN dropped, and the one "
             "where somebody's backup job shared our disk, comes out at {v}."),
            "Secondo le mie misure il {s} è di {v}.",
            "Volgens mijn meting komt de {s} uit op {v}.",
        ),
        "version": (
            "build(deps): pin {s} to {v}",
            "Dependencies: {s} {v} (pinned, see the plugin matrix).",
            "blocking: the lockfile has to keep {s} at {v}; I checked it against every plugin we ship.",
            ("Resolution: I pinned {s} to {v} in both images, which is what staging had been running "
             "all along."),
            "Package: {s} | Pinned: {v} | Reason: plugin compatibility",
            "I regenerated the stubs against the pinned {s} ({v}) so mypy stops complaining.",
            "Checked the resolver output; {s} comes out as {v}.",
            ("Our {s} pin, which I had to bisect through a dozen releases and two yanked wheels before the "
             "integration suite went green on every Python we support, stays at {v}."),
            "Ik heb {s} vastgezet op versie {v}.",
            "{s}는 {v} 버전으로 고정했습니다.",
        ),
        "setting": (
            "config: set {k}={v} for all environments",
            "nit: {k} should be {v} in the staging overlay too, it drifted.",
            "Action item 1 of 3: {k} goes to {v} in prod; the workers starved at 14:05 without it.",
            "Key: {k} | Value: {v} | Scope: every cluster",
            "Redeploy the worker (with {k} at {v}, please) once the migration is through.",
            "One deviation from the chart's defaults; {k} is {v}.",
            "{k} is to be set to {v} wherever the chart is rendered.",
            "> {k} for prod?  {v}, same as staging.",
            "In produzione {k} va impostato a {v}.",
            "설정 변경: {k} = {v} (운영 환경 전체).",
        ),
        "preference": (
            "nit: I'd like {v} for {s}, it's how I read code fastest.",
            "CONTRIBUTING, house style: {s} uses {v}.",
            "Convention: {s} | Preferred: {v} | Requested by: me",
            "Go ahead with the parser rewrite ({v} for {s}, as I like it) whenever you're ready.",
            "Your call on naming; for {s}, {v} gets my vote.",
            "{V} is favoured for {s} in this codebase.",
            ("When it comes to {s}, and I say this having read more of this codebase at two in the morning "
             "than I'd like, {v} is what I want to see."),
            "Per {s} preferisco {v}, se possibile.",
            "Bij {s} heb ik liever {v}.",
            "{s}에서는 {v} 방식을 선호합니다.",
        ),
        "task": (
            "feat: {s} done (step {n}/{m} of the plan)",
            "Changelog, Unreleased: {s} completed; {n} of {m} plan items ticked.",
            "Resolved your last review comment, so the {s} is finished; that makes {n} out of {m}.",
            "Step number {n} (the {s}) is complete; {m} minus {n} to go.",
            "Task: {s} | Status: landed | Progress: {n}/{m}",
            "I moved on to the next item (the {s} is sorted, {n} of {m}).",
            "The {s} has been checked off; {n} of the {m} steps are behind us.",
            ("The {s}, which I had to restart twice because the fixtures kept drifting and staging was "
             "being restored halfway through, is wrapped up: step {n} of {m}."),
            "Il {s} è finished: passo {n} di {m}, si va avanti.",
            "De {s} is done, stap {n} van {m}.",
        ),
        "question": (
            "Open question | Topic: whether {s} | Owner: unassigned | Due: before launch",
            "question (blocking): do we know whether {s}? I can't approve the schema until we do.",
            "Unanswered at the postmortem: whether {s}, which nobody in the room could settle.",
            "Ship the endpoint behind the flag (we still don't know if {s}) and collect feedback.",
            "The plan holds; what's unclear is whether {s}.",
            ("Whether {s} is, after three threads, a design doc and one very long call, still something "
             "none of us can answer."),
            "It has yet to be determined whether {s}.",
            "TODO(spec): find out whether {s}",
            "Domanda aperta: non sappiamo ancora se {s}.",
            "아직 결정되지 않음: {s} 여부.",
        ),
    },
    negated=(
        "blocking: no {v} in {s}, please take them out before I approve.",
        "nit (but I mean it): {s} shouldn't grow any {v}.",
        "Postmortem note: never again {v} in {s}; that is how the last regression hid.",
        "Lint rule request | Scope: {s} | Policy: no {v} | Exceptions: none",
        "Merge it once CI is green (and without {v} in {s}, as usual).",
        "Style is mostly yours to choose; just don't bring {v} into {s}.",
        "{V} is not to be used in {s}.",
        ("Whatever the generator spits out and however much time it would save on a Friday afternoon, "
         "{s} never gets {v}."),
    ),
    updates={
        "rule": (
            "Small correction to Marco's summary: the {s} is {v}, he had last quarter's figure.",
            "Ignore what I said about the {s} earlier; it's {v}.",
            "Ops are aiming for {v} on the {s} instead.",
            "That ceiling ops handed us goes to {v}; the {s}, I mean.",
            "Rettifica: il {s} passa a {v}.",
        ),
        "decision": (
            "Disregard my earlier pick for the {s}: I'm going with {v}, since {r}.",
            "Contrary to what Sam wrote in the ticket, the {s} is {v}; {r}.",
            "We're aiming for {v} as the {s} instead, because {r}.",
            "For that piece of the stack it's {v} from here on, as {r} (this is the {s}).",
            "Herzien besluit: de {s} wordt {v}, omdat {r}.",
        ),
        "person": (
            "Correcting Sam's message above: the {s} is {v}, not who he named.",
            "Ignore what I told you about the {s}; it's {v} from this week.",
            "Owner reassigned: {s} -> {v}",
            "The person holding that pager from Monday is {v}, the {s} to be precise.",
            "Cambio di guardia: il nuovo {s} è {v}.",
        ),
        "date": (
            "Heads-up, the client has pushed the {s} to {v}.",
            "Jo's invite has the wrong day; the {s} is on {v}.",
            "Strike my earlier date for the {s}; {v} it is.",
            "That cutover day moved to {v} (the {s}).",
            "De {s} schuift op naar {v}.",
        ),
        "amount": (
            "Jo's number in the doc is off: the {s} is {v} on my runs.",
            "Forget the {s} I quoted this morning; the rerun gives {v}.",
            "We're aiming for a {s} of {v} instead, which the new index makes realistic.",
            "That number from the dashboard comes out at {v} after the fix; the {s}, that is.",
            "재측정 결과, {s}는 {v}.",
        ),
        "version": (
            "build(deps): move {s} off the old pin onto {v}",
            "Never mind the pin I mentioned for {s}; it resolves to {v}.",
            "Sam's comment has the wrong pin: {s} is on {v}.",
            "That library we fought with last week is on {v} as of this build ({s}).",
            "Ho portato {s} alla versione {v}.",
        ),
        "setting": (
            "Marco's runbook edit is wrong: {k} should be {v}.",
            "Take back what I wrote on {k}: {v}.",
            "We're aiming for {k}={v} instead once the load test is through.",
            "That knob from the incident goes to {v}, i.e. {k}.",
            "Config pushed to every cluster: {k} set to {v}.",
        ),
    },
)

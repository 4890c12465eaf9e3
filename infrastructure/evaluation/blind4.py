"""A ninth phrasing set, ``blind4`` (issue 44, ADR 0108): written under ADR 0097's rule (the
extractor and the checklist's ADRs unread; only the plug-in format, the scorer, how sessions
plant and supersede, and ``--sets``), after ``blind3`` had been used to diagnose. No
summarizer was run on it while it was written; frozen: a change to it is a new set.

Registers chosen to differ from those of ``blind``, ``blind2`` and ``blind3``: chat-ops
threads with emoji shortcodes (":rotating_light: @here"), meeting minutes with their
attendees ("present: ..."), markdown checklists ("- [x]"), markdown tables with a header
row, e-mails with a greeting and a sign-off, standup notes ("Yesterday / Today /
Blockers"), legal and policy prose ("shall", "is prohibited"), Gherkin scenarios, config
and shell lines inside prose (YAML with a comment, TOML, .env, Dockerfile, kubectl, pip),
log lines, hedged tag questions ("..., right?"), and whole Polish, Swedish and Russian
sentences with the English subject and value inside. A line break never falls between a
subject and its value (the scorer reads a canary on one line): in e-mails, tables and
diffs the two share a line.
Updates are errata, amendments, "(edited)" chat messages, struck-through values
("~~first pick~~"), diffs, U-turns and second thoughts, dates that slide or are pulled
forward, a role that passes or is inherited, and retests.
"""

from __future__ import annotations

from .canaries import Phrasings

BLIND4 = Phrasings(
    name="blind4",
    templates={
        "rule": (
            ":rotating_light: @here reminder from #ops-limits: {s} is {v}, hard stop :no_entry:",
            "- [ ] Before every deploy, confirm the {s} is still at or below {v}",
            "In limits.yaml: `{s}: {v}  # signed off by Ops, not negotiable`",
            ("Hi all,\n\nfollowing Tuesday's review, the {s} is fixed at {v} for every team.\n\n"
             "Kind regards,\nOksana (Ops)"),
            "Section 4.2: the {s} shall not exceed {v} under any circumstances; any breach is prohibited.",
            "Minutes, infra sync (present: Ravi, Oksana, me). Resolved unanimously: {s} held at {v}.",
            "| Limit | Value | Set by |\n|---|---|---|\n| {s} | {v} | Ops |",
            "I think we landed on {v} for the {s}, right? That's the ceiling I've been working to.",
            "Given the {s} is {v}, when a change would go over it, then the pipeline must refuse it.",
            "Zasada: {s} wynosi maksymalnie {v}, bez wyjątków.",
        ),
        "decision": (
            "Yesterday: compared the candidates for the {s}. Today: wiring in {v}, since {r}. Blockers: none.",
            "↳ replying in thread: I went for {v} as the {s} :white_check_mark: ({r})",
            "I left a note at the top of settings.py: `# {s} = {v}, picked because {r}`",
            "Hi Ravi,\n\nshort version: I settled the {s} on {v}, because {r}.\n\nBest regards",
            "| Concern | Pick | Rationale |\n|---|---|---|\n| {s} | {v} | {r} |",
            "I'm leaning hard towards {v} for the {s}, since {r}; unless you object, that's what goes in.",
            "I recorded it in stack.toml as `{s} = \"{v}\"`, because {r}.",
            "Outcome of the design review (present: you, Mei, me): {v} is our {s}, as {r}.",
            "Jag valde {v} som {s}, eftersom {r}.",
            "В качестве {s} я выбрал {v}, потому что {r}.",
        ),
        "person": (
            "{V} (cc'd) :wave: is the {s} this rotation; loop them in on anything risky.",
            "Attendees: {v} ({s}), Mei (QA), Ravi (infra), me.",
            "Thanks for the quick turnaround.\n\nBest,\n{v} | {S} | ext. 4471",
            "- [x] Page the {s} ({v}) before touching the primary",
            "The {s}, presently {v}, shall approve every production change of category B.",
            "| Role | Person | Since |\n|---|---|---|\n| {s} | {v} | sprint 31 |",
            "It's {v} who's the {s} at the moment, isn't it? I'll route the question there.",
            "owners.yaml has it right: `{s}: \"{v}\"`",
            "Od tego tygodnia {s} to {v}.",
            "Vår {s} är {v}, fråga där först.",
        ),
        "date": (
            "Calendar invite sent: \"{S}\", {v}, 10:00 to 11:00 CET, room 4B.",
            ":date: {s} is {v}; block your calendars :pray:",
            "Blockers: none, but the {s} on {v} is the hard edge for everything I'm doing.",
            "- [ ] Send the reminder mail a week before the {s} ({v})",
            "Dear all,\n\nplease hold {v} for the {s}; the agenda follows.\n\nRegards,\nMei",
            "The {s} is {v}, a fortnight after the sprint review, so count backwards from there.",
            "| Milestone | Date | Confirmed |\n|---|---|---|\n| {s} | {v} | yes |",
            "We said {v} for the {s}, didn't we? I've been telling the client that.",
            "The {s} shall take place no later than {v}, as per clause 7 of the agreement.",
            "Дата для {s}: {v}, переносов не будет.",
        ),
        "amount": (
            "Yesterday: profiled the service. Today: alerts. Note: {s} came out at {v}. Blockers: none.",
            "Log excerpt from my run: `INFO metrics {s}: {v} (n=5, warm cache)`",
            "| Metric | Measured | Target |\n|---|---|---|\n| {s} | {v} | within budget |",
            ":bar_chart: my numbers are in: {s} is {v} :tada:",
            "Hi,\n\nthe figure you asked for: {s}, {v}, measured on the staging copy.\n\nBest regards",
            "If I'm reading my own graphs right, the {s} is about {v}, which is where we wanted it, no?",
            "I recorded it in capacity.yaml as `{s}: {v}  # measured by me, 3 runs`.",
            "- [x] Measure {s}: {v} on the canary box",
            "Zmierzyłem {s}: wynosi {v}.",
            "Enligt mina mätningar ligger {s} på {v}.",
        ),
        "version": (
            "I pinned it in requirements.in: `{s}=={v}  # plugins break above this`",
            "pyproject has `{s} = \"{v}\"` under [tool.poetry.dependencies], locked by me.",
            "Today: dependency hygiene; {s} stays on {v} after my compatibility run. Blockers: the yanked wheel.",
            ":pushpin: pinned {s} to {v}, see thread :thread:",
            "| Package | Version | Why |\n|---|---|---|\n| {s} | {v} | plugin ABI |",
            "- [x] Lock {s} at {v} in both images",
            "Hi team,\n\na note for your local envs: I locked {s} at {v}.\n\nThanks",
            "Ran `pip install '{s}=={v}'` in the image and froze it there.",
            "Я зафиксировал {s} на версии {v}.",
            ("I believe {s} {v} is the last one the plugins load with; I've locked it there, though I'd "
             "like a second pair of eyes."),
        ),
        "setting": (
            "Put this in .env.production: {k}={v} (agreed with Ops, leave the rest alone)",
            "values.yaml, under worker: `{k}: {v}  # agreed with Ops`",
            "kubectl set env deployment/worker {k}={v} on all three clusters, please.",
            "Add `ENV {k}={v}` to the runtime stage of the Dockerfile.",
            ":gear: config ask: {k} should read {v} everywhere :pray: thx",
            "- [ ] Verify {k} is {v} on every node before unpausing the queue",
            "| Key | Value | Env |\n|---|---|---|\n| {k} | {v} | all |",
            "The boot log should say `config loaded: {k}={v}`; if it doesn't, the deploy is bad.",
            "I produktion ska {k} vara {v}.",
            "Na produkcji ustaw {k} na {v}, proszę.",
        ),
        "preference": (
            ":heart: {v} for {s}, it just reads better to me",
            "- [x] {S} uses {v} (my own review checklist, item 2)",
            "§3.1 (house style): {s} shall use {v} wherever practicable.",
            "I think I've said before that I like {v} for {s}, haven't I? Still true.",
            "Hi,\n\none wish for the refactor: {v} in {s}, if it's not too much trouble.\n\nThanks a lot",
            "| Area | My preference |\n|---|---|\n| {s} | {v} |",
            "If it were a lint setting it'd be `prefer: {v}  # for {s}`; that's my taste.",
            "Retro, keep doing: {v} in {s}; it made the last sprint painless.",
            "В {s} я предпочитаю {v}.",
            "W {s} wolę {v}.",
        ),
        "task": (
            "Yesterday: {s} ({n}/{m}) finished. Today: the next item. Blockers: none.",
            "- [x] {s} — done (step {n} of {m})",
            "Card \"{S}\" dragged to Done; the board shows {n}/{m}.",
            ":white_check_mark: {s} landed, that's {n} of {m} :rocket:",
            "Hi,\n\nprogress report: the {s} is complete, step {n} of {m}.\n\nBest",
            "| Step | Item | State |\n|---|---|---|\n| {n}/{m} | {s} | done |",
            "Unless the nightly finds something, the {s} counts as completed: {n} down, {m} in the plan.",
            "`[plan] step {n}/{m} {s}: finished`",
            "Krok {n} z {m}: {s} — completed, idę dalej.",
            "Sprint review (present: Mei, Ravi, me): {s} demoed and checked off, {n} of {m}.",
        ),
        "question": (
            ":thinking_face: does anyone know whether {s}? asking for the migration",
            "Minutes, open points (present: Mei, Ravi, me): whether {s}. No owner yet.",
            "- [ ] Find out whether {s}",
            "Hi Mei,\n\ncould you check with legal whether {s}? We can't close the spec without it.\n\nThanks",
            "| Open point | Owner |\n|---|---|\n| whether {s} | nobody yet |",
            "We never really pinned down whether {s}, did we?",
            "Blockers: still waiting on whether {s}.",
            "Pending legal review: whether {s} (clause 9 shall apply until then).",
            "Öppen fråga: vet vi om {s}?",
            "Открытый вопрос: {s} или нет?",
        ),
    },
    negated=(
        ":no_entry_sign: no {v} in {s}, pretty please :pray:",
        "Policy 2.1: {v} shall not be introduced into {s}; doing so is prohibited.",
        "- [ ] No {v} in {s} (checked at every merge)",
        "I don't think we ever want {v} in {s}, do we?",
        "Hi,\n\none firm request: please don't put {v} into {s}.\n\nThanks",
        "| Area | Rule |\n|---|---|\n| {s} | no {v}, ever |",
        "Rule for the linter config: `{s}: no {v}` (error, not a warning)",
        "Scenario: {s} without {v}, given a diff that adds them, then CI fails.",
    ),
    updates={
        "rule": (
            "Erratum to Tuesday's mail: the {s} is {v}.",
            ":warning: {s}: {v}, per Oksana's call this morning (edited)",
            "Minutes, amendment 1: the {s} stands at {v} following the vote.",
            "Plot twist from ops: {s} is {v}. Yes, again.",
            "Section 4.2 is amended to read: the {s} shall not exceed {v}.",
        ),
        "decision": (
            "Second thoughts on the {s}: I'm going with {v} after all, since {r}.",
            "U-turn on my part: {v} is the {s} we ship, as {r}.",
            "Today: ripping out the first pick for the {s} in favour of {v}; {r}.",
            "| Concern | Pick | Rationale |\n|---|---|---|\n| {s} | ~~first pick~~ {v} | {r} |",
            "Я передумал: {s} будет {v}, потому что {r}.",
        ),
        "person": (
            "The baton passes to {v}: {s} from the next rotation.",
            "{V} inherits the {s} pager after the reorg.",
            "Hi all,\n\nplease note that the {s} role has passed to {v}.\n\nRegards",
            "| Role | Person |\n|---|---|\n| {s} | ~~as listed last sprint~~ {v} |",
            "Från och med måndag är {v} vår {s}.",
        ),
        "date": (
            "The {s} slides to {v}; the vendor needs another week.",
            ":calendar: ~~what the invite says~~ {s} is {v} :sweat_smile:",
            "Client pulled the {s} forward to {v}.",
            "Invite re-sent: {S}, {v}, same room.",
            "Termin {s} przesunięty na {v}.",
        ),
        "amount": (
            "Round two of my benchmark puts the {s} at {v}.",
            "Today: retested after the index landed; {s} sits at {v}.",
            "Fixing my own table: {s} = {v}, not what I posted at noon.",
            "| Metric | Before the fix | After |\n|---|---|---|\n| {s} | see above | {v} |",
            "Efter optimeringen landar {s} på {v}.",
        ),
        "version": (
            "Lockfile diff from my branch:\n```diff\n+{s}=={v}\n```",
            "Rolled {s} to {v} after the CVE advisory.",
            "{s}: {v} is what the image ships after tonight's rebuild.",
            "I pinned {s} at {v} in place of the spike's pin.",
            "Я перевёл {s} на {v}.",
        ),
        "setting": (
            "Ops overruled the runbook: {k}={v}.",
            "Turns out {k} has to be {v}; the load test says so.",
            "- [x] {k} → {v} (second pass, after the incident review)",
            "Ran `kubectl set env deploy/worker {k}={v} --overwrite` on all clusters.",
            "Po incydencie {k} = {v}.",
        ),
    },
)

"""A tenth phrasing set, ``blind5`` (issue 44, ADR 0113): written under ADR 0097's rule (the
extractor and the checklist's ADRs unread; only the plug-in format, the scorer, how sessions
plant and supersede, and ``--sets``), after ``blind4`` had been used to diagnose. No
summarizer was run on it while it was written; frozen: a change to it is a new set.

Registers chosen to differ from those of ``blind`` to ``blind4``: voice transcripts with
speaker labels and disfluencies ("Speaker 2: so um, the, the ..."), forwarded and quoted
e-mail ("---------- Forwarded message ---------", "> On Mon, Deniz wrote:"), slide-deck
outlines with bullets ("Slide 6: Guardrails" / "•"), footnotes ("[^1]: ..."), IRC-style
logs with a time and a nick ("[10:42] <deniz> ..."), Python source lines, JSON payloads,
CSV rows under a header line, poll results, shift handover notes, monitoring alerts
("[FIRING:1]"), SMS abbreviations ("b4", "2day"), and whole Turkish, Hindi (Devanagari),
Greek and Indonesian sentences with the English subject and value inside (a space or a
punctuation mark after the value, so that it stays a token of its own). A subject and its
value always share a line: the scorer reads a canary on one line.
Updates are self-repairs in speech ("no wait, sorry, I misspoke"), forwarded sign-offs,
the second edition of a slide, "belay my last", a poll held again, a hotfix, a vendor who
asks for more time, and a pager handed on at a given hour.
"""

from __future__ import annotations

from .canaries import Phrasings

BLIND5 = Phrasings(
    name="blind5",
    templates={
        "rule": (
            "Speaker 2 (ops): so um, the, the {s} is {v}, and uh, that's a hard ceiling, we don't go over it.",
            ("---------- Forwarded message ---------\nFrom: Ops <ops@example.com>\n\n"
             "Team, the {s} is {v}. Please plan within it."),
            "Slide 6: Guardrails\n• {S}: {v} (hard)\n• Exceptions: none",
            ("Sizing assumes last year's traffic plus headroom.[^1]\n\n"
             "[^1]: The {s} is {v}, set by ops; nothing may exceed it."),
            "[10:42] <deniz> reminder: {s} = {v}, hard limit\n[10:42] <ops-bot> ack",
            "LIMITS = {{\"{s}\": \"{v}\"}}  # ops ceiling; raising it needs sign-off",
            ("The policy endpoint returns `{{\"limit\": \"{s}\", \"max\": \"{v}\", \"hard\": true}}`; "
             "treat it as gospel."),
            ("Handover, night shift to day shift: nothing burning; remember the {s} is {v} and ops will "
             "bounce anything above it."),
            "[FIRING:1] QuotaGuard: {s} at 97% of {v} (hard limit, page ops before raising)",
            "Kural şu: {s} en fazla {v}, istisna yok.",
            "{s} की सीमा {v} है, इससे ऊपर बिल्कुल नहीं जाना।",
        ),
        "decision": (
            "(voice note, transcribed) okay so, uh, for the {s} I, I went with {v}, mostly because {r}.",
            "I ran a quick poll in the channel; {v} won the {s} vote 6 to 2, and I've wired it in, since {r}.",
            "Slide 9: Architecture choices\n• {S}: {v}, because {r}",
            ("The worker no longer needs its own retry loop.[^2]\n\n"
             "[^2]: I chose {v} as the {s}, since {r}."),
            "I wrote it into settings.py as `STACK[\"{s}\"] = \"{v}\"  # {r}`.",
            ("I recorded the choice in decisions.json: "
             "`{{\"topic\": \"{s}\", \"choice\": \"{v}\", \"why\": \"{r}\"}}`"),
            "I appended a row to decisions.csv:\ntopic,choice,why\n{s},{v},{r}",
            ("Handover from my side: {v} is what I wired in as the {s} ({r}); the next shift only has to "
             "deploy it."),
            "[16:05] <me> {s}: picked {v}, {r}; shout if you hate it",
            "{s} için {v} seçtim, çünkü {r}.",
            "Για το {s} διάλεξα {v}, επειδή {r}.",
            "Saya memilih {v} untuk {s} karena {r}.",
        ),
        "person": (
            "Speaker 1: and, um, who's, who's the {s} at the moment? Speaker 3: uh, that's {v}.",
            "> On Mon, Deniz wrote:\n> The {s} for this quarter is {v}; send escalations there.",
            "Slide 2: Who to ask\n• {S}: {v}\n• Everything else: #help-platform",
            "Escalate anything unusual before acting.[^3]\n\n[^3]: To the {s}, i.e. {v}.",
            "[08:57] <deniz> whoever needs the {s}: it's {v} until Friday",
            "From the rota API: `{{\"role\": \"{s}\", \"person\": \"{v}\", \"until\": \"end of sprint\"}}`",
            "Handover note: the {s} overnight is {v}; their phone number is on the rota sheet.",
            "{s} = {v} 2day, txt them b4 u merge",
            "Bu ay {s} olarak {v} görevde, önce ona sorun.",
            "इस महीने {s} {v} हैं, पहले उनसे बात कीजिए।",
            "Υπεύθυνος ως {s} αυτή την εβδομάδα: {v}.",
        ),
        "date": (
            "Speaker 2: the {s} is, um, hang on, it's {v}. yeah. {v}.",
            ("---------- Forwarded message ---------\nSubject: {S}\n\n"
             "Hi all, the {s} is confirmed for {v}."),
            "Slide 11: Roadmap\n• {v}: {s}\n• After that: stabilisation",
            "Nothing risky merges in the last week before it.¹\n\n¹ The {s}, on {v}.",
            "[13:20] <deniz> {s} is {v}, blocking the whole week in the shared calendar",
            "Please keep this guard in the deploy script: `if today >= parse(\"{v}\"): abort(\"{s} in effect\")`",
            "milestone,date,owner\n{s},{v},PMO",
            "Poll result for the {s} date: {v}, 5 votes out of 7.",
            "{s} tarihi {v}, lütfen takvime ekleyin.",
            "{S} dijadwalkan pada {v}, mohon dicatat.",
            "Η ημερομηνία για το {s} είναι {v}, δεν αλλάζει.",
        ),
        "amount": (
            "(my voice memo, transcribed) so the, the {s}, I measured it at, uh, {v}.",
            "The alert I set up reported `[OK] {s}={v} (window: last 30m)` after my load run.",
            "Slide 5: What I measured\n• {S}: {v}\n• Method: three runs, warm cache",
            ("The current plan fits with room to spare.[^4]\n\n"
             "[^4]: I measured the {s} at {v} on the staging copy."),
            "I froze it in bench_expectations.py: `EXPECTED = {{\"{s}\": \"{v}\"}}  # from my benchmark`",
            "The benchmark I ran printed `{{\"metric\": \"{s}\", \"value\": \"{v}\", \"runs\": 5}}`.",
            "I exported my numbers as CSV:\nmetric,value,runs\n{s},\"{v}\",5",
            "Handover from my shift: I measured the {s} at {v} after the deploy, nothing else to report.",
            "Ölçtüğüm {s} değeri {v} civarında.",
            "मेरे माप के हिसाब से {s} लगभग {v} है।",
            "Hasil pengukuran saya: {s} sekitar {v}.",
        ),
        "version": (
            "(voice note, transcribed) uh, quick one, I, I locked {s} at {v}, the plugins need it.",
            "Slide 7: Dependencies\n• {s} {v}, pinned by me\n• the rest: floating",
            ("The image builds reproducibly again.[^5]\n\n"
             "[^5]: I pinned {s} to {v}; later releases break the plugins."),
            "I added a guard in conftest.py: `assert version(\"{s}\") == \"{v}\"`",
            "`pip inspect` on the image shows `{{\"name\": \"{s}\", \"version\": \"{v}\"}}`; I pinned it there.",
            "I listed the pins in deps.csv:\npackage,version,reason\n{s},{v},yanked successor",
            "[11:03] <me> {s} locked at {v} in both images, don't let renovate touch it",
            "Handover: I left {s} on {v} in the lockfile; don't regenerate it before the release.",
            "{s} paketini {v} sürümüne sabitledim.",
            "मैंने {s} को {v} पर पिन कर दिया है।",
            "Κλείδωσα το {s} στην έκδοση {v}.",
        ),
        "setting": (
            "Speaker 1: um so for prod, {k}, we want, uh, {v}. yeah. {v}.",
            "> On Tue, Ops wrote:\n> {k} must be {v} on every node.",
            "Slide 8: Runtime config\n• {k} = {v}\n• everything else: chart defaults",
            "Use the standard deploy.[^6]\n\n[^6]: With {k} at {v}, otherwise the workers misbehave.",
            "In settings.py: `{k} = env(\"{k}\", default=\"{v}\")`",
            "Put `{{\"{k}\": \"{v}\"}}` into the config map's JSON blob.",
            "{k} {v} on prod b4 u leave 2day, k?",
            "That alert `[FIRING] ConfigDrift {k}!={v}` means a node drifted; {k} must be {v}.",
            "Üretimde {k} değeri {v} olmalı.",
            "प्रोडक्शन में {k} को {v} रखिए।",
            "Di produksi, {k} harus {v}.",
        ),
        "preference": (
            "Speaker 1: and, um, personally, for {s}, I like, I like {v}. it's just cleaner.",
            "> On Wed, I wrote:\n> For {s} I'd go with {v} every time.\nStill stands.",
            "Slide 3: House style (my picks)\n• {S}: {v}",
            "Use whatever reads well.[^7]\n\n[^7]: For me that's {v} in {s}.",
            "[15:31] <deniz> style q answered: {v} for {s}, that's my taste",
            "Poll in #python-style, my vote: {v} for {s}.",
            "My editor config says it best: `{{\"scope\": \"{s}\", \"prefer\": \"{v}\"}}`",
            "{s} konusunda {v} tercih ederim.",
            "{s} में मुझे {v} पसंद है।",
            "Στο {s} προτιμώ {v}.",
            "Untuk {s}, saya lebih suka {v}.",
        ),
        "task": (
            "(voice note, transcribed) so, um, the {s}, that's, that's done. step {n} of {m}.",
            "Slide 10: Progress\n• {S}: done ({n}/{m})\n• Next: the remaining steps",
            "We're on schedule.[^9]\n\n[^9]: I finished the {s}, step {n} of {m}.",
            "[17:48] <me> {s} landed, {n}/{m}, going for food",
            "My tracker's export: `{{\"task\": \"{s}\", \"state\": \"completed\", \"step\": \"{n}/{m}\"}}`",
            "step,task,state\n{n}/{m},{s},done",
            "I marked it in plan.py: `PLAN[{n}] = (\"{s}\", \"done\")  # {n} of {m}`",
            "Handover: I wrapped up the {s} (step {n} of {m}); the next shift starts on what's left.",
            "{s} işi completed, {m} adımdan {n} tanesi bitti.",
            "Το {s} είναι done, βήμα {n} από {m}.",
            "{S} sudah finished, langkah {n} dari {m}.",
            "{s} completed हो गया, {m} में से {n} कदम पूरे।",
        ),
        "question": (
            "Speaker 3: um, do we, do we actually know whether {s}? Speaker 1: no. no idea.",
            "> On Fri, Legal wrote:\n> We still owe you an answer on whether {s}.",
            "Slide 12: Open questions\n• Whether {s}\n• Owner: TBD",
            ("The export spec is otherwise final.[^10]\n\n"
             "[^10]: Except for whether {s}, which nobody has answered."),
            "[14:12] <deniz> anyone? still no answer on whether {s}",
            "Poll: do you think {s}? 3 yes, 3 no, 2 no idea; so, unresolved.",
            "`{{\"open_question\": \"{s}\", \"owner\": null}}` is still in the tracker.",
            "still dunno if {s}, u?",
            "Henüz bilmiyoruz: {s} mi, değil mi?",
            "अभी तय नहीं हुआ: क्या {s}?",
            "Ανοιχτό ερώτημα: αν {s}.",
            "Belum jelas apakah {s}.",
        ),
    },
    negated=(
        "Speaker 2: um, and please, no, no {v} in {s}. ever.",
        "> On Thu, Deniz wrote:\n> Please, no {v} in {s}; I will not approve them.",
        "Slide 4: Don'ts\n- {S}: never {v}",
        "Reviewers apply the usual checklist.[^8]\n\n[^8]: Which includes: no {v} in {s}.",
        "[09:02] <deniz> repeat after me: {s} without {v}",
        "Top of conftest.py, please: `# house rule: no {v} in {s}`",
        "`{{\"rule\": \"no {v} in {s}\", \"severity\": \"error\"}}`, that's the linter rule I want.",
        "srsly, no {v} in {s}. k thx",
        "Handover note for tonight's reviewer: don't let {v} into {s}.",
    ),
    updates={
        "rule": (
            "Speaker 2: the {s} is, no wait, sorry, I misspoke, it's {v}.",
            ("---------- Forwarded message ---------\nFrom: Ops\n\n"
             "Finance signed off: the {s} is {v} from the next sprint onward."),
            "Slide 6 (v2 of the deck): {S}: {v}",
            "[12:01] <deniz> belay my last, {s} is {v}, ops just called",
            "Budgets in the plan follow ops' latest memo.[^1]\n\n[^1]: Which puts the {s} at {v}.",
            "{s} artık {v}, ops öyle karar verdi.",
        ),
        "decision": (
            ("(voice note, transcribed) so, uh, I misjudged that one; I'm going with {v} for the {s} this "
             "time, since {r}."),
            "Slide 9 (v2 of the deck): {S}: {v}, since {r}",
            ("The worker code is otherwise untouched.[^2]\n\n"
             "[^2]: The {s} is {v} after the load test, since {r}; I dropped the first candidate."),
            "Second poll closed: {v} is the {s} by 7 votes to 1, and I've wired it in, since {r}.",
            "Fikrimi değiştirdim: {s} için {v} kullanıyorum, çünkü {r}.",
            "मैंने {s} के लिए {v} कर दिया, क्योंकि {r}।",
        ),
        "person": (
            "Speaker 1: the {s} is, uh, not Deniz any more, it's {v}.",
            "> On Mon, HR wrote:\n> {V} takes the {s} role from the next rota.",
            "Slide 2 (Q3 edition): {S}: {v}",
            "Handover: the {s} pager went to {v} at 18:00.",
            "अब {s} {v} हैं।",
            "Από την επόμενη βάρδια {s} είναι {v}.",
        ),
        "date": (
            "Speaker 2: the {s}, um, they, they shifted it, it's {v}.",
            ("---------- Forwarded message ---------\nFrom: the client\n\n"
             "Agreed on our side: the {s} will be {v}."),
            "[16:40] <deniz> vendor asked for more time, {s} lands on {v}",
            "Poll closed on the {s} clash: {v} wins, invites follow.",
            "{S} diundur ke {v}.",
            "{s} tarihi ertelendi: {v}.",
        ),
        "amount": (
            "(voice memo) uh, scrap what I said, sorry, the {s}, it's {v} on the clean box.",
            "Slide 5 (after tuning): {S}: {v}",
            "My second benchmark printed `{{\"metric\": \"{s}\", \"value\": \"{v}\", \"run\": 2}}`.",
            "Handover: after the GC tweak the {s} reads {v} on my dashboards.",
            "ट्यूनिंग के बाद {s} घटकर {v} हो गया।",
            "Μετά τη βελτιστοποίηση το {s} είναι {v}.",
        ),
        "version": (
            "(voice note) um, {s}, I, I had to go to {v}, the plugins choked otherwise.",
            "Renovate's PR for {s} {v} is merged; I checked the plugins first.",
            "[11:30] <me> {s} on {v} in both images after the CVE fix",
            "deps.csv, row 4 after my PR: {s},{v},security fix",
            "{s} paketini {v} sürümüne yükselttim.",
            "Saya menaikkan {s} ke {v}.",
        ),
        "setting": (
            "Speaker 1: {k}, um, make that {v}, not what I said before.",
            "> On Wed, Ops wrote:\n> After the incident: {k}={v} on every node, please.",
            "Hotfix on all clusters: {k}={v} until the next review.",
            "Config map patch: `{{\"{k}\": \"{v}\"}}`, applied to prod.",
            "Setelah insiden, {k} diganti jadi {v}.",
            "{k} {v} pls, misread the runbook b4",
        ),
    },
)

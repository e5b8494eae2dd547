//! Single-valued slots ("where I live", "the reply language"): two statements that fill
//! the same slot with different values are a change.

use super::*;
use regex::{RegexSet, SetMatches};

/// Words of replies, for the reply language and length slots.
pub(super) const REPLY: &str = r"(?:reply|replies|respond|responses?|answers?|explanations?|messages?|write|writing|talk|speak to me|output)";
/// Words of length.
pub(super) const LEN: &str = r"(?:short|shorter|brief|briefly|concise|succinct|terse|long|longer|detailed|thorough|verbose|length|words|tl;?dr)";
/// Natural languages.
pub(super) const LANG: &str = r"(?:english|french|german|spanish|italian|portuguese|dutch|swedish|finnish|norwegian|danish|polish|russian|ukrainian|greek|turkish|arabic|hebrew|hindi|chinese|mandarin|cantonese|japanese|korean|vietnamese|thai|indonesian)";
/// Programming languages.
pub(super) const CODE: &str = r"(?:python|typescript|ts|javascript|js|rust|go|golang|java|kotlin|swift|c#|c\+\+|ruby|php|scala|haskell|elixir)";

/// The single-valued slots (a user has one home, one diet, one reply language, …) and the
/// patterns of which any one fills a slot. `{REPLY}`, `{LEN}`, `{LANG}` and `{CODE}` stand for
/// the word groups above. A pattern may capture `noun`: the slot is then keyed by its stem
/// (`favorite:color` ≠ `favorite:movi`). A match in which the group `not` takes part does not
/// count (the doc's negative lookahead `home(?! address)`). The patterns are the prototype's,
/// which the doc lists in short. Deviation from the prototype, following the doc: `{LEN}`
/// includes "tl;dr" after a reply word too (no labelled pair changes).
pub(super) const SLOT_PATTERNS: &[(&str, &[&str])] = &[
    (
        "name",
        &[
            r"\bcall me\b",
            r"\bmy name\b",
            r"\baddress me\b",
            r"\bgo by\b",
            r"\bnickname\b",
            r"\b(?:be|i'm|am) called\b",
            r"\brefer to me as\b",
        ],
    ),
    (
        "home",
        &[
            r"\blive[sd]? in\b",
            r"\bliving in\b",
            r"\bmoved to\b",
            r"\bmoving to\b",
            r"\brelocat\w*",
            r"\bhome city\b",
            r"\bhometown\b",
            r"\bbased in\b",
            r"\bhome\b(?P<not> address)?",
        ],
    ),
    (
        "employer",
        &[
            r"\bwork(?:s|ing|ed)? (?:at|for)\b",
            r"\bemployed (?:at|by)\b",
            r"\bemployer\b",
            r"\bjob at\b",
        ],
    ),
    (
        "occupation",
        &[
            r"\bwork(?:s|ing)? as\b",
            r"\bemployed as\b",
            r"\bjob title\b",
            r"\bprofession\b",
            r"\boccupation\b",
            r"\bbecame an?\b",
            r"\b(?:i'm|i am) an? (?:[\w-]+ ){0,3}(?:developer|engineer|manager|designer|analyst|nurse|teacher|doctor|lawyer|accountant|consultant|scientist|researcher|architect|director|officer|pilot|captain|chef|editor|writer|programmer|administrator|technician|pharmacist|paramedic|firefighter|librarian|professor|lecturer|student|intern|lead|head|partner|associate) (?:at|for|with)\b",
        ],
    ),
    ("work_hours", &[r"\b(?:part|full)[- ]time\b"]),
    (
        "employment",
        &[
            r"\bunemployed\b",
            r"\bjobless\b",
            r"\bretired\b",
            r"\b(?:i'm|i am|am now|officially|just|have|i've|has|we've|finally) retired\b",
            r"\bstarted a job\b",
            r"\bout of work\b",
            r"\bbetween jobs\b",
            r"\blaid off\b",
            r"\bstopped working\b",
        ],
    ),
    (
        "education",
        &[
            r"\bstud(?:y|ying|ies|ent)\b",
            r"\bmajor(?:ing)? in\b",
            r"\bgraduated\b",
            r"\benrolled\b",
        ],
    ),
    (
        "diet",
        &[
            r"\b(?:vegetarian|vegan|pescatarian|keto|paleo|carnivore|omnivore)\b",
            r"\beat(?:s|ing)? (?:meat|normally|fish)\b",
            r"\bdiet\b",
        ],
    ),
    (
        "alcohol",
        &[
            r"\bteetotal\b",
            r"\bsober\b",
            r"\b(?:drink|drinks|drinking) alcohol\b",
            r"\bdon't drink\b",
        ],
    ),
    (
        "smoking",
        &[r"\bsmok\w*", r"\bcigarettes?\b", r"\bvap(?:e|ing)\b"],
    ),
    (
        "relationship",
        &[
            r"\bmarried\b",
            r"\bsingle\b",
            r"\bdivorced\b",
            r"\bengaged\b",
            r"\bwidowed\b",
            r"\bin a relationship\b",
        ],
    ),
    (
        "timezone",
        &[
            r"\btime ?zone\b",
            r"\b(?:eastern|pacific|central|mountain) time\b",
            r"\b(?:utc|gmt|cet|cest|est|edt|pst|pdt|cst|ist|jst)\b",
            r"\b(?:america|europe|asia|africa|australia|pacific|atlantic)/[a-z_]+",
        ],
    ),
    (
        "temperature",
        &[
            r"\bcelsius\b",
            r"\bfahrenheit\b",
            r"°[cf]\b",
            r"\btemperatures?\b",
        ],
    ),
    ("units", &[r"\bmetric\b", r"\bimperial\b", r"\bunits\b"]),
    ("spelling", &[r"\bspelling\b"]),
    ("time_format", &[r"\b(?:24|12)[- ]hour\b", r"\bam/pm\b"]),
    ("theme", &[r"\b(?:dark|light) (?:mode|theme)\b"]),
    (
        "reply_language",
        &[r"{REPLY}\b.*\bin {LANG}\b", r"\bin {LANG}\b.*\b{REPLY}"],
    ),
    (
        "native_language",
        &[r"\bnative\b", r"\bmother tongue\b", r"\bfirst language\b"],
    ),
    (
        "reply_length",
        &[r"\b{LEN}\b.*\b{REPLY}\b", r"\b{REPLY}\b.*\b{LEN}\b"],
    ),
    ("tone", &[r"\b(?:formal|informal|casual|tone)\b"]),
    (
        "code_language",
        &[
            r"\b(?:code|examples?|snippets?|samples?|programming)\b.*\b{CODE}\b",
            r"\b{CODE}\b.*\b(?:code|examples?|snippets?|samples?)\b",
        ],
    ),
    ("emoji", &[r"\bemojis?\b"]),
    (
        "contact",
        &[
            r"\bcontact\w*\b",
            r"\breach me\b",
            r"\bring me\b",
            r"\b(?:no|more) calls\b",
            r"\btext me\b",
            r"\bemail me\b",
        ],
    ),
    (
        "seat",
        &[
            r"\b(?:window|aisle|middle) seats?\b",
            r"\bsit(?:ting)? by the (?:window|aisle)\b",
        ],
    ),
    (
        "favorite",
        &[
            r"\bfavorite (?P<noun>\w+)",
            r"\b(?P<noun>\w+) (?:i|they|he|she) (?:like|love)s? (?:the )?best\b",
        ],
    ),
    (
        "birthday",
        &[
            r"\bbirthday\b",
            r"\bborn on\b",
            r"\bdate of birth\b",
            r"\bbirth ?year\b",
            r"\byear of birth\b",
            r"\bborn in (?:19|20)\d\d\b",
        ],
    ),
    (
        "children",
        &[
            r"\b(?:have|has) (?:\w+ )?(?:kids?|children|child)\b",
            r"\bparent of\b",
            r"\bno (?:kids|children)\b",
        ],
    ),
    (
        "role",
        &[
            r"\bmy (?P<noun>dentist|doctor|gp|physician|therapist|psychiatrist|psychologist|manager|boss|supervisor|landlord|landlady|accountant|lawyer|vet|trainer|coach|barber|hairdresser|mechanic|tutor|nanny|babysitter|childminder|cleaner|mentor|advisor|adviser|pharmacist|optician|physio|physiotherapist) (?:is|'s) (?:now )?(?:dr\.? |mr\.? |mrs\.? |ms\.? )?(?P<not>(?:on|in|at|away|off|out|sick|busy|back|very|so|really|a|an|the|not|also|still|great|nice|strict|leaving|retiring|moving)\b)?",
        ],
    ),
    (
        "car",
        &[
            r"\bi drive\b",
            r"\bdrive an? \w+",
            r"\b(?:have|has|own|owns) an? car\b",
            r"\bmy car\b",
        ],
    ),
    (
        "handedness",
        &[
            r"\b(?:left|right)[- ]handed\b",
            r"\bambidextrous\b",
            r"\b(?:left|right) hand\b",
            r"\b(?:lefty|southpaw)\b",
        ],
    ),
    ("pregnancy", &[r"\bpregnant\b", r"\bexpecting a baby\b"]),
    (
        "age",
        &[
            r"\b\d+ (?:years?|yrs?) old\b",
            r"\bage\b",
            r"\baged \d+\b",
            r"\bturned \d+\b",
            r"\b(?:i'm|i am|user is) \d+\b(?P<not> ?(?:kg|kilos?|lbs?|pounds|cm|m|km|miles|%|percent))?",
        ],
    ),
    ("height", &[r"\btall\b", r"\bheight\b"]),
    (
        "editor",
        &[
            r"\beditor\b",
            r"\b(?:vim|neovim|emacs|vs ?code|visual studio code|sublime|intellij|pycharm|nano)\b(?P<not> (?:keybindings|key bindings|bindings|mode|motions|keys))?",
        ],
    ),
    (
        "date_format",
        &[
            r"\bdate format\b",
            r"\bdates? as\b",
            r"\byyyy\b",
            r"\biso ?8601\b",
            r"\b(?:dd|mm)/(?:mm|dd)\b",
            r"\bdates?\b.*\b\d{4}-\d\d-\d\d\b",
        ],
    ),
    (
        "birthplace",
        &[
            r"\bborn in\b(?P<not> (?:19|20)\d\d)?",
            r"\bbirthplace\b",
            r"\bplace of birth\b",
        ],
    ),
    (
        "pronouns",
        &[
            r"\bpronouns?\b",
            r"\b(?:he/him|she/her|they/them|ze/zir|xe/xem)\b",
        ],
    ),
    (
        "surname",
        &[r"\b(?:last|family|maiden) name\b", r"\bsurname\b"],
    ),
    (
        "work_location",
        &[
            r"\bremote(?:ly)?\b(?P<not> control)?",
            r"\bwfh\b",
            r"\bwork(?:s|ing)? from home\b",
            r"\bhybrid\b(?P<not> car)?",
        ],
    ),
];

/// A single-valued slot and its compiled patterns.
pub(super) struct Slot {
    /// The slot's name.
    pub(super) name: &'static str,
    /// Any one of these fills it.
    pub(super) patterns: Vec<Regex>,
}

/// [`SLOT_PATTERNS`], compiled once.
pub(super) static SLOTS: LazyLock<Vec<Slot>> = LazyLock::new(|| {
    SLOT_PATTERNS
        .iter()
        .map(|&(name, patterns)| Slot {
            name,
            patterns: patterns.iter().map(|p| compile(&expand(p))).collect(),
        })
        .collect()
});

/// Every pattern of [`SLOTS`] in one set, in their order (slot by slot): one pass over a
/// text says which patterns match at all, so only those are searched for their captures.
/// Most texts fill no slot, and a set's one pass costs about what one pattern's does.
static ANY_SLOT: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(
        SLOTS
            .iter()
            .flat_map(|s| s.patterns.iter().map(Regex::as_str)),
    )
    .expect("the slot patterns compile one by one")
});

/// The first counting match of any of `slot`'s patterns, in their order, among the
/// patterns `hits` (of [`ANY_SLOT`], starting at `first` for this slot) says match.
fn slot_match<'t>(
    slot: &Slot,
    first: usize,
    hits: &SetMatches,
    norm: &'t str,
    keep: impl Fn(&Regex) -> bool,
) -> Option<Captures<'t>> {
    slot.patterns
        .iter()
        .enumerate()
        .filter(|&(i, re)| hits.matched(first + i) && keep(re))
        .find_map(|(_, re)| first_counting_match(re, norm))
}

/// Each slot with the index of its first pattern in [`ANY_SLOT`].
fn indexed_slots() -> impl Iterator<Item = (usize, &'static Slot)> {
    SLOTS.iter().scan(0, |next, slot| {
        let first = *next;
        *next += slot.patterns.len();
        Some((first, slot))
    })
}

/// The slot's key of a match: its name, with the stem of the match's noun if it has one.
pub(super) fn slot_key(slot: &Slot, found: &Captures<'_>) -> String {
    match found.name("noun") {
        Some(noun) => format!("{}:{}", slot.name, stem(noun.as_str())),
        None => slot.name.to_owned(),
    }
}

/// A slot pattern with its word groups written out.
pub(super) fn expand(pattern: &str) -> String {
    pattern
        .replace("{REPLY}", REPLY)
        .replace("{LEN}", LEN)
        .replace("{LANG}", LANG)
        .replace("{CODE}", CODE)
}

/// The first match of `re` in `text` that counts: one in which the group `not` (if the
/// pattern has it) takes no part.
pub(super) fn first_counting_match<'t>(re: &Regex, text: &'t str) -> Option<Captures<'t>> {
    re.captures_iter(text).find(|c| c.name("not").is_none())
}

/// The doc's `slots`: the single-valued slots normalised text fills. Two texts that fill the
/// same slot say different things of one value (tier 1); two that fill only different slots
/// speak of different things (a veto). The `favorite` slot is keyed by the stem of its noun,
/// taken from the first pattern that matches.
pub(super) fn slots(norm: &str) -> BTreeSet<String> {
    filled(norm, false)
}

/// The stem of one word, as [`tokenize`] makes it. (The prototype stemmed this noun directly,
/// even a stop word; [`tokenize`] keeps stop words whole, which only matters for nonsense such
/// as "favorite does".)
pub(super) fn stem(word: &str) -> String {
    tokenize(word).next().unwrap_or_default()
}

/// Patterns that fill a slot in a preference but name other things in a story ("home on
/// Mondays", "Wigilia at home", "single-origin coffee"): an everyday memory
/// ([`super::replaces`]) does not fill a slot by them alone.
pub(super) const LOOSE_PATTERNS: &[&str] = &[
    r"\bhome\b(?P<not> address)?",
    r"\bage\b",
    r"\bsingle\b",
    r"\bdiet\b",
    r"\bgraduated\b",
    r"\bstud(?:y|ying|ies|ent)\b",
    r"\bretired\b",
];

/// The slots of a person's circumstances, which change over a life (a home, a job, a diet,
/// a partner, a car), as opposed to an assistant's settings (reply language, units, tone).
pub(super) const LIFE_SLOTS: &[&str] = &[
    "home",
    "employer",
    "occupation",
    "employment",
    "education",
    "diet",
    "alcohol",
    "smoking",
    "relationship",
    "car",
    "seat",
    "favorite",
    "work_location",
    "children",
    "pregnancy",
    "name",
    "role",
    "work_hours",
];

/// The life slots normalised text fills by a strict pattern.
pub(super) fn life_slots(norm: &str) -> BTreeSet<String> {
    filled(norm, true)
}

/// The slots normalised text fills: every slot by any pattern, or (`life`) the
/// [`LIFE_SLOTS`] by a pattern not among the [`LOOSE_PATTERNS`].
fn filled(norm: &str, life: bool) -> BTreeSet<String> {
    let hits = ANY_SLOT.matches(norm);
    if !hits.matched_any() {
        return BTreeSet::new();
    }
    indexed_slots()
        .filter(|(_, slot)| !life || LIFE_SLOTS.contains(&slot.name))
        .filter_map(|(first, slot)| {
            let strict = |re: &Regex| !life || !LOOSE_PATTERNS.contains(&re.as_str());
            let found = slot_match(slot, first, &hits, norm, strict)?;
            Some(slot_key(slot, &found))
        })
        .collect()
}

//! Whether a new declarative memory supersedes an existing one of the same user and type:
//! the two-tier detector of `docs/research/conflict-detector.md` ("Recommended method").
//!
//! * **Tier 1** ([`Verdict::Supersede`]) acts on high-precision evidence only: no veto, and
//!   either both texts fill the same single-valued slot ("I live in Paris" / "I moved to
//!   Berlin"), or the new text carries an update cue ("now", "no longer", "not X") and the two
//!   share a topic term or are close by cosine.
//! * **Tier 2** ([`Verdict::Possible`]) only reports: no veto, a shared topic term and a high
//!   cosine. About half of these are real conflicts: good enough to show, not to act on.
//! * A **veto** ([`Judgement::veto`]) rules a pair out: it speaks of another person, adds to
//!   the old claim ("also", "too"), tells history ("used to"), or the two fill different slots
//!   or are scoped by different qualifiers ("for work" / "for chats").
//!
//! Every rule works on the words of the texts after a small British→American spelling map;
//! the regular expressions run on the lower-cased, spelling-mapped text. The rules and
//! thresholds are those measured in the research note; the tests at the end check that the
//! port decides every pair of the labelled corpus as the prototype did.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use muisti_core::text::{is_stop_word, tokenize};
use regex::{Captures, Regex};

/// T1: the cosine at or above which an update cue ("now", "no longer", …) supersedes even
/// without a shared topic term. Kept as a guard against an update cue on an unrelated topic;
/// the highest value that kept the tuning F1 within 0.01 of its best (static model).
pub const UPDATE_COSINE: f32 = 0.35;

/// T3: the cosine at or above which two texts that share a topic term are reported as a
/// possible conflict (tier 2; about 50% precision on held-out pairs, so never acted on).
pub const POSSIBLE_COSINE: f32 = 0.55;

/// What the detector concludes of a new declarative entry against an existing one of the same user and type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Tier 1: the new entry replaces the existing one (high-precision evidence).
    Supersede,
    /// Tier 2: the two may conflict; worth reporting, not worth acting on.
    Possible,
    /// No evidence of a conflict, or a veto.
    Distinct,
}

/// The detector's judgement of one pair, with what it was based on.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// The conclusion.
    pub verdict: Verdict,
    /// A single-valued slot both texts fill (e.g. "home", "diet", "favorite:color"), if any.
    pub shared_slot: Option<String>,
    /// Topic terms (the doc's `objects`) the texts share.
    pub shared_objects: usize,
    /// The cosine of their vectors (the caller's embedder), if given.
    pub cosine: Option<f32>,
    /// Why a veto applied, if one did (e.g. "another person", "additive", "history", "different slots", "different qualifiers").
    pub veto: Option<&'static str>,
}

impl Judgement {
    /// Orders tier-1 candidates: shared slot first, then shared objects, then cosine (higher is better).
    pub fn rank(&self) -> (bool, usize, i64) {
        let cosine = self.cosine.map_or(i64::MIN, |c| (c * 1e6) as i64);
        (self.shared_slot.is_some(), self.shared_objects, cosine)
    }
}

/// Judges `new` against `existing` (texts of one user's entries of one type). `cosine` is the cosine
/// similarity of their vectors when the engine has an embedder; without one, the cosine conditions of
/// the rules are treated as not met (so only slot and explicit-negation evidence supersede).
pub fn judge(existing: &str, new: &str, cosine: Option<f32>) -> Judgement {
    let old = normalize(existing);
    let now = normalize(new);
    let old_content = content(&old);
    let update = update_cue(&now) || negates_old(&terms(&now), &old_content);
    // Either side telling of the past ("I used to live in Rome") leaves the present alone.
    let history = !update && (history_marker(new) || history_marker(existing));
    let (old_slots, new_slots) = (slots(&old), slots(&now));
    let (old_qualifiers, new_qualifiers) = (qualifiers(&old), qualifiers(&now));

    let veto = if persons(&old) != persons(&now) {
        Some("another person")
    } else if additive(&now) {
        Some("additive")
    } else if history {
        Some("history")
    } else if both_filled_and_disjoint(&old_slots, &new_slots) {
        Some("different slots")
    } else if both_filled_and_disjoint(&old_qualifiers, &new_qualifiers) {
        Some("different qualifiers")
    } else {
        None
    };
    let shared_slot = old_slots.intersection(&new_slots).next().cloned();
    let reaches = |threshold: f32| cosine.is_some_and(|c| c >= threshold);
    let (old_objects, new_objects) = (objects(&old_content), objects(&content(&now)));
    let shared_objects = old_objects.intersection(&new_objects).count();
    // The same topic terms, no more and no fewer, but for a note's label, and the same
    // numbers: the same claim in other words ("I'm allergic to peanuts" / "User has a
    // peanut allergy"; "I like my steak medium-rare" / "Steak doneness: medium rare").
    // Other numbers may name other things ("project 3" / "project 5").
    let same_claim = numbers(&old_content) == numbers(&content(&now))
        && (covers(&old_objects, &new_objects, &label_objects(&now))
            || covers(&new_objects, &old_objects, &label_objects(&old)));

    let verdict = if veto.is_some() {
        Verdict::Distinct
    } else if shared_slot.is_some()
        || same_claim
        || (update && (shared_objects > 0 || reaches(UPDATE_COSINE)))
    {
        Verdict::Supersede
    } else if shared_objects > 0 && reaches(POSSIBLE_COSINE) {
        Verdict::Possible
    } else {
        Verdict::Distinct
    };
    Judgement {
        verdict,
        shared_slot,
        shared_objects,
        cosine,
        veto,
    }
}

/// Whether two memories state the same fact, so that keeping both is redundant (what
/// near-duplicate consolidation folds): neither is a veto of the other (another person, an
/// added value, a past state on one side only, different slots or qualifiers), neither
/// announces a change or negates the other, both are negated or neither, the numbers are
/// the same, and either their topic terms are the same or their vectors' cosine reaches
/// `cosine_at_least` (a paraphrase in other words).
pub fn same_fact(a: &str, b: &str, cosine: Option<f32>, cosine_at_least: f32) -> bool {
    let (na, nb) = (unreported(&normalize(a)), unreported(&normalize(b)));
    let (ca, cb) = (content(&na), content(&nb));
    let vetoed = persons(&na) != persons(&nb)
        || additive(&na) != additive(&nb)
        || history_marker(a) != history_marker(b)
        || update_cue(&na)
        || update_cue(&nb)
        || negates_old(&terms(&na), &cb)
        || negates_old(&terms(&nb), &ca)
        || negated(&na) != negated(&nb)
        || both_filled_and_disjoint(&slots(&na), &slots(&nb))
        || both_filled_and_disjoint(&qualifiers(&na), &qualifiers(&nb))
        || quantities(&ca) != quantities(&cb)
        || past(&na) != past(&nb)
        || antonyms(&na, &nb);
    if vetoed {
        return false;
    }
    let counted = |norm: &str, objects: &BTreeSet<String>| -> Vec<String> {
        let mut all: Vec<String> = terms(norm)
            .into_iter()
            .filter(|t| objects.contains(t))
            .collect();
        all.sort();
        all
    };
    let (oa, ob) = (objects(&ca), objects(&cb));
    // The same topic terms, each as often ("boss's boss" is not "boss").
    (!oa.is_empty() && counted(&na, &oa) == counted(&nb, &ob))
        || cosine.is_some_and(|c| c >= cosine_at_least)
}

/// The numbers of a text's content, in digits or words ("3", "three").
fn quantities(content: &BTreeSet<String>) -> BTreeSet<&str> {
    content
        .iter()
        .filter(|t| t.chars().any(char::is_numeric) || NUMBER_STEMS.contains(*t))
        .map(String::as_str)
        .collect()
}

/// Whether a text speaks in the past tense ("worked", "was", "used to").
fn past(norm: &str) -> bool {
    static PAST: LazyLock<Regex> =
        LazyLock::new(|| compile(r"\b(?:was|were|had|did|used to)\b|\b[a-z]{2,}[^e\W]ed\b"));
    PAST.is_match(norm)
}

/// Whether one text has a word the other has with a negating prefix ("dislikes" /
/// "likes", "unhappy" / "happy"), compared as stems.
fn antonyms(a: &str, b: &str) -> bool {
    let words = |norm: &str| -> Vec<String> {
        norm.split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let stem = |w: &str| tokenize(w).next();
    let prefixed = |x: &[String], y: &[String]| {
        x.iter().any(|t| {
            ["dis", "un", "non", "in", "im"].iter().any(|p| {
                t.strip_prefix(p).is_some_and(|rest| {
                    rest.len() >= 3 && y.iter().any(|u| stem(u).is_some() && stem(u) == stem(rest))
                })
            })
        })
    };
    let (x, y) = (words(a), words(b));
    prefixed(&x, &y) || prefixed(&y, &x)
}

/// What two memories that state the same fact ([`same_fact`] without vectors) share: their
/// topic terms, each as often, in order of the terms; empty when a text has none. Near-
/// duplicate consolidation compares only memories with the same key.
pub fn fact_key(text: &str) -> String {
    let norm = unreported(&normalize(text));
    let objects = objects(&content(&norm));
    let mut all: Vec<String> = terms(&norm)
        .into_iter()
        .filter(|t| objects.contains(t))
        .collect();
    all.sort();
    all.join(" ")
}

/// A memory without the words that report it ("The user said that ...", "Note: ...", "As
/// the user mentioned earlier, ..."): they are no part of the fact.
fn unreported(norm: &str) -> String {
    static REPORTING: LazyLock<Regex> = LazyLock::new(|| {
        compile(
            r"^(?:note:\s*|as (?:the )?users? (?:mentioned|said|noted)(?: earlier| before)?,\s*|(?:the )?users? (?:has )?(?:said|says|stated|states|mentioned|mentions|explained|explains|shared|shares|indicated|indicates|confirmed|confirms|noted|notes|reported|reports|told me|added)(?: that)?\s+)",
        )
    });
    let stripped = REPORTING.replace(norm, "");
    // "they prefer" after "The user said that": the user, as in the other memory.
    match stripped.strip_prefix("they ") {
        Some(rest) if stripped.len() != norm.len() => format!("user {rest}"),
        _ => stripped.into_owned(),
    }
}

/// Whether a text says no ("not", "never", "doesn't").
fn negated(norm: &str) -> bool {
    static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
        compile(
            r"\b(?:not|no|never|none|nothing|without|cannot|can't|won't|don't|doesn't|didn't|isn't|aren't|wasn't|hasn't|haven't|n't)\b",
        )
    });
    NEGATION.is_match(norm) || norm.contains("n't")
}

/// The terms with a digit (numbers, times, versions).
fn numbers(content: &BTreeSet<String>) -> BTreeSet<&str> {
    content
        .iter()
        .filter(|t| t.chars().any(char::is_numeric))
        .map(String::as_str)
        .collect()
}

/// Whether `some` (not empty) is all of `all` but terms of `label`.
fn covers(some: &BTreeSet<String>, all: &BTreeSet<String>, label: &BTreeSet<String>) -> bool {
    !some.is_empty() && some.is_subset(all) && all.difference(some).all(|t| label.contains(t))
}

/// The topic terms of a note's label, the words before `: ` ("Steak doneness: medium
/// rare"), when there are at most four: they name the attribute the value is of.
fn label_objects(norm: &str) -> BTreeSet<String> {
    match norm.split_once(": ") {
        Some((label, _)) if label.split_whitespace().count() <= 4 => objects(&content(label)),
        _ => BTreeSet::new(),
    }
}

/// Whether both sets have members and none in common (two claims about different things).
fn both_filled_and_disjoint(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    !a.is_empty() && !b.is_empty() && a.is_disjoint(b)
}

/// Compiles a pattern written in this file (a constant, so it is known to be valid).
fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid pattern")
}

// ---- Near duplicates -----------------------------------------------------------------------

/// Whether two memories state the same fact in the same words but for their form, so that
/// near-duplicate consolidation may delete one of them; precision first, since a wrong
/// answer loses a user's memory. The two must say the same words, one for one, in the same
/// order, after their form is set aside:
///
/// * reporting frames ("The user said that", "Note:", "According to the user,", "In our
///   conversation,", "As the user mentioned earlier,"), case and punctuation;
/// * function words that change no fact: articles, the present tense of *be*, *have* and
///   *do* ("has decided" / "decided"), "that" and "and"; the user's subject forms ("the
///   user", "I", "they" → the user; "my", "their", "user's" → the user's);
/// * inflection (words are compared by their stems), British spelling, contractions
///   ("doesn't" = "does not"), number words ("seven" = "7", "fourth" = "4th"), clock times
///   ("3 p.m." = "15:00"), conventional abbreviations ("Fri", "appt"), a few plain synonyms
///   ("resides" / "lives", "physician" / "doctor");
/// * an acronym written in capitals for the words whose initials it spells ("IBM" /
///   "International Business Machines", "CPA" / "certified public accountant");
/// * a misspelling that swaps two letters or drops one inside a word ("recieved",
///   "acountant"), never at its ends nor in a number or a short word;
/// * one exchange of two adjacent phrases where each text starts a phrase ("On Sundays the
///   user calls" / "The user calls … on Sundays", "X is the user's gym" / "The user's gym is
///   X"): word order otherwise carries meaning ("tea over coffee", "Alice likes Bob").
///
/// Any other word on one side only (another value, person, time, quantifier, modal, "not")
/// rules the pair out, as do these vetoes of the conflict detector when one side has them
/// and the other not: a negation, an added value ("also"), a past state ("used to"), a
/// change ("now", "moved"), the past tense (an "-ed" form, "was", "had", "did"), a noun in
/// the singular on one side and the plural on the other, and an antonym by prefix. Unlike
/// [`same_fact`], no topic terms or vectors decide: paraphrases in other words are not
/// folded. Two near duplicates always have the same [`near_duplicate_key`].
pub fn near_duplicate(a: &str, b: &str) -> bool {
    let (ta, tb) = (comparable(a), comparable(b));
    let (wa, wb) = (words(&ta, &capitals(a)), words(&tb, &capitals(b)));
    let (ca, cb) = (content_words(&wa), content_words(&wb));
    let (xa, xb) = (
        collapse(ca.clone(), &acronyms(&cb)),
        collapse(cb, &acronyms(&ca)),
    );
    if xa.iter().all(|w| w.term == "user" || w.term == "user's") {
        return false;
    }
    let Some(partner) = pair_up(&xa, &xb) else {
        return false;
    };
    let mut partners = Vec::with_capacity(xb.len());
    for (y, &i) in xb.iter().zip(&partner) {
        let Some(x) = xa.get(i) else {
            return false;
        };
        if number_differs(x, y) {
            return false;
        }
        partners.push(x.term.as_str());
    }
    let terms: Vec<&str> = xa.iter().map(|w| w.term.as_str()).collect();
    let opens_a: Vec<bool> = xa.iter().map(|w| w.opens).collect();
    let opens_b: Vec<bool> = xb.iter().map(|w| w.opens).collect();
    if !swapped(&terms, &partners, &opens_a, &opens_b) {
        return false;
    }
    let vetoed = negated(&ta) != negated(&tb)
        || additive(&ta) != additive(&tb)
        || history_marker(a) != history_marker(b)
        || update_cue(&ta) != update_cue(&tb)
        || tense(&wa, &xa) != tense(&wb, &xb)
        || antonyms(&ta, &tb);
    !vetoed
}

/// Whether the function words of `all` and the words `compared` (an acronym for its
/// expansion: "registered nurse" is no past) speak in the past tense ([`past`]).
fn tense(all: &[Word], compared: &[Word]) -> bool {
    let raw: Vec<&str> = all
        .iter()
        .filter(|w| w.function)
        .chain(compared)
        .map(|w| w.raw.as_str())
        .collect();
    past(&raw.join(" "))
}

/// What two near duplicates ([`near_duplicate`]) always share: the initials of the words
/// compared, in alphabetical order (every letter of an acronym, none of "of" and "for",
/// which an acronym may skip), then the numbers whole. A misspelling keeps a word's first
/// letter (and is never allowed in a number) and an exchange of phrases keeps the words, so
/// near duplicates get the same key; memories with another key need not be compared. Coarse:
/// memories with one key are not all near duplicates.
pub fn near_duplicate_key(text: &str) -> String {
    let compared = content_words(&words(&comparable(text), &capitals(text)));
    let mut letters: Vec<char> = compared
        .iter()
        .filter(|w| !CONNECTORS.contains(&w.raw.as_str()))
        .flat_map(|w| {
            let all = if w.acronym { usize::MAX } else { 1 };
            w.term.chars().take(all)
        })
        .collect();
    letters.sort_unstable();
    // Numbers are compared as written (no typo is allowed in one): whole, they split the
    // groups of memories that differ only in them.
    let mut numbers: Vec<String> = compared
        .iter()
        .filter(|w| w.term.chars().any(|c| c.is_ascii_digit()))
        .map(|w| w.term.clone())
        .collect();
    numbers.sort_unstable();
    let mut key: String = letters.into_iter().collect();
    for n in numbers {
        key.push(' ');
        key.push_str(&n);
    }
    key
}

/// A word of a memory as [`near_duplicate`] compares it.
#[derive(Clone, Debug)]
struct Word {
    /// The word as written: lower case, the spelling and [`LEXICON`] maps applied, hyphens out.
    raw: String,
    /// What is compared: the stem; `user` or `user's` for the user; a possessive's stem and
    /// `'s`; an acronym's letters.
    term: String,
    /// Written in capitals (2-5 letters, in a text not all in capitals): an acronym.
    acronym: bool,
    /// A [`FUNCTION_WORDS`] word, left out of the comparison.
    function: bool,
    /// Starts a phrase: after punctuation or a function word, or an [`OPENERS`] word.
    opens: bool,
    /// Right after a determiner or a possessive, where a noun's number (one or many) counts.
    determined: bool,
}

impl Word {
    /// A word of no particular kind.
    fn new(raw: &str, term: &str) -> Word {
        Word {
            raw: raw.to_owned(),
            term: term.to_owned(),
            acronym: false,
            function: false,
            opens: false,
            determined: false,
        }
    }

    /// A function word.
    fn function_word(raw: &str) -> Word {
        Word {
            function: true,
            ..Word::new(raw, raw)
        }
    }
}

/// Words that change no fact between two texts: articles, the present tense of the
/// auxiliaries (the past ones, "was", "had", "did", are a tense and stay), "that", "and".
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "am", "be", "has", "have", "do", "does", "that", "and",
];

/// The user's subject forms: a memory may speak of the user in the third person or the first.
const SUBJECT_FORMS: &[(&str, &str)] = &[
    ("i", "user"),
    ("me", "user"),
    ("myself", "user"),
    ("they", "user"),
    ("them", "user"),
    ("themselves", "user"),
    ("user", "user"),
    ("my", "user's"),
    ("mine", "user's"),
    ("their", "user's"),
    ("theirs", "user's"),
    ("users", "user's"),
];

/// Contractions typed without the apostrophe, and the verb they negate.
const BARE_NEGATIONS: &[(&str, &str)] = &[
    ("dont", "do"),
    ("doesnt", "does"),
    ("didnt", "did"),
    ("cant", "can"),
    ("isnt", "is"),
    ("arent", "are"),
    ("wasnt", "was"),
    ("werent", "were"),
    ("havent", "have"),
    ("hasnt", "has"),
    ("hadnt", "had"),
    ("shouldnt", "should"),
    ("couldnt", "could"),
    ("wouldnt", "would"),
    ("wont", "will"),
];

/// Contracted verbs after an apostrophe ("I'm", "we're") and the verbs they stand for.
const CLITICS: &[(&str, &str)] = &[
    ("m", "am"),
    ("re", "are"),
    ("ve", "have"),
    ("ll", "will"),
    ("d", "would"),
];

/// Words after which `'s` is "is" ("it's"), not a possessive.
const IS_HOSTS: &[&str] = &[
    "it", "that", "there", "what", "who", "he", "she", "here", "where", "how",
];

/// Words that start a phrase (prepositions, subordinating conjunctions, the user as a
/// subject): where two phrases may be exchanged.
const OPENERS: &[&str] = &[
    "in", "on", "at", "for", "with", "by", "from", "to", "of", "about", "during", "before",
    "after", "since", "until", "into", "onto", "over", "under", "through", "via", "per", "around",
    "near", "without", "within", "between", "among", "against", "across", "along", "behind",
    "beyond", "toward", "towards", "upon", "every", "each", "when", "while", "if", "because",
    "although", "though", "where", "whenever", "user", "user's",
];

/// Words after which a noun's number counts ("a dog" / "dogs").
const DETERMINERS: &[&str] = &["a", "an", "the", "this", "these", "those", "every", "each"];

/// Words an acronym may skip ("Massachusetts Institute of Technology" = "MIT").
const CONNECTORS: &[&str] = &["of", "for"];

/// Number words, conventional abbreviations and plain synonyms, replaced by one form before
/// anything is compared (whole words, like [`SPELLING`]).
const LEXICON: &[(&str, &str)] = &[
    ("zero", "0"),
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
    ("eleven", "11"),
    ("twelve", "12"),
    ("thirteen", "13"),
    ("fourteen", "14"),
    ("fifteen", "15"),
    ("sixteen", "16"),
    ("seventeen", "17"),
    ("eighteen", "18"),
    ("nineteen", "19"),
    ("twenty", "20"),
    ("thirty", "30"),
    ("forty", "40"),
    ("fifty", "50"),
    ("sixty", "60"),
    ("seventy", "70"),
    ("eighty", "80"),
    ("ninety", "90"),
    ("first", "1st"),
    ("second", "2nd"),
    ("third", "3rd"),
    ("fourth", "4th"),
    ("fifth", "5th"),
    ("sixth", "6th"),
    ("seventh", "7th"),
    ("eighth", "8th"),
    ("ninth", "9th"),
    ("tenth", "10th"),
    ("eleventh", "11th"),
    ("twelfth", "12th"),
    ("thirteenth", "13th"),
    ("fourteenth", "14th"),
    ("fifteenth", "15th"),
    ("sixteenth", "16th"),
    ("seventeenth", "17th"),
    ("eighteenth", "18th"),
    ("nineteenth", "19th"),
    ("twentieth", "20th"),
    ("thirtieth", "30th"),
    // Abbreviations.
    ("mon", "monday"),
    ("tue", "tuesday"),
    ("tues", "tuesday"),
    ("thu", "thursday"),
    ("thur", "thursday"),
    ("thurs", "thursday"),
    ("fri", "friday"),
    ("jan", "january"),
    ("feb", "february"),
    ("mar", "march"),
    ("apr", "april"),
    ("jun", "june"),
    ("jul", "july"),
    ("aug", "august"),
    ("sep", "september"),
    ("sept", "september"),
    ("oct", "october"),
    ("nov", "november"),
    ("dec", "december"),
    ("appt", "appointment"),
    ("appts", "appointments"),
    ("dept", "department"),
    ("govt", "government"),
    ("approx", "approximately"),
    ("apt", "apartment"),
    ("ave", "avenue"),
    ("blvd", "boulevard"),
    ("bday", "birthday"),
    ("mgr", "manager"),
    ("asst", "assistant"),
    ("yr", "year"),
    ("yrs", "years"),
    ("wk", "week"),
    ("wks", "weeks"),
    ("hrs", "hours"),
    ("mins", "minutes"),
    ("info", "information"),
    ("uni", "university"),
    // Synonyms: a plain word for a formal or familiar one (irregular pasts to pasts).
    ("mom", "mother"),
    ("moms", "mothers"),
    ("mommy", "mother"),
    ("mama", "mother"),
    ("dad", "father"),
    ("dads", "fathers"),
    ("daddy", "father"),
    ("papa", "father"),
    ("grandma", "grandmother"),
    ("granny", "grandmother"),
    ("grandpa", "grandfather"),
    ("kid", "child"),
    ("kids", "children"),
    ("hubby", "husband"),
    ("bicycle", "bike"),
    ("bicycles", "bikes"),
    ("automobile", "car"),
    ("automobiles", "cars"),
    ("physician", "doctor"),
    ("physicians", "doctors"),
    ("telephone", "phone"),
    ("television", "tv"),
    ("sofa", "couch"),
    ("sofas", "couches"),
    ("photograph", "photo"),
    ("photographs", "photos"),
    ("reside", "live"),
    ("resides", "lives"),
    ("resided", "lived"),
    ("residing", "living"),
    ("purchase", "buy"),
    ("purchases", "buys"),
    ("purchased", "bought"),
    ("purchasing", "buying"),
    ("commence", "start"),
    ("commences", "starts"),
    ("commenced", "started"),
    ("commencing", "starting"),
    ("begin", "start"),
    ("begins", "starts"),
    ("began", "started"),
    ("begun", "started"),
    ("beginning", "starting"),
    ("detest", "hate"),
    ("detests", "hates"),
    ("detested", "hated"),
    ("detesting", "hating"),
    ("loathe", "hate"),
    ("loathes", "hates"),
    ("loathed", "hated"),
    ("noisy", "loud"),
    ("frequently", "often"),
    ("occasionally", "sometimes"),
    ("assist", "help"),
    ("assists", "helps"),
    ("assisted", "helped"),
];

/// Beyond [`unreported`]: labels ("Important:"), sources ("According to the user,", "In our
/// conversation,") and more verbs of saying, with "that" and an adverb of frequency
/// ("has mentioned several times that").
static FRAMES_RE: LazyLock<Regex> = LazyLock::new(|| {
    const SAYING: &str = "(?:said|says|stated|states|mentioned|mentions|explained|explains|shared|shares|indicated|indicates|confirmed|confirms|noted|notes|reported|reports|told me|told us|tells me|added|adds|revealed|reveals|clarified|clarifies|emphasized|emphasizes|stressed|stresses|remarked|pointed out|disclosed|expressed|admitted|admits|wrote|writes|commented|specified|informed me|let me know|acknowledged|acknowledges)";
    compile(&format!(
        r"^(?:(?:important|fyi|reminder|memo|note to self):\s*|according to (?:the )?users?,?\s*|(?:in|during|from) (?:(?:our|a|the|an|one|this|that|an earlier|a previous|a recent|a past) )?(?:conversations?|chats?|discussions?|sessions?),\s*|as (?:the )?users? (?:has |had )?{SAYING}(?: earlier| before| previously)?,\s*|(?:the )?users? (?:has |had )?{SAYING}(?: several times| many times| more than once| repeatedly| often| before| earlier| previously| once| in passing)?(?: that)?\s+)"
    ))
});

/// A pronoun right after a frame ("The user said that she …") is the user.
const LEADING_PRONOUNS: &[(&str, &str)] = &[
    ("she ", "user "),
    ("he ", "user "),
    ("her ", "user's "),
    ("his ", "user's "),
];

/// A time on the 12-hour clock ("3 pm", "9:30 a.m.").
static TWELVE_HOUR_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b([0-9]{1,2})(?::([0-5][0-9]))?\s*([ap])\.?\s?m\b\.?"));

/// A time on the 24-hour clock ("15:00").
static CLOCK_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b([01]?[0-9]|2[0-3]):([0-5][0-9])\b"));

/// A word: letters and digits, with apostrophes and hyphens inside.
static WORD_RE: LazyLock<Regex> = LazyLock::new(|| compile(r"[^\W_]+(?:['\-][^\W_]+)*"));

/// The longest texts (in words compared) whose phrases [`swapped`] tries to exchange;
/// longer ones must be in the same order.
const MAX_EXCHANGED: usize = 64;

/// A memory's text as [`near_duplicate`] reads it: [`normalize`]d, without its frame, with
/// clock times as `15h00` and the [`LEXICON`] applied.
fn comparable(text: &str) -> String {
    let framed = unframed(&normalize(text));
    let timed = clock_times(&framed);
    ASCII_WORD
        .replace_all(&timed, |c: &Captures<'_>| {
            let word = &c[0];
            LEXICON_MAP.get(word).copied().unwrap_or(word).to_owned()
        })
        .into_owned()
}

/// [`LEXICON`] by word, the first entry of a word winning (looked up for every word of every
/// memory consolidation compares).
static LEXICON_MAP: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
    let mut map = HashMap::new();
    for &(from, to) in LEXICON {
        map.entry(from).or_insert(to);
    }
    map
});

/// Normalised text without its reporting frames ([`FRAMES_RE`], then [`unreported`], until
/// none is left), a leading "she"/"he" after one read as the user.
fn unframed(norm: &str) -> String {
    let mut text = norm.to_owned();
    for _ in 0..4 {
        let next = unreported(&FRAMES_RE.replace(&text, ""));
        if next == text {
            break;
        }
        text = next;
    }
    if text == norm {
        return text;
    }
    let user = LEADING_PRONOUNS.iter().find_map(|&(pronoun, user)| {
        text.strip_prefix(pronoun)
            .map(|rest| format!("{user}{rest}"))
    });
    user.unwrap_or(text)
}

/// Clock times as one word, hours on the 24-hour clock: "3 p.m." and "15:00" are `15h00`;
/// "°c" and "°f" as the words.
fn clock_times(text: &str) -> String {
    let twelve = TWELVE_HOUR_RE.replace_all(text, |c: &Captures<'_>| {
        let hour = c.get(1).and_then(|h| h.as_str().parse::<u32>().ok());
        let minutes = c.get(2).map_or("00", |m| m.as_str());
        let pm = c.get(3).is_some_and(|m| m.as_str() == "p");
        match hour {
            Some(h @ 1..=12) => {
                let h = match (pm, h) {
                    (true, 12) => 12,
                    (true, h) => h + 12,
                    (false, 12) => 0,
                    (false, h) => h,
                };
                format!("{h}h{minutes}")
            }
            _ => c[0].to_owned(),
        }
    });
    let clock = CLOCK_RE.replace_all(&twelve, |c: &Captures<'_>| {
        match (c.get(1).map(|h| h.as_str().parse::<u32>()), c.get(2)) {
            (Some(Ok(h)), Some(m)) => format!("{h}h{}", m.as_str()),
            _ => c[0].to_owned(),
        }
    });
    clock.replace("°c", " celsius").replace("°f", " fahrenheit")
}

/// The words of an original text written in capitals (2-5 letters), lower-cased: the
/// acronyms, unless the whole text is in capitals.
fn capitals(original: &str) -> BTreeSet<String> {
    if !original.chars().any(char::is_lowercase) {
        return BTreeSet::new();
    }
    original
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            (2..=5).contains(&w.chars().count())
                && w.chars().all(|c| c.is_alphabetic() && c.is_uppercase())
        })
        .map(str::to_lowercase)
        .collect()
}

/// The words of a [`comparable`] text, contractions and possessives resolved; `capitals`
/// are its acronyms ([`capitals`]).
fn words(text: &str, capitals: &BTreeSet<String>) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut last = 0;
    for m in WORD_RE.find_iter(text) {
        let punctuated = !text[last..m.start()].trim().is_empty();
        last = m.end();
        let first = out.len();
        let w = m.as_str().replace('-', "");
        if let Some((base, tail)) = w.rsplit_once('\'') {
            let base = base.replace('\'', "");
            match (tail, base.strip_suffix('n')) {
                ("t", Some(verb)) => {
                    let verb = match verb {
                        "ca" => "can",
                        "wo" => "will",
                        "sha" => "shall",
                        other => other,
                    };
                    out.push(word(verb, capitals));
                    out.push(Word::new("not", "not"));
                }
                ("s", _) if IS_HOSTS.contains(&base.as_str()) => {
                    out.push(word(&base, capitals));
                    out.push(Word::function_word("is"));
                }
                ("s", _) => {
                    let raw = format!("{base}'s");
                    let user = base == "user" || SUBJECT_FORMS.iter().any(|(s, _)| *s == base);
                    let term = if user {
                        "user's".to_owned()
                    } else {
                        format!("{}'s", stem(&base))
                    };
                    out.push(Word::new(&raw, &term));
                }
                _ => match CLITICS.iter().find(|(c, _)| *c == tail) {
                    Some(&(_, verb)) => {
                        out.push(word(&base, capitals));
                        out.push(word(verb, capitals));
                    }
                    None => out.push(word(&format!("{base}{tail}"), capitals)),
                },
            }
        } else if let Some(&(_, verb)) = BARE_NEGATIONS.iter().find(|(n, _)| *n == w) {
            out.push(word(verb, capitals));
            out.push(Word::new("not", "not"));
        } else if w == "im" {
            out.push(word("i", capitals));
            out.push(word("am", capitals));
        } else if w == "ive" {
            out.push(word("i", capitals));
            out.push(word("have", capitals));
        } else {
            out.push(word(&w, capitals));
        }
        if let Some(w) = out.get_mut(first).filter(|_| punctuated) {
            w.opens = true;
        }
    }
    for i in 1..out.len() {
        let (before, after) = out.split_at_mut(i);
        let (Some(prev), Some(w)) = (before.last(), after.first_mut()) else {
            continue;
        };
        w.opens = w.opens || prev.function;
        w.determined = DETERMINERS.contains(&prev.raw.as_str()) || prev.term.ends_with("'s");
    }
    for w in &mut out {
        w.opens =
            w.opens || OPENERS.contains(&w.term.as_str()) || OPENERS.contains(&w.raw.as_str());
    }
    out
}

/// One word without apostrophes (`capitals`: the text's acronyms).
fn word(raw: &str, capitals: &BTreeSet<String>) -> Word {
    if let Some(&(_, user)) = SUBJECT_FORMS.iter().find(|(s, _)| *s == raw) {
        return Word::new(raw, user);
    }
    // "They were" is "the user was".
    let raw = if raw == "were" { "was" } else { raw };
    if FUNCTION_WORDS.contains(&raw) {
        return Word::function_word(raw);
    }
    let acronym = capitals.contains(raw)
        && (2..=5).contains(&raw.chars().count())
        && raw.chars().all(char::is_alphabetic);
    let term = if acronym { raw.to_owned() } else { stem(raw) };
    Word {
        acronym,
        ..Word::new(raw, &term)
    }
}

/// The words that are compared (no function words).
fn content_words(words: &[Word]) -> Vec<Word> {
    words.iter().filter(|w| !w.function).cloned().collect()
}

/// The acronyms among words.
fn acronyms(words: &[Word]) -> Vec<String> {
    words
        .iter()
        .filter(|w| w.acronym)
        .map(|w| w.term.clone())
        .collect()
}

/// The words with each run whose initials spell one of `acronyms` (the other text's, which
/// these words lack) replaced by the acronym: "certified public accountant" → `cpa`.
fn collapse(mut words: Vec<Word>, acronyms: &[String]) -> Vec<Word> {
    for acronym in acronyms {
        if words.iter().any(|w| w.acronym && w.term == *acronym) {
            continue;
        }
        let letters: Vec<char> = acronym.chars().collect();
        let run = (0..words.len()).find_map(|start| {
            let len = spelt(words.get(start..)?, &letters)?;
            (len >= 2).then_some((start, start + len))
        });
        let Some((start, end)) = run else {
            continue;
        };
        let opens = words.get(start).is_some_and(|w| w.opens);
        let rest = words.split_off(end);
        words.truncate(start);
        words.push(Word {
            acronym: true,
            opens,
            ..Word::new(acronym, acronym)
        });
        words.extend(rest);
    }
    words
}

/// How many of the first words spell `letters` by their initials (skipping [`CONNECTORS`]
/// after the first), if they do.
fn spelt(words: &[Word], letters: &[char]) -> Option<usize> {
    let (mut done, mut at) = (0, 0);
    while let Some(&letter) = letters.get(done) {
        let w = words.get(at)?;
        if w.acronym {
            return None;
        }
        at += 1;
        if done > 0 && CONNECTORS.contains(&w.raw.as_str()) {
            continue;
        }
        if !w.term.starts_with(letter) {
            return None;
        }
        done += 1;
    }
    Some(at)
}

/// For each word of `b`, the index of the word of `a` it is (the same term, else the same
/// word misspelt), each used once; `None` unless every word of both has its match.
fn pair_up(a: &[Word], b: &[Word]) -> Option<Vec<usize>> {
    if a.len() != b.len() {
        return None;
    }
    let mut used = vec![false; a.len()];
    let mut partner: Vec<Option<usize>> = vec![None; b.len()];
    for (y, p) in b.iter().zip(partner.iter_mut()) {
        let found = a
            .iter()
            .zip(&used)
            .position(|(x, &u)| !u && x.term == y.term && x.acronym == y.acronym);
        if let Some(i) = found {
            used[i] = true;
            *p = Some(i);
        }
    }
    for (y, p) in b.iter().zip(partner.iter_mut()) {
        if p.is_some() {
            continue;
        }
        let i = a
            .iter()
            .zip(&used)
            .position(|(x, &u)| !u && misspelt(x, y))?;
        used[i] = true;
        *p = Some(i);
    }
    partner.into_iter().collect()
}

/// Whether two words (not acronyms) with the same initial are one misspelt ([`typo`]).
fn misspelt(x: &Word, y: &Word) -> bool {
    !x.acronym
        && !y.acronym
        && x.term.chars().next() == y.term.chars().next()
        && typo(&x.raw, &y.raw)
}

/// Whether two words of letters differ by a typing slip inside them: two adjacent letters
/// swapped (in words of five letters or more) or one letter dropped (the shorter of six or
/// more), never the first or the last letter.
fn typo(x: &str, y: &str) -> bool {
    let (x, y): (Vec<char>, Vec<char>) = (x.chars().collect(), y.chars().collect());
    if x == y || !x.iter().chain(&y).all(|c| c.is_alphabetic()) {
        return false;
    }
    if x.len() == y.len() {
        let differ: Vec<usize> = (0..x.len()).filter(|&i| x.get(i) != y.get(i)).collect();
        return x.len() >= 5
            && match differ[..] {
                [i, j] => {
                    j == i + 1
                        && i >= 1
                        && j + 2 <= x.len()
                        && x.get(i) == y.get(j)
                        && x.get(j) == y.get(i)
                }
                _ => false,
            };
    }
    let (short, long) = if x.len() < y.len() {
        (&x, &y)
    } else {
        (&y, &x)
    };
    long.len() == short.len() + 1
        && short.len() >= 6
        && (1..long.len() - 1).any(|p| long[..p] == short[..p] && long[p + 1..] == short[p..])
}

/// Whether a noun is singular in one text and plural in the other ("a dog" / "dogs", "the
/// user's son" / "sons"): the same stem after a determiner or possessive, one form ending
/// in `s`.
fn number_differs(x: &Word, y: &Word) -> bool {
    x.term == y.term
        && !x.term.ends_with("'s")
        && x.term != "user"
        && (x.determined || y.determined)
        && x.raw.ends_with('s') != y.raw.ends_with('s')
}

/// Whether `b` is `a`, or `a` with two adjacent phrases exchanged (`x P Q y` / `x Q P y`)
/// where each text starts a phrase at the one it puts second (`opens_a`, `opens_b`: which
/// words start one).
fn swapped(a: &[&str], b: &[&str], opens_a: &[bool], opens_b: &[bool]) -> bool {
    if a == b {
        return true;
    }
    let n = a.len();
    if n != b.len() || n > MAX_EXCHANGED || opens_a.len() != n || opens_b.len() != n {
        return false;
    }
    for i in 0..n {
        if a[..i] != b[..i] {
            break;
        }
        for k in i + 2..=n {
            if a[k..] != b[k..] {
                continue;
            }
            // P = a[i..j], Q = a[j..k]; b puts Q first, so P starts at i + k - j in b.
            let exchanged = (i + 1..k).any(|j| {
                let q_end = i + k - j;
                b[i..q_end] == a[j..k] && b[q_end..k] == a[i..j] && opens_a[j] && opens_b[q_end]
            });
            if exchanged {
                return true;
            }
        }
    }
    false
}

// ---- Words ---------------------------------------------------------------------------------

/// British spellings and their American forms, applied to whole words before anything else,
/// so that "favourite colour" and "favorite color" are the same words.
const SPELLING: &[(&str, &str)] = &[
    ("colour", "color"),
    ("colours", "colors"),
    ("favourite", "favorite"),
    ("favourites", "favorites"),
    ("flavour", "flavor"),
    ("coeliac", "celiac"),
    ("theatre", "theater"),
    ("centre", "center"),
    ("metre", "meter"),
    ("metres", "meters"),
    ("litre", "liter"),
    ("litres", "liters"),
    ("kilometre", "kilometer"),
    ("kilometres", "kilometers"),
    ("grey", "gray"),
    ("organise", "organize"),
    ("summarise", "summarize"),
    ("mum", "mom"),
    ("favour", "favor"),
    ("favours", "favors"),
    // Synonyms of the words declarative entries use most, so the two are one term.
    ("film", "movie"),
    ("films", "movies"),
    ("allergy", "allergic"),
    ("allergies", "allergic"),
    ("coriander", "cilantro"),
    ("rail", "train"),
];

/// Terms that are no content although not stop words: "the user" is "I", and "please" (its
/// stem) is politeness.
const SUBJECT_TERMS: &[&str] = &["user", "users", "pleas"];

/// The pieces that splitting on apostrophes leaves of contractions ("I'm" → i, m): no topic.
const CONTRACTION_FRAGMENTS: &[&str] = &[
    "m", "re", "ve", "ll", "d", "don", "didn", "doesn", "isn", "aren", "wasn", "weren", "won",
    "shouldn", "couldn", "wouldn", "haven", "hasn", "ain",
    // The same, typed without the apostrophe.
    "im", "ive", "cant", "dont", "doesnt", "didnt", "isnt", "wont",
];

/// Generic predicates of preferences and instructions: sharing them ("I like X" / "I like Y")
/// does not make two texts about the same thing. Compared by their stems.
const GENERIC_PREDICATES: &[&str] = &[
    "like", "love", "enjoy", "prefer", "hate", "dislike", "want", "need", "wish", "use", "send",
    "show", "share", "call", "remind", "ask", "give", "keep", "tell", "make", "put", "write",
    "answer", "reply", "let", "get", "take", "have", "has", "own", "never", "always", "please",
    "favorite", "best", "work", "live", "go", "know", "think", "feel", "eat", "drink",
];

/// Numbers written as words: values, like numbers in digits.
const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "dozen",
];

/// The stems of [`NUMBER_WORDS`].
static NUMBER_STEMS: LazyLock<BTreeSet<String>> =
    LazyLock::new(|| NUMBER_WORDS.iter().flat_map(|w| tokenize(w)).collect());

/// The stems of [`GENERIC_PREDICATES`], as [`tokenize`] makes them.
static PREDICATE_STEMS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    GENERIC_PREDICATES
        .iter()
        .flat_map(|w| tokenize(w))
        .collect()
});

/// Maximal runs of ASCII letters: the words the spelling map applies to.
static ASCII_WORD: LazyLock<Regex> = LazyLock::new(|| compile(r"[a-z]+"));

/// The text the rules read: lower-cased, typographic apostrophes (’) made plain ('), and
/// British spellings ([`SPELLING`]) replaced by American ones, whole words only.
fn normalize(text: &str) -> String {
    let lower = text.to_lowercase().replace('\u{2019}', "'");
    ASCII_WORD
        .replace_all(&lower, |c: &Captures<'_>| american(&c[0]).to_owned())
        .into_owned()
}

/// The American spelling of `word`, or the word itself.
fn american(word: &str) -> &str {
    SPELLING
        .iter()
        .find(|(british, _)| *british == word)
        .map_or(word, |&(_, us)| us)
}

/// The doc's `terms`: the index terms of normalised text, in order (lower case, stemmed, stop
/// words kept whole), exactly as full-text search sees them.
fn terms(norm: &str) -> Vec<String> {
    tokenize(norm).collect()
}

/// The doc's `content`: the terms of normalised text that are neither stop words nor
/// [`SUBJECT_TERMS`].
fn content(norm: &str) -> BTreeSet<String> {
    tokenize(norm)
        .filter(|t| !is_stop_word(t) && !SUBJECT_TERMS.contains(&t.as_str()))
        .collect()
}

/// The doc's `objects`: the content terms that name what a text is about, that is without
/// contraction fragments, generic predicates and terms with a digit (numbers and times are
/// values, not topics).
fn objects(content: &BTreeSet<String>) -> BTreeSet<String> {
    content
        .iter()
        .filter(|t| {
            !CONTRACTION_FRAGMENTS.contains(&t.as_str())
                && !PREDICATE_STEMS.contains(*t)
                && !NUMBER_STEMS.contains(*t)
                && !t.chars().any(char::is_numeric)
        })
        .cloned()
        .collect()
}

// ---- Cues ----------------------------------------------------------------------------------

/// Nouns of people other than the user.
const PERSON: &str = "wife|husband|partner|spouse|son|sons|daughter|daughters|kid|kids|child|children|baby|brother|brothers|sister|sisters|mother|mom|father|dad|parent|parents|grandmother|grandma|grandfather|grandpa|boss|manager|colleague|colleagues|coworker|coworkers|friend|friends|assistant|boyfriend|girlfriend|fiance|fiancee|roommate|flatmate|neighbor|neighbour|uncle|aunt|cousin|niece|nephew|team|family|in-laws?";

/// A possessive, at most one modifier word, and a [`PERSON`] noun; `not` catches the words
/// after which the noun names no person ("mother tongue", "family company"). The doc writes
/// that check as a negative lookahead, which the `regex` crate lacks.
static PERSON_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r"\b(?:my|our|user's|users|the user's|their|his|her)\s+(?:[a-z-]+\s+)?(?P<person>{PERSON})\b(?P<not> tongue| language| board| nature| company)?"
    ))
});

/// The doc's `persons`: the other people a text speaks of ("my sister", "the user's wife"),
/// plural `s` stripped except from "boss" and "parents". A text about someone else says nothing
/// of the user's own claim. A match followed by a `not` word ("my mother tongue") is skipped
/// and the search resumes one character after its start, as the lookahead would have let the
/// pattern try there. (Unlike a backtracking lookahead, the match does not then fall back to
/// reading its modifier word as the person: that would need two person nouns in a row followed
/// by such a word, as in "my family friend company".)
fn persons(norm: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut at = 0;
    while let Some(c) = PERSON_RE.captures_at(norm, at) {
        let (Some(whole), Some(person)) = (c.get(0), c.name("person")) else {
            break;
        };
        if c.name("not").is_some() {
            // Every possessive starts with an ASCII letter: one byte on is a char boundary.
            at = whole.start() + 1;
            continue;
        }
        found.insert(person_class(person.as_str()));
        at = whole.end();
    }
    found
}

/// One name for the nouns of one role: a user has one partner (wife, boyfriend, fiancée …)
/// and speaks of a child as a kid or a baby; other nouns lose a plural `s` (not "boss",
/// "parents").
fn person_class(noun: &str) -> String {
    match noun {
        "wife" | "husband" | "partner" | "spouse" | "boyfriend" | "girlfriend" | "fiance"
        | "fiancee" => "partner".to_owned(),
        "kid" | "kids" | "child" | "children" | "baby" => "child".to_owned(),
        "boss" | "parents" => noun.to_owned(),
        _ => noun.trim_end_matches('s').to_owned(),
    }
}

/// Words that add to what is known rather than replace it ("too" only closing a clause:
/// "an hour is too early" adds nothing).
static ADDITIVE_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(?:also|as well|either|another|in addition|additionally|besides)\b|\btoo\s*(?:[,.;:!?]|$)",
    )
});

/// The doc's `additive`: the new text adds a value ("I'm *also* allergic to shellfish"), so the
/// old one still holds.
fn additive(norm: &str) -> bool {
    ADDITIVE_RE.is_match(norm)
}

/// Words that announce a change of value.
static UPDATE_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(?:now|from now on|any ?more|no longer|instead|these days|nowadays|switched|switching|changed|change to|quit|gave up|given up|giving up|stopped|again|no more|actually|moved|relocated|started|(?:i|just) left|left (?:my|the|a|an)|sold|got married|divorced|graduated|retired|come around|came around|not any|lately|recently|promoted|dropped out|broke up|adopted|just had|turned \d+|stop|switch(?:ed|ing)? to|going forward|(?:my|our|a) new|^new)\b",
    )
});

/// The first half of the doc's `update`: the new text announces a change ("now", "no longer",
/// "switched", "moved", …).
fn update_cue(norm: &str) -> bool {
    UPDATE_RE.is_match(norm)
}

/// The second half of the doc's `update`, an explicit negation of the old value: in the new
/// text's terms, the term right after "not", "no", "instead of" or "rather than" is a content
/// term of the old text ("not Sam", "instead of TypeScript").
fn negates_old(new_terms: &[String], old_content: &BTreeSet<String>) -> bool {
    new_terms.windows(2).enumerate().any(|(k, pair)| {
        let before = k
            .checked_sub(1)
            .and_then(|j| new_terms.get(j))
            .map(String::as_str);
        let negation = match pair[0].as_str() {
            "not" | "no" => true,
            "of" => before == Some("instead"),
            "than" => before == Some("rather"),
            _ => false,
        };
        negation && old_content.contains(&pair[1])
    })
}

/// Markers of a past state. Read on the original text, since "before" counts only before a
/// capitalised word ("before Berlin"). Deviation from the doc, for precision: the other
/// markers match in any case, so that a sentence may start with them ("Used to live in Rome");
/// on the labelled corpus this changes no decision.
static HISTORY_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(?:(?i:used to|back in|previously|formerly|years ago|in (?:19|20)\d\d)|before [A-Z])",
    )
});

/// The doc's `history` marker (the caller requires that no update cue is present): the
/// text tells of the past ("I used to live in Rome"), which does not replace the present. A
/// year one was born in ("born in 1990") is no past state.
fn history_marker(original: &str) -> bool {
    HISTORY_RE.find_iter(original).any(|m| {
        let year = m
            .as_str()
            .get(..3)
            .is_some_and(|s| s.eq_ignore_ascii_case("in "));
        let born = original[..m.start()]
            .trim_end()
            .to_lowercase()
            .ends_with("born");
        !(year && born)
    })
}

/// A scope word and the run of letters and spaces after it (the qualifier is a prefix of it).
static QUALIFIER_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"\b(?:for|when|during|while|on my|in my)\s+(?P<phrase>[a-z][a-z ]*)")
});

/// Whitespace then a subject word: where a qualifier ends ("for work | I prefer …").
static SUBJECT_AHEAD_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\A\s+(?:i|user|the user|we|please)\b"));

/// The doc's `qualifiers`: the content terms of the scopes a text sets ("*for work* emails",
/// "*when flying*, …"). Two texts scoped differently can both hold. A phrase after "for",
/// "when", "during" or "while" runs, lazily, to the first punctuation mark, subject word or end
/// of text (see [`qualifier_end`]); contraction fragments are dropped. A phrase whose terms are
/// only "me" is ignored: "me" is a stop word, so it never counts as content anyway.
fn qualifiers(norm: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut at = 0;
    while let Some(c) = QUALIFIER_RE.captures_at(norm, at) {
        let (Some(whole), Some(run)) = (c.get(0), c.name("phrase")) else {
            break;
        };
        match qualifier_end(norm, run.start(), run.end()) {
            Some(end) => {
                found.extend(
                    content(&norm[run.start()..end])
                        .into_iter()
                        .filter(|t| !CONTRACTION_FRAGMENTS.contains(&t.as_str())),
                );
                at = end;
            }
            // The scope words are ASCII: one byte on is a char boundary.
            None => at = whole.start() + 1,
        }
    }
    found
}

/// Where a qualifier phrase ends, given where it starts and where its run of letters and
/// spaces ends: before the first space inside the run that leads to a subject word, else at
/// the end of the run when punctuation (`,.;:!?`), the end of the text (or a last newline) or
/// a subject word follows it, else nowhere (no qualifier). This is the doc's lookahead
/// `(?=[,.;:!?]|\s+(i|user|the user|we|please)\b|$)` after a lazy phrase, written without
/// look-around.
fn qualifier_end(text: &str, start: usize, run_end: usize) -> Option<usize> {
    let leads_to_subject = |p: usize| SUBJECT_AHEAD_RE.is_match(&text[p..]);
    // The run is ASCII: every byte offset in it is a char boundary.
    let inside = text[start..run_end]
        .match_indices(' ')
        .map(|(i, _)| start + i)
        .find(|&p| leads_to_subject(p));
    if inside.is_some() {
        return inside;
    }
    let rest = &text[run_end..];
    let closed = rest.is_empty()
        || rest == "\n"
        || rest.starts_with(|c: char| ",.;:!?".contains(c))
        || leads_to_subject(run_end);
    closed.then_some(run_end)
}

// ---- Slots ---------------------------------------------------------------------------------

/// Words of replies, for the reply language and length slots.
const REPLY: &str = r"(?:reply|replies|respond|responses?|answers?|explanations?|messages?|write|writing|talk|speak to me|output)";
/// Words of length.
const LEN: &str = r"(?:short|shorter|brief|briefly|concise|succinct|terse|long|longer|detailed|thorough|verbose|length|words|tl;?dr)";
/// Natural languages.
const LANG: &str = r"(?:english|french|german|spanish|italian|portuguese|dutch|swedish|finnish|norwegian|danish|polish|russian|ukrainian|greek|turkish|arabic|hebrew|hindi|chinese|mandarin|cantonese|japanese|korean|vietnamese|thai|indonesian)";
/// Programming languages.
const CODE: &str = r"(?:python|typescript|ts|javascript|js|rust|go|golang|java|kotlin|swift|c#|c\+\+|ruby|php|scala|haskell|elixir)";

/// The single-valued slots (a user has one home, one diet, one reply language, …) and the
/// patterns of which any one fills a slot. `{REPLY}`, `{LEN}`, `{LANG}` and `{CODE}` stand for
/// the word groups above. A pattern may capture `noun`: the slot is then keyed by its stem
/// (`favorite:color` ≠ `favorite:movi`). A match in which the group `not` takes part does not
/// count (the doc's negative lookahead `home(?! address)`). The patterns are the prototype's,
/// which the doc lists in short. Deviation from the prototype, following the doc: `{LEN}`
/// includes "tl;dr" after a reply word too (no labelled pair changes).
const SLOT_PATTERNS: &[(&str, &[&str])] = &[
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
        ],
    ),
    (
        "employment",
        &[
            r"\bunemployed\b",
            r"\bjobless\b",
            r"\bretired\b",
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
            r"\b(?:have|has) (?:\w+ )?(?:kids|children)\b",
            r"\bparent of\b",
            r"\bno (?:kids|children)\b",
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
struct Slot {
    /// The slot's name.
    name: &'static str,
    /// Any one of these fills it.
    patterns: Vec<Regex>,
}

/// [`SLOT_PATTERNS`], compiled once.
static SLOTS: LazyLock<Vec<Slot>> = LazyLock::new(|| {
    SLOT_PATTERNS
        .iter()
        .map(|&(name, patterns)| Slot {
            name,
            patterns: patterns.iter().map(|p| compile(&expand(p))).collect(),
        })
        .collect()
});

/// A slot pattern with its word groups written out.
fn expand(pattern: &str) -> String {
    pattern
        .replace("{REPLY}", REPLY)
        .replace("{LEN}", LEN)
        .replace("{LANG}", LANG)
        .replace("{CODE}", CODE)
}

/// The first match of `re` in `text` that counts: one in which the group `not` (if the
/// pattern has it) takes no part.
fn first_counting_match<'t>(re: &Regex, text: &'t str) -> Option<Captures<'t>> {
    re.captures_iter(text).find(|c| c.name("not").is_none())
}

/// The doc's `slots`: the single-valued slots normalised text fills. Two texts that fill the
/// same slot say different things of one value (tier 1); two that fill only different slots
/// speak of different things (a veto). The `favorite` slot is keyed by the stem of its noun,
/// taken from the first pattern that matches.
fn slots(norm: &str) -> BTreeSet<String> {
    SLOTS
        .iter()
        .filter_map(|slot| {
            let found = slot
                .patterns
                .iter()
                .find_map(|re| first_counting_match(re, norm))?;
            Some(match found.name("noun") {
                Some(noun) => format!("{}:{}", slot.name, stem(noun.as_str())),
                None => slot.name.to_owned(),
            })
        })
        .collect()
}

/// The stem of one word, as [`tokenize`] makes it. (The prototype stemmed this noun directly,
/// even a stop word; [`tokenize`] keeps stop words whole, which only matters for nonsense such
/// as "favorite does".)
fn stem(word: &str) -> String {
    tokenize(word).next().unwrap_or_default()
}

/// A labelled pair of the conflict corpus (`crates/muisti/tests/data/conflicts.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct LabelledPair {
    /// Its number.
    pub id: u64,
    /// The stored entry.
    pub existing: String,
    /// The new one.
    pub new: String,
    /// Whether the new one should supersede the stored one.
    pub supersede: bool,
    /// `tune` (constants are chosen on it), `test` (held out when they were chosen) or
    /// `fresh` (written later, blind to the rules).
    pub split: String,
}

/// Parses the corpus: one JSON object per line.
pub fn parse_corpus(text: &str) -> Result<Vec<LabelledPair>, serde_json::Error> {
    crate::labelled::parse_jsonl(text)
}

/// How the detector did on some pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Scores {
    /// Pairs judged.
    pub total: usize,
    /// Pairs labelled supersede.
    pub positives: usize,
    /// Superseded and labelled so.
    pub true_positives: usize,
    /// Superseded, labelled not to be (a user's fact lost).
    pub false_positives: usize,
    /// Reported as possible conflicts (tier 2), not superseded.
    pub possible: usize,
    /// Labelled supersede and a candidate a conflict judge would be asked about
    /// ([`super::judge::candidates`]): the recall a perfect judge would reach.
    pub positives_to_judge: usize,
    /// Labelled not to supersede and a candidate for the judge.
    pub negatives_to_judge: usize,
}

impl Scores {
    /// Of the pairs superseded, the share labelled so (1 when none were).
    pub fn precision(&self) -> f64 {
        let decided = self.true_positives + self.false_positives;
        if decided == 0 {
            1.0
        } else {
            self.true_positives as f64 / decided as f64
        }
    }

    /// Of the pairs labelled supersede, the share superseded.
    pub fn recall(&self) -> f64 {
        if self.positives == 0 {
            0.0
        } else {
            self.true_positives as f64 / self.positives as f64
        }
    }
}

/// Scores per split of the corpus (`tune`, the held-out `test`, the later `fresh` set).
pub type Evaluation = std::collections::BTreeMap<String, Scores>;

/// Judges every pair (with `cosine` giving the cosine of two texts, if any) and scores the
/// verdicts against the labels, per split: the one evaluation the tests and `muisti bench
/// conflicts` run.
pub fn evaluate(pairs: &[LabelledPair], cosine: impl Fn(&str, &str) -> Option<f32>) -> Evaluation {
    let mut e = Evaluation::new();
    for p in pairs {
        let j = judge(&p.existing, &p.new, cosine(&p.existing, &p.new));
        let to_judge = !super::judge::candidates(std::slice::from_ref(&j)).is_empty();
        let s = e.entry(p.split.clone()).or_default();
        s.total += 1;
        s.positives += usize::from(p.supersede);
        s.positives_to_judge += usize::from(p.supersede && to_judge);
        s.negatives_to_judge += usize::from(!p.supersede && to_judge);
        match j.verdict {
            Verdict::Supersede if p.supersede => s.true_positives += 1,
            Verdict::Supersede => s.false_positives += 1,
            Verdict::Possible => s.possible += 1,
            Verdict::Distinct => {}
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> BTreeSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn the_same_diet_in_other_words_supersedes() {
        let j = judge("I am vegetarian", "I don't eat meat", None);
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("diet"));
        assert_eq!(j.veto, None);
    }

    #[test]
    fn a_move_supersedes_the_home() {
        let j = judge("I live in Paris", "I moved to Berlin", None);
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("home"));
    }

    #[test]
    fn a_refinement_shares_a_topic_but_does_not_supersede() {
        let j = judge("I like tea", "I like green tea with honey", None);
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.shared_objects, 1, "tea; 'like' is a generic predicate");
        // A high cosine makes it a possible conflict, never a supersession.
        let close = judge("I like tea", "I like green tea with honey", Some(0.8));
        assert_eq!(close.verdict, Verdict::Possible, "{close:?}");
        let below = judge("I like tea", "I like green tea with honey", Some(0.5));
        assert_eq!(below.verdict, Verdict::Distinct, "{below:?}");
    }

    #[test]
    fn the_same_topic_terms_in_other_words_are_the_same_claim() {
        let j = judge(
            "I'm allergic to peanuts",
            "User has a peanut allergy.",
            None,
        );
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        // Other numbers may name other things.
        let j = judge(
            "Project number 3 of the user goes by the codename 5130",
            "Project number 5 of the user goes by the codename 9588",
            Some(0.95),
        );
        assert_ne!(j.verdict, Verdict::Supersede, "{j:?}");
        // One more topic term is a refinement, not the same claim.
        let j = judge(
            "I play guitar",
            "I play guitar in a band on weekends.",
            Some(0.9),
        );
        assert_ne!(j.verdict, Verdict::Supersede, "{j:?}");
    }

    #[test]
    fn a_past_state_on_either_side_leaves_the_present_alone() {
        let j = judge("I used to live in Rome", "I live in Oslo.", Some(0.5));
        assert_eq!(j.veto, Some("history"), "{j:?}");
        let j = judge("I used to smoke", "I smoke again.", Some(0.5));
        assert_eq!(j.verdict, Verdict::Supersede, "an update cue wins: {j:?}");
    }

    #[test]
    fn things_on_my_devices_are_scoped() {
        let j = judge(
            "I prefer dark mode in my IDE",
            "I prefer light mode on my phone.",
            Some(0.8),
        );
        assert_eq!(j.veto, Some("different qualifiers"), "{j:?}");
        let j = judge("I'm 34 years old", "The user is 35 now.", None);
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("age"));
        assert!(
            slots(&normalize("I'm 80 kg")).is_empty(),
            "a weight is no age"
        );
    }

    #[test]
    fn another_persons_fact_is_vetoed() {
        let j = judge("My sister lives in Paris", "I live in Paris", Some(0.9));
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.veto, Some("another person"));
        assert_eq!(
            j.shared_slot.as_deref(),
            Some("home"),
            "reported all the same"
        );
    }

    #[test]
    fn an_additional_value_is_vetoed() {
        let j = judge(
            "I'm allergic to peanuts",
            "I\u{2019}m also allergic to shellfish",
            Some(0.9),
        );
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.veto, Some("additive"));
    }

    #[test]
    fn the_name_slot() {
        let j = judge("Call me Sam", "My name is Sam, use it", None);
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("name"));
    }

    #[test]
    fn the_reply_language_slot() {
        let j = judge(
            "Always reply in French",
            "Reply in English from now on",
            None,
        );
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("reply_language"));
    }

    #[test]
    fn history_is_vetoed_unless_an_update_is_announced() {
        let j = judge("I live in Oslo", "I used to live in Rome", Some(0.9));
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.veto, Some("history"));
        // The markers match at the start of a sentence too (a deviation kept for precision).
        let capital = judge("I live in Oslo", "Used to live in Rome", Some(0.9));
        assert_eq!(capital.veto, Some("history"), "{capital:?}");
        let year = judge("I live in Oslo", "In 2019 I lived in Rome", Some(0.9));
        assert_eq!(year.veto, Some("history"), "{year:?}");
        // An update cue wins over the marker.
        let moved = judge(
            "I live in Oslo",
            "I used to live in Rome but moved to Oslo",
            None,
        );
        assert_eq!(moved.verdict, Verdict::Supersede, "{moved:?}");
        assert!(history_marker("I used to live in Rome"));
        assert!(history_marker("We met before Christmas"));
        assert!(!history_marker("we met before christmas"));
    }

    #[test]
    fn british_and_american_favorites_are_one_slot() {
        let j = judge(
            "My favourite colour is green",
            "My favorite color is blue",
            None,
        );
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("favorite:color"));
        assert!(slots(&normalize("Blue is the colour I like best")).contains("favorite:color"));
        // Favourites of different things are different slots.
        let other = judge(
            "My favorite movie is Alien",
            "My favorite color is blue",
            None,
        );
        assert_eq!(other.verdict, Verdict::Distinct, "{other:?}");
        assert_eq!(other.veto, Some("different slots"));
    }

    #[test]
    fn unrelated_texts_are_distinct() {
        let j = judge(
            "I have a dog named Rex",
            "Use metric units in replies",
            Some(0.1),
        );
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.veto, None);
        assert_eq!(j.shared_objects, 0);
        assert_eq!(j.shared_slot, None);
    }

    #[test]
    fn different_slots_are_vetoed() {
        let j = judge(
            "Use metric units in replies",
            "Use British spelling in replies.",
            Some(0.9),
        );
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.veto, Some("different slots"));
    }

    #[test]
    fn an_explicit_negation_of_the_old_value_is_an_update() {
        let old = "I prefer tea in the morning";
        let j = judge(old, "Coffee in the morning, not tea", None);
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        // Negating something the old text does not say is no update.
        let other = judge(old, "Coffee in the morning, not juice", Some(0.4));
        assert_eq!(other.verdict, Verdict::Distinct, "{other:?}");
        assert_eq!(other.shared_objects, 1, "morning");
        let rather = "I prefer Go rather than TypeScript";
        assert!(!update_cue(&normalize(rather)), "only the negation says it");
        let j = judge("I prefer TypeScript", rather, None);
        assert_eq!(j.shared_slot, None, "{j:?}");
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
    }

    #[test]
    fn an_update_cue_without_a_shared_topic_needs_the_cosine() {
        let (old, new) = ("I enjoy jazz", "These days I listen to podcasts");
        assert_eq!(judge(old, new, None).verdict, Verdict::Distinct);
        assert_eq!(judge(old, new, Some(0.3)).verdict, Verdict::Distinct);
        assert_eq!(
            judge(old, new, Some(UPDATE_COSINE)).verdict,
            Verdict::Supersede
        );
    }

    #[test]
    fn differently_scoped_texts_are_vetoed() {
        let j = judge(
            "For work emails, be formal",
            "For chats with friends, be casual",
            None,
        );
        assert_eq!(j.verdict, Verdict::Distinct, "{j:?}");
        assert_eq!(j.veto, Some("different qualifiers"));
        assert_eq!(j.shared_slot.as_deref(), Some("tone"));
    }

    #[test]
    fn qualifiers_end_at_punctuation_or_a_subject() {
        let q = |t: &str| qualifiers(&normalize(t));
        assert_eq!(q("When travelling, book aisle seats"), set(&["travel"]));
        assert_eq!(q("for work I prefer dark mode"), set(&["work"]));
        assert_eq!(
            q("for work when I travel"),
            set(&["work"]),
            "'when' is inside"
        );
        assert_eq!(q("Remind me during meetings while we talk"), set(&["meet"]));
        assert_eq!(q("for the night in Rome"), set(&["night", "rome"]));
        assert_eq!(q("Send it to me for me, please"), set(&[]));
        assert_eq!(
            q("while hiking-trips"),
            set(&[]),
            "no qualifier ends at '-'"
        );
    }

    #[test]
    fn persons_skip_words_that_name_no_person() {
        let p = |t: &str| persons(&normalize(t));
        assert_eq!(
            p("My mother lives in Oslo, my mother tongue is Finnish"),
            set(&["mother"])
        );
        assert_eq!(p("My mother tongue is Finnish"), set(&[]));
        assert_eq!(
            p("my older brothers and my parents"),
            set(&["brother", "parents"])
        );
        assert_eq!(p("her boss, our team board"), set(&["boss"]));
        assert_eq!(p("The user\u{2019}s in-laws"), set(&["in-law"]));
        let j = judge(
            "My mother tongue is Finnish",
            "My native language is Swedish",
            None,
        );
        assert_eq!(j.verdict, Verdict::Supersede, "{j:?}");
        assert_eq!(j.shared_slot.as_deref(), Some("native_language"));
    }

    #[test]
    fn slot_patterns() {
        let s = |t: &str| slots(&normalize(t));
        assert!(!s("My home address is 5 Main St").contains("home"));
        assert!(s("home address: 5 Main St; I work from home").contains("home"));
        assert!(s("It is 20°C").contains("temperature"));
        assert!(s("Use 24-hour time").contains("time_format"));
        assert!(s("Start replies with a tl;dr").contains("reply_length"));
        assert!(s("Write code examples in Python").contains("code_language"));
        assert!(s("Use TypeScript for code samples").contains("code_language"));
        assert_eq!(s("I have a dog named Rex"), set(&[]));
        assert_eq!(
            normalize("My Mum\u{2019}s favourite colours"),
            "my mom's favorite colors"
        );
    }

    #[test]
    fn objects_leave_out_predicates_fragments_and_numbers() {
        let o = |t: &str| objects(&content(&normalize(t)));
        assert_eq!(o("I'd love to work at 9 on Mondays"), set(&["monday"]));
        assert_eq!(o("The user wants tea, please"), set(&["tea"]));
    }

    #[test]
    fn rank_orders_slot_then_objects_then_cosine() {
        let j = |slot: Option<&str>, objects: usize, cosine: Option<f32>| Judgement {
            verdict: Verdict::Supersede,
            shared_slot: slot.map(str::to_owned),
            shared_objects: objects,
            cosine,
            veto: None,
        };
        assert!(j(Some("home"), 0, None).rank() > j(None, 3, Some(0.9)).rank());
        assert!(j(None, 2, Some(0.1)).rank() > j(None, 1, Some(0.9)).rank());
        assert!(j(None, 1, Some(0.5)).rank() > j(None, 1, Some(0.4)).rank());
        assert!(j(None, 1, Some(-0.5)).rank() > j(None, 1, None).rank());
    }

    /// The labelled corpus of the repository.
    fn corpus() -> Vec<LabelledPair> {
        parse_corpus(include_str!("../../tests/data/conflicts.jsonl")).expect("the corpus parses")
    }

    /// Floors under the figures measured when the detector was last changed (tier 1, with
    /// the static model / without a model): tune P 1.000 R 0.794 / P 1.000 R 0.762; test
    /// P 0.947 R 0.581 / P 0.939 R 0.500; fresh (written blind, then used to choose the
    /// third round) P 0.983 R 0.670 / P 0.982 R 0.625; fresh2 (written blind by another
    /// hand, scored once after the rules were frozen: P 0.911 R 0.464; then the same-claim
    /// rule learnt to compare numbers, found by `muisti bench agent`) P 0.927 R 0.464 /
    /// P 0.923 R 0.436. A change that loses precision, or recall below them, fails.
    fn holds_the_measured_floors(e: &Evaluation, recall: [f64; 4]) {
        for (name, precision, recall) in [
            ("tune", 0.99, recall[0]),
            ("test", 0.93, recall[1]),
            ("fresh", 0.98, recall[2]),
            ("fresh2", 0.92, recall[3]),
        ] {
            let s = split(e, name);
            assert!(s.precision() >= precision, "{name} {s:?}");
            assert!(s.recall() >= recall, "{name} {s:?}");
        }
    }

    fn split<'a>(e: &'a Evaluation, name: &str) -> &'a Scores {
        e.get(name)
            .unwrap_or_else(|| panic!("the corpus has a {name} split"))
    }

    #[test]
    fn the_corpus_without_an_embedder() {
        let e = evaluate(&corpus(), |_, _| None);
        holds_the_measured_floors(&e, [0.76, 0.5, 0.62, 0.43]);
        assert_eq!(split(&e, "test").total, 115);
        assert_eq!(split(&e, "tune").total, 117);
        assert_eq!(split(&e, "fresh").total, 160);
        assert_eq!(split(&e, "fresh2").total, 200);
    }

    #[test]
    fn the_corpus_with_the_static_model() {
        use muisti_embed::Embedder;
        let model = muisti_embed::StaticEmbedder::builtin().expect("the built-in model");
        let e = evaluate(&corpus(), |a, b| {
            let a = model.embed_one(a).ok()?;
            let b = model.embed_one(b).ok()?;
            Some(muisti_core::text::cosine(&a, &b))
        });
        holds_the_measured_floors(&e, [0.79, 0.58, 0.67, 0.46]);
        let test = split(&e, "test");
        assert!(test.possible > 0, "tier 2 reports some: {test:?}");
    }

    #[test]
    fn near_duplicates_differ_only_in_form() {
        for (a, b) in [
            (
                "User plays chess on weekends",
                "As the user mentioned earlier, they play chess on weekends",
            ),
            (
                "User has decided to quit smoking",
                "User decided to quit smoking",
            ),
            (
                "User perfers Pyhton for data analysis",
                "User prefers Python for data analysis",
            ),
            (
                "The user works at International Business Machines as a consultant",
                "The user works at IBM as a consultant",
            ),
            (
                "On Sundays the user calls their parents",
                "The user calls their parents on Sundays",
            ),
            (
                "User likes jazz, blues, and soul music",
                "User likes jazz, blues and soul music",
            ),
            (
                "User's appointment is at 3 p.m.",
                "User's appointment is at 15:00",
            ),
            (
                "The user is a certified public accountant",
                "The user is a CPA",
            ),
            (
                "Planet Fitness is the user's gym",
                "User's gym is Planet Fitness",
            ),
        ] {
            assert!(near_duplicate(a, b), "{a} / {b}");
            assert!(near_duplicate(b, a), "{b} / {a}");
            assert_eq!(near_duplicate_key(a), near_duplicate_key(b), "{a} / {b}");
        }
    }

    #[test]
    fn another_word_tense_or_order_is_another_fact() {
        for (a, b) in [
            (
                "The user is not a morning person",
                "The user is a morning person",
            ),
            ("The user works at Google", "The user worked at Google"),
            (
                "User takes medication at 8 pm",
                "User takes medication at 8 am",
            ),
            (
                "User is allergic to shellfish",
                "User's wife is allergic to shellfish",
            ),
            (
                "The user lives in Berlin",
                "The user lives in Berlin with two cats",
            ),
            ("The user's dog is named Max", "The user's dog is named Rex"),
            (
                "Tom works at Google as a recruiter",
                "Tim works at Google as a recruiter",
            ),
            (
                "User's apartment is on the fourteenth floor",
                "User's apartment is on the fourth floor",
            ),
            ("The user was a heavy smoker", "The user is a heavy smoker"),
            ("Alice likes Bob", "Bob likes Alice"),
            ("User likes milk chocolate", "User likes chocolate milk"),
            (
                "User's brother lives in Lisbon",
                "User's brothers live in Lisbon",
            ),
        ] {
            assert!(!near_duplicate(a, b), "{a} / {b}");
            assert!(!near_duplicate(b, a), "{b} / {a}");
        }
    }

    #[test]
    fn near_duplicate_pieces() {
        assert!(typo("recieved", "received"));
        assert!(typo("acountant", "accountant"));
        assert!(!typo("daniel", "daniela"), "never at the end");
        assert!(!typo("katherine", "catherine"), "no other letter");
        assert!(!typo("4471", "4417"), "no number");
        assert_eq!(
            clock_times("at 3 p.m. or 15:00, 12 am"),
            "at 15h00 or 15h00, 0h00"
        );
        assert_eq!(
            comparable("Note: the user said that she has seven cats"),
            "user has 7 cats"
        );
    }

    /// The guiding set of near-duplicate pairs: the Python prototype of the rule folded 60
    /// of the 110 duplicates and none of the 150 others (5 folds by id, each 0 wrong), and
    /// every pair it folded had one key.
    #[test]
    fn near_duplicates_of_the_guiding_set() {
        let pairs: Vec<crate::lifecycle::LabelledDuplicate> =
            crate::labelled::parse_jsonl(include_str!("../../tests/data/near-duplicates.jsonl"))
                .expect("the corpus parses");
        let (mut right, mut wrong) = (0, 0);
        for p in &pairs {
            let judged = near_duplicate(&p.a, &p.b);
            assert_eq!(judged, near_duplicate(&p.b, &p.a), "symmetric: {p:?}");
            if judged {
                assert_eq!(near_duplicate_key(&p.a), near_duplicate_key(&p.b), "{p:?}");
                right += usize::from(p.duplicate);
                wrong += usize::from(!p.duplicate);
            }
        }
        assert_eq!(pairs.len(), 260);
        assert_eq!(wrong, 0, "a memory lost");
        assert!(right >= 58, "{right} of 110 duplicates");
    }
}

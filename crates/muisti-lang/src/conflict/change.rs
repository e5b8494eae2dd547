//! Whether a newer everyday memory replaces an older one of the same user ("I live in
//! Lisbon" / "Moved to Porto last week"): the detector's rules read sentence by sentence,
//! each sentence first asked whose it is.
//!
//! A user's memories speak of the user and of the people around them ("Omar's vegetarian",
//! "Mama lives in Casablanca", "Ada started swimming lessons"). The declarative detector
//! ([`super::judge`]) reads a whole text as the user's claim, which is right for a rule or
//! a preference but makes a story about someone else look like a change of the user's own
//! home or diet. Here a sentence belongs to the person it opens with (a name, "my sister",
//! "she"), else to the user; two sentences are compared only when they belong to the same
//! person.

use super::*;

/// Whose a sentence is: the user's, or another person's (by name or role).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Subject {
    User,
    Other(String),
    /// "he", "she" with nobody named before: someone, not known who (never the same as
    /// anyone).
    Someone,
}

/// One sentence as the rules read it.
struct Sentence {
    subject: Subject,
    /// The user's, and said so: in the first person, or a note with "I" left out. Only
    /// such a sentence fills one of the user's slots ("the carp lived in the bathtub" is
    /// nobody's home).
    personal: bool,
    /// The terms of its update cues ("gave up", "started"): what announces a change is no
    /// topic the two share.
    cue: BTreeSet<String>,
    slots: BTreeSet<String>,
    objects: BTreeSet<String>,
    qualifiers: BTreeSet<String>,
    /// Told in the past tense: an event ("Took the kids to the parade"), not a state.
    past: bool,
}

impl Sentence {
    /// Whether it announces a change: it has an update cue.
    fn announces(&self) -> bool {
        !self.cue.is_empty()
    }
}

/// Words a sentence may open with before its subject.
const OPENERS: &[&str] = &[
    "and",
    "but",
    "so",
    "now",
    "then",
    "also",
    "finally",
    "just",
    "today",
    "yesterday",
    "tonight",
    "ok",
    "okay",
    "fine",
    "well",
    "oh",
    "yes",
    "yeah",
    "yep",
    "nope",
    "honestly",
    "actually",
    "right",
    "hmm",
    "ugh",
    "wow",
    "officially",
    "update",
    "big",
    "news",
    "guess",
    "what",
    "after",
    "since",
];

/// First words that open a sentence about the user ("I", "we", "the user").
const FIRST_PERSON: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "im", "ive", "me", "we", "we're", "we've", "we'd", "we'll",
    "us", "user", "users",
];

/// Verbs after which a capitalised word says what someone is, not who.
const COPULAS: &[&str] = &["is", "was", "are", "were", "'s", "has", "had", "became"];

/// Pronouns of someone else: a sentence opening with one is not the user's, and its person
/// is not known.
const THIRD_PERSON: &[&str] = &[
    "he", "she", "they", "he's", "she's", "they're", "his", "her", "their", "him",
];

/// Capitalised words that open a sentence without naming a person (besides the days and
/// months, [`crate::time::WEEKDAYS`] and [`crate::time::MONTHS`]): articles, pronouns of
/// things, adverbs, prepositions and numbers (the verbs a note opens with are [`VERBS`]).
const NOT_NAMES: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "there", "it", "it's", "its", "no", "not",
    "new", "first", "last", "next", "every", "back", "need", "want", "love", "hate", "prefer",
    "still", "never", "always", "really", "very", "cannot", "don't", "won't", "didn't", "going",
    "trying", "thinking", "planning", "getting", "having", "off", "on", "in", "at", "for", "from",
    "with", "to", "of", "by", "about", "one", "two", "three", "four", "five", "fourth", "third",
    "second",
];

/// The stems of words of time ("evening", "year"): two sentences that share only one speak
/// of the same time, not of the same thing.
const TIME_STEMS: &[&str] = &[
    "year", "month", "week", "day", "today", "tonight", "time", "morn", "even", "night", "weekend",
    "new", "first", "last", "next", "ago", "summer", "winter", "spring", "autumn",
];

/// The fewest letters of a topic term two memories share ("st", "km" and "guy" name no
/// topic).
const MIN_TOPIC: usize = 4;

/// Verbs of any story ("came", "picked up", "went back"): sharing one is sharing no topic.
const STORY_STEMS: &[&str] = &[
    "came", "come", "went", "goe", "pick", "made", "make", "take", "took", "back", "give", "gave",
    "said", "told", "start", "tri", "call", "look", "found", "keep", "kept", "turn",
];

/// Whether a word is a day's or a month's name.
fn calendar(word: &str) -> bool {
    crate::time::WEEKDAYS.contains(&word) || crate::time::MONTHS.contains(&word)
}

/// Whether a shared term may name a topic: long enough ([`MIN_TOPIC`]), not a word of time
/// ([`TIME_STEMS`]) or of any story ([`STORY_STEMS`]).
fn topic(term: &str) -> bool {
    term.chars().count() >= MIN_TOPIC
        && !TIME_STEMS.contains(&term)
        && !crate::time::WEEKDAYS.contains(&term)
        && !STORY_STEMS.contains(&term)
}

/// Whether `term` is the name of the person both sentences are about ("Akosua turned 5" /
/// "Akosua fell asleep"): that person is who, not what, they speak of.
fn named(subject: &Subject, term: &str) -> bool {
    match subject {
        Subject::Other(name) => tokenize(name).any(|t| t == term),
        Subject::User | Subject::Someone => false,
    }
}

/// Verbs a note opens with when it leaves out "I" (besides those ending in "-ed").
const VERBS: &[&str] = &[
    "quit", "sold", "got", "been", "left", "began", "became", "took", "made", "went", "bought",
    "gave", "had", "did", "found", "paid", "spent", "met", "ran", "swam", "won", "lost", "sent",
    "saw", "put", "set", "let", "rode", "drove", "flew", "broke", "wore", "ate", "drank",
    "prefers", "likes", "loves", "hates", "wants", "needs", "takes", "uses", "drinks", "eats",
    "avoids", "refuses", "doesn't", "can't",
];

/// Words of a thing given up for another ("traded in the Subaru", "swapping paneer for
/// tofu"), besides the declarative detector's update cues.
static SWAP_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b(?:traded|trading|swapped|swapping|replaced|got rid of)\b"));

/// A word in lower case with typographic apostrophes (’) made plain.
fn lower(word: &str) -> String {
    word.to_lowercase().replace('\u{2019}', "'")
}

/// The words of a sentence, without the punctuation around them.
fn words(sentence: &str) -> Vec<&str> {
    sentence
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// What a sentence opens with, as to whose it is.
enum Opener {
    /// The user ("I", "we", "my new job", a note with "I" left out).
    User,
    /// A named person or a role ("Sofía", "my sister").
    Other(String),
    /// "he", "she", "they": whoever was named before.
    Pronoun,
    /// Nothing that says (a time, a thing, a fragment).
    Unknown,
}

/// What `sentence` opens with (see the module docs).
fn opener(sentence: &str) -> Opener {
    let words = words(sentence);
    let mut at = 0;
    while words
        .get(at)
        .is_some_and(|w| OPENERS.contains(&lower(w).as_str()))
    {
        at += 1;
    }
    let Some(first) = words.get(at) else {
        return Opener::Unknown;
    };
    let word = lower(first);
    if FIRST_PERSON.contains(&word.as_str()) {
        return Opener::User;
    }
    if word == "the" && words.get(at + 1).is_some_and(|w| lower(w) == "user") {
        return Opener::User;
    }
    if THIRD_PERSON.contains(&word.as_str()) {
        return Opener::Pronoun;
    }
    if matches!(word.as_str(), "my" | "our") {
        // "My sister lives …" is the sister's; "My new job …" the user's.
        let next = words.get(at + 1).map(|w| lower(w)).unwrap_or_default();
        let second = words.get(at + 2).map(|w| lower(w)).unwrap_or_default();
        // "Our nanny Sandrine picks …", "my best friend Tom": the name after the role is
        // who; a name after "is" is what ("my dentist is Dr. Patel" is the user's dentist).
        let named = words[at + 1..]
            .iter()
            .take(3)
            .skip(1)
            .take_while(|w| !COPULAS.contains(&lower(w).as_str()))
            .find(|w| w.chars().next().is_some_and(char::is_uppercase));
        if let Some(name) = named {
            return Opener::Other(lower(name).trim_end_matches("'s").to_owned());
        }
        let person = [next, second]
            .into_iter()
            .find(|w| PERSON.split('|').any(|p| p == w));
        return match person {
            Some(p) => Opener::Other(person_class(&p)),
            None => Opener::User,
        };
    }
    let name = word
        .strip_suffix("'s")
        .unwrap_or(&word)
        .trim_end_matches('\'')
        .to_owned();
    let capitalised = first.chars().next().is_some_and(char::is_uppercase);
    let verb_like = name.ends_with("ed") || VERBS.contains(&name.as_str());
    if at == 0 && verb_like {
        // A note that leaves out "I": "Started bouldering", "Sold the Passat".
        return Opener::User;
    }
    if capitalised && !verb_like && !NOT_NAMES.contains(&name.as_str()) && !calendar(&name) {
        return Opener::Other(name);
    }
    Opener::Unknown
}

/// Whether a sentence speaks in the first person anywhere ("… and I love glazing").
fn first_person(sentence: &str) -> bool {
    words(sentence).iter().any(|w| {
        let w = lower(w);
        FIRST_PERSON.contains(&w.as_str()) || matches!(w.as_str(), "my" | "our" | "mine")
    })
}

/// The sentences of `text`, split at `.`, `!`, `?` and line ends, and at `;`, `:` and
/// dashes, after which a piece goes on with the sentence before ("… — twelve dishes, the
/// carp …"): a piece whose opening names nobody is that sentence's person's, a pronoun is
/// the person named before it, and a sentence that names nobody is the user's (a user's
/// memories are about the user unless they say otherwise). Each is read once.
fn sentences(text: &str) -> Vec<Sentence> {
    let push = |piece: &str, continues: bool, out: &mut Vec<Sentence>| {
        if !piece.chars().any(char::is_alphanumeric) {
            return;
        }
        let before = out.last().map(|s| s.subject.clone());
        let (subject, personal) = match opener(piece) {
            Opener::User => (Subject::User, true),
            Opener::Other(name) => (Subject::Other(name), false),
            Opener::Pronoun => match before {
                Some(Subject::Other(name)) => (Subject::Other(name), false),
                _ => (Subject::Someone, false),
            },
            Opener::Unknown => match before {
                Some(subject) if continues => {
                    let personal = subject == Subject::User && first_person(piece);
                    (subject, personal)
                }
                _ => (Subject::User, first_person(piece)),
            },
        };
        let norm = normalize(piece);
        out.push(Sentence {
            subject,
            personal,
            slots: life_slots(&norm),
            cue: UPDATE_RE
                .find_iter(&norm)
                .chain(SWAP_RE.find_iter(&norm))
                .flat_map(|m| terms(m.as_str()))
                .collect(),
            objects: objects(&content(&norm)),
            qualifiers: qualifiers(&norm),
            past: past(&norm),
        });
    };
    let mut out: Vec<Sentence> = Vec::new();
    let mut piece_start = 0;
    let mut continues = false;
    for (i, c) in text.char_indices() {
        let ends = matches!(c, '.' | '!' | '?' | '\n');
        let breaks = matches!(c, ';' | ':' | '\u{2014}' | '\u{2013}');
        if ends || breaks {
            push(&text[piece_start..i], continues, &mut out);
            piece_start = i + c.len_utf8();
            continues = breaks;
        }
    }
    push(&text[piece_start..], continues, &mut out);
    out
}

/// Why one memory replaces another ([`replaces`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// Both fill this single-valued slot of a life ("home", "diet", "car" …).
    Slot(String),
    /// The newer announces a change and shares this topic term with the older.
    Change(String),
}

impl std::fmt::Display for Replacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Replacement::Slot(slot) => write!(f, "the same {slot}"),
            Replacement::Change(term) => write!(f, "a change of \"{term}\""),
        }
    }
}

/// Whether `newer`, a memory of one user dated later, replaces `older`, an earlier memory
/// of the same user, and why: the newer is not an addition ("also", "too") and for one
/// person (the user or someone they name) either a sentence of each fills the same
/// single-valued slot of a life (home, job, diet, partner, car …; not by a word that names
/// other things in a story, such as "home" alone), or the newer announces a change
/// ("started", "switched", "no longer", "sold" …) and a sentence of it shares a topic term
/// (not a word of time) with a sentence of the older that states something rather than
/// tells an event; never across different qualifiers ("for work" / "for chats").
pub fn replaces(older: &str, newer: &str) -> Option<Replacement> {
    Statement::read(newer).replaces(&Statement::read(older))
}

/// A memory's text read once for [`replaces`], so that one memory compared with several
/// others is read only once.
pub struct Statement {
    sentences: Vec<Sentence>,
    additive: bool,
}

impl Statement {
    /// Reads `text`.
    pub fn read(text: &str) -> Self {
        Self {
            sentences: sentences(text),
            additive: additive(&normalize(text)),
        }
    }

    /// Whether this memory, dated later, could replace another: it fills a slot of a life
    /// or announces a change. A memory that does neither replaces nothing (only a memory
    /// dated after it may replace it).
    pub fn may_replace(&self) -> bool {
        !self.additive
            && self
                .sentences
                .iter()
                .any(|s| s.announces() || !s.slots.is_empty())
    }

    /// [`replaces`] with this memory the newer and `older` the older.
    pub fn replaces(&self, older: &Statement) -> Option<Replacement> {
        if self.additive {
            return None;
        }
        let (old, new) = (&older.sentences, &self.sentences);
        // A change is announced by the newer memory as a whole, for the person of the
        // sentence that announces it ("Started bouldering on Tuesdays. No pottery studio
        // near us.").
        let announced = |who: &Subject| new.iter().any(|n| n.announces() && &n.subject == who);
        new.iter().find_map(|n| {
            old.iter().find_map(|o| {
                if o.subject != n.subject
                    || o.subject == Subject::Someone
                    || both_filled_and_disjoint(&o.qualifiers, &n.qualifiers)
                {
                    return None;
                }
                let personal = o.subject != Subject::User || (o.personal && n.personal);
                if let Some(slot) = o.slots.intersection(&n.slots).next().filter(|_| personal) {
                    return Some(Replacement::Slot(slot.clone()));
                }
                if !announced(&n.subject) || o.past {
                    return None;
                }
                o.objects
                    .intersection(&n.objects)
                    .find(|t| topic(t) && !n.cue.contains(*t) && !named(&n.subject, t))
                    .map(|t| Replacement::Change(t.clone()))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_of_the_users_own_circumstances_replaces_the_old_one() {
        for (older, newer) in [
            ("I live in Lisbon.", "Moved to Porto last week."),
            (
                "I'm on keto, so no bread or pasta for me.",
                "I've given up keto.",
            ),
            ("I smoke about ten a day.", "Quit smoking two weeks ago."),
            (
                "Thursday evenings are pottery class at a community studio.",
                "Started bouldering on Tuesdays instead: no pottery studio near us.",
            ),
            ("We live in Montreal.", "We live in Somerville now."),
            (
                "Yeah, I smoke about ten a day.",
                "Quit smoking two weeks ago.",
            ),
            (
                "User drives a green Subaru.",
                "Traded in the Subaru for a Kia Niro.",
            ),
            (
                "Our nanny Sandrine picks Adam up from school.",
                "Sandrine has retired, so Adam goes to the after-school club.",
            ),
            ("I go by Alex", "I go by Alexandra"),
            ("I have one kid", "I have two kids"),
            ("My dentist is Dr. Patel", "My dentist is Dr. Okafor"),
            ("My manager is Tom Walsh", "My manager is Rachel Kim"),
            ("I work part-time", "I work full-time"),
            (
                "I am a junior developer at Shopify",
                "I am a senior developer at Shopify",
            ),
        ] {
            assert!(replaces(older, newer).is_some(), "{older:?} → {newer:?}");
        }
    }

    #[test]
    fn a_role_is_one_persons_and_a_name_after_it_is_who() {
        for (older, newer) in [
            // What the manager does is no new manager.
            (
                "My manager is Tom Walsh",
                "My manager is on holiday this week",
            ),
            // The sister is someone else: her dentist is not the user's.
            (
                "My dentist is Dr. Patel",
                "My sister Ana's dentist is Dr. Okafor",
            ),
            // "my best friend Tom" names Tom: his job is not the user's.
            ("I work as a nurse", "My best friend Tom works as a pilot"),
        ] {
            assert!(replaces(older, newer).is_none(), "{older:?} → {newer:?}");
        }
    }

    #[test]
    fn another_persons_story_or_an_addition_replaces_nothing_of_the_users() {
        for (older, newer) in [
            ("I live in Lisbon.", "Mama lives in Casablanca."),
            (
                "I'm vegetarian.",
                "Omar's vegetarian, so no meat at the party.",
            ),
            ("I drive a Subaru.", "My sister drives a Fiat."),
            (
                "Started bouldering at the wall on Tuesday evenings.",
                "Ada started swimming lessons on Saturday mornings.",
            ),
            (
                "I'm allergic to peanuts.",
                "I'm also allergic to shellfish.",
            ),
            (
                "I work from home on Mondays.",
                "Spent Christmas at home in Kraków.",
            ),
        ] {
            assert!(replaces(older, newer).is_none(), "{older:?} → {newer:?}");
        }
    }

    #[test]
    fn a_named_persons_change_replaces_what_was_said_of_them() {
        assert_eq!(
            replaces(
                "Sofía is studying nursing in Austin.",
                "Sofía switched from nursing to architecture."
            ),
            Some(Replacement::Change("nurs".into()))
        );
        assert_eq!(
            replaces(
                "Sofía is studying nursing in Austin.",
                "Diego switched from nursing to architecture."
            ),
            None
        );
    }
}

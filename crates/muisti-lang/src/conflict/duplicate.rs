//! Near duplicates: two memories that state the same fact in the same words but for their
//! form, so near-duplicate consolidation may delete one of them (precision first).

use super::*;

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
pub(super) fn tense(all: &[Word], compared: &[Word]) -> bool {
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
pub(super) struct Word {
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
pub(super) const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "am", "be", "has", "have", "do", "does", "that", "and",
];

/// The user's subject forms: a memory may speak of the user in the third person or the first.
pub(super) const SUBJECT_FORMS: &[(&str, &str)] = &[
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
pub(super) const BARE_NEGATIONS: &[(&str, &str)] = &[
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
pub(super) const CLITICS: &[(&str, &str)] = &[
    ("m", "am"),
    ("re", "are"),
    ("ve", "have"),
    ("ll", "will"),
    ("d", "would"),
];

/// Words after which `'s` is "is" ("it's"), not a possessive.
pub(super) const IS_HOSTS: &[&str] = &[
    "it", "that", "there", "what", "who", "he", "she", "here", "where", "how",
];

/// Words that start a phrase (prepositions, subordinating conjunctions, the user as a
/// subject): where two phrases may be exchanged.
pub(super) const OPENERS: &[&str] = &[
    "in", "on", "at", "for", "with", "by", "from", "to", "of", "about", "during", "before",
    "after", "since", "until", "into", "onto", "over", "under", "through", "via", "per", "around",
    "near", "without", "within", "between", "among", "against", "across", "along", "behind",
    "beyond", "toward", "towards", "upon", "every", "each", "when", "while", "if", "because",
    "although", "though", "where", "whenever", "user", "user's",
];

/// Words after which a noun's number counts ("a dog" / "dogs").
pub(super) const DETERMINERS: &[&str] =
    &["a", "an", "the", "this", "these", "those", "every", "each"];

/// Words an acronym may skip ("Massachusetts Institute of Technology" = "MIT").
pub(super) const CONNECTORS: &[&str] = &["of", "for"];

/// Number words, conventional abbreviations and plain synonyms, replaced by one form before
/// anything is compared (whole words, like [`SPELLING`]).
pub(super) const LEXICON: &[(&str, &str)] = &[
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
pub(super) static FRAMES_RE: LazyLock<Regex> = LazyLock::new(|| {
    const SAYING: &str = "(?:said|says|stated|states|mentioned|mentions|explained|explains|shared|shares|indicated|indicates|confirmed|confirms|noted|notes|reported|reports|told me|told us|tells me|added|adds|revealed|reveals|clarified|clarifies|emphasized|emphasizes|stressed|stresses|remarked|pointed out|disclosed|expressed|admitted|admits|wrote|writes|commented|specified|informed me|let me know|acknowledged|acknowledges)";
    compile(&format!(
        r"^(?:(?:important|fyi|reminder|memo|note to self):\s*|according to (?:the )?users?,?\s*|(?:in|during|from) (?:(?:our|a|the|an|one|this|that|an earlier|a previous|a recent|a past) )?(?:conversations?|chats?|discussions?|sessions?),\s*|as (?:the )?users? (?:has |had )?{SAYING}(?: earlier| before| previously)?,\s*|(?:the )?users? (?:has |had )?{SAYING}(?: several times| many times| more than once| repeatedly| often| before| earlier| previously| once| in passing)?(?: that)?\s+)"
    ))
});

/// A pronoun right after a frame ("The user said that she …") is the user.
pub(super) const LEADING_PRONOUNS: &[(&str, &str)] = &[
    ("she ", "user "),
    ("he ", "user "),
    ("her ", "user's "),
    ("his ", "user's "),
];

/// A time on the 12-hour clock ("3 pm", "9:30 a.m.").
pub(super) static TWELVE_HOUR_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b([0-9]{1,2})(?::([0-5][0-9]))?\s*([ap])\.?\s?m\b\.?"));

/// A time on the 24-hour clock ("15:00").
pub(super) static CLOCK_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\b([01]?[0-9]|2[0-3]):([0-5][0-9])\b"));

/// A word: letters and digits, with apostrophes and hyphens inside.
pub(super) static WORD_RE: LazyLock<Regex> = LazyLock::new(|| compile(r"[^\W_]+(?:['\-][^\W_]+)*"));

/// The longest texts (in words compared) whose phrases [`swapped`] tries to exchange;
/// longer ones must be in the same order.
pub(super) const MAX_EXCHANGED: usize = 64;

/// A memory's text as [`near_duplicate`] reads it: [`normalize`]d, without its frame, with
/// clock times as `15h00` and the [`LEXICON`] applied.
pub(super) fn comparable(text: &str) -> String {
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
pub(super) static LEXICON_MAP: LazyLock<HashMap<&'static str, &'static str>> =
    LazyLock::new(|| {
        let mut map = HashMap::new();
        for &(from, to) in LEXICON {
            map.entry(from).or_insert(to);
        }
        map
    });

/// Normalised text without its reporting frames ([`FRAMES_RE`], then [`unreported`], until
/// none is left), a leading "she"/"he" after one read as the user.
pub(super) fn unframed(norm: &str) -> String {
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
pub(super) fn clock_times(text: &str) -> String {
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
pub(super) fn capitals(original: &str) -> BTreeSet<String> {
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
pub(super) fn words(text: &str, capitals: &BTreeSet<String>) -> Vec<Word> {
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
pub(super) fn word(raw: &str, capitals: &BTreeSet<String>) -> Word {
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
pub(super) fn content_words(words: &[Word]) -> Vec<Word> {
    words.iter().filter(|w| !w.function).cloned().collect()
}

/// The acronyms among words.
pub(super) fn acronyms(words: &[Word]) -> Vec<String> {
    words
        .iter()
        .filter(|w| w.acronym)
        .map(|w| w.term.clone())
        .collect()
}

/// The words with each run whose initials spell one of `acronyms` (the other text's, which
/// these words lack) replaced by the acronym: "certified public accountant" → `cpa`.
pub(super) fn collapse(mut words: Vec<Word>, acronyms: &[String]) -> Vec<Word> {
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
pub(super) fn spelt(words: &[Word], letters: &[char]) -> Option<usize> {
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
pub(super) fn pair_up(a: &[Word], b: &[Word]) -> Option<Vec<usize>> {
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
pub(super) fn misspelt(x: &Word, y: &Word) -> bool {
    !x.acronym
        && !y.acronym
        && x.term.chars().next() == y.term.chars().next()
        && typo(&x.raw, &y.raw)
}

/// Whether two words of letters differ by a typing slip inside them: two adjacent letters
/// swapped (in words of five letters or more) or one letter dropped (the shorter of six or
/// more), never the first or the last letter.
pub(super) fn typo(x: &str, y: &str) -> bool {
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
pub(super) fn number_differs(x: &Word, y: &Word) -> bool {
    x.term == y.term
        && !x.term.ends_with("'s")
        && x.term != "user"
        && (x.determined || y.determined)
        && x.raw.ends_with('s') != y.raw.ends_with('s')
}

/// Whether `b` is `a`, or `a` with two adjacent phrases exchanged (`x P Q y` / `x Q P y`)
/// where each text starts a phrase at the one it puts second (`opens_a`, `opens_b`: which
/// words start one).
pub(super) fn swapped(a: &[&str], b: &[&str], opens_a: &[bool], opens_b: &[bool]) -> bool {
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

/// A pair of the near-duplicate corpus (`crates/muisti-lang/tests/data/near-duplicates.jsonl`):
/// two memories and whether keeping both is redundant, as an annotator judged.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct LabelledDuplicate {
    /// Its number (folds are by number).
    pub id: u64,
    /// One memory.
    pub a: String,
    /// The other.
    pub b: String,
    /// Whether they state the same fact.
    pub duplicate: bool,
}

//! Cues in a statement that rule a pair out or mark a change: another person, an addition,
//! an update, a past state, a qualifier.

use super::*;

/// Nouns of people other than the user.
pub(super) const PERSON: &str = "wife|husband|partner|spouse|son|sons|daughter|daughters|kid|kids|child|children|baby|brother|brothers|sister|sisters|mother|mom|father|dad|parent|parents|grandmother|grandma|grandfather|grandpa|boss|manager|colleague|colleagues|coworker|coworkers|friend|friends|assistant|boyfriend|girlfriend|fiance|fiancee|roommate|flatmate|neighbor|neighbour|uncle|aunt|cousin|niece|nephew|team|family|in-laws?";

/// A possessive, at most one modifier word, and a [`PERSON`] noun; `not` catches the words
/// after which the noun names no person ("mother tongue", "family company"). The doc writes
/// that check as a negative lookahead, which the `regex` crate lacks.
pub(super) static PERSON_RE: LazyLock<Regex> = LazyLock::new(|| {
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
pub(super) fn persons(norm: &str) -> BTreeSet<String> {
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
pub(super) fn person_class(noun: &str) -> String {
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
pub(super) static ADDITIVE_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(?:also|as well|either|another|in addition|additionally|besides)\b|\btoo\s*(?:[,.;:!?]|$)",
    )
});

/// The doc's `additive`: the new text adds a value ("I'm *also* allergic to shellfish"), so the
/// old one still holds.
pub(super) fn additive(norm: &str) -> bool {
    ADDITIVE_RE.is_match(norm)
}

/// Words that announce a change of value.
pub(super) static UPDATE_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(?:now|from now on|any ?more|no longer|instead|these days|nowadays|switched|switching|changed|change to|quit|gave up|given up|giving up|stopped|again|no more|actually|moved|relocated|started|(?:i|just) left|left (?:my|the|a|an)|sold|got married|divorced|graduated|retired|come around|came around|not any|lately|recently|promoted|dropped out|broke up|adopted|just had|turned \d+|stop|switch(?:ed|ing)? to|going forward|(?:my|our|a) new|^new)\b",
    )
});

/// The first half of the doc's `update`: the new text announces a change ("now", "no longer",
/// "switched", "moved", …).
pub(super) fn update_cue(norm: &str) -> bool {
    UPDATE_RE.is_match(norm)
}

/// The second half of the doc's `update`, an explicit negation of the old value: in the new
/// text's terms, the term right after "not", "no", "instead of" or "rather than" is a content
/// term of the old text ("not Sam", "instead of TypeScript").
pub(super) fn negates_old(new_terms: &[String], old_content: &BTreeSet<String>) -> bool {
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
pub(super) static HISTORY_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"\b(?:(?i:used to|back in|previously|formerly|years ago|in (?:19|20)\d\d)|before [A-Z])",
    )
});

/// The doc's `history` marker (the caller requires that no update cue is present): the
/// text tells of the past ("I used to live in Rome"), which does not replace the present. A
/// year one was born in ("born in 1990") is no past state.
pub(super) fn history_marker(original: &str) -> bool {
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
pub(super) static QUALIFIER_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"\b(?:for|when|during|while|on my|in my)\s+(?P<phrase>[a-z][a-z ]*)")
});

/// Whitespace then a subject word: where a qualifier ends ("for work | I prefer …").
pub(super) static SUBJECT_AHEAD_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"\A\s+(?:i|user|the user|we|please)\b"));

/// The doc's `qualifiers`: the content terms of the scopes a text sets ("*for work* emails",
/// "*when flying*, …"). Two texts scoped differently can both hold. A phrase after "for",
/// "when", "during" or "while" runs, lazily, to the first punctuation mark, subject word or end
/// of text (see [`qualifier_end`]); contraction fragments are dropped. A phrase whose terms are
/// only "me" is ignored: "me" is a stop word, so it never counts as content anyway.
pub(super) fn qualifiers(norm: &str) -> BTreeSet<String> {
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
pub(super) fn qualifier_end(text: &str, start: usize, run_end: usize) -> Option<usize> {
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

//! Facts read from what a person says, by declarative sentence patterns: no model.
//!
//! A message is cut into sentences, a sentence into clauses where a new first-person
//! subject starts ("I'm Ana, I live in Porto and I work as a nurse"). A clause the
//! assistant says about the user ("you mentioned you're a nurse") is read in the user's
//! first person. Each clause is matched, first match wins, against:
//!
//! * retractions: "I'm not X anymore", "I'm no longer X", "I don't X anymore", "I no longer
//!   X", "forget that X", "stop X-ing";
//! * rules: "always / never X", "don't X" for what an assistant does, "from now on X",
//!   "call me X";
//! * preferences: "I like / love / enjoy / prefer / hate / dislike / can't stand X", "I'm a
//!   fan of X", "my favourite X is Y";
//! * facts: "I moved to X" (as "I live in X"), "I live / work / study in|at|as X", "I'm X"
//!   for a known kind of X (a role, an allergy, a diet, where from, an age, a name), "I
//!   have X" for a countable or a condition, "my X is Y" for a known X (family, pets, name,
//!   work, home, birthday ...).
//!
//! What looks like a pattern but is no lasting fact is left: questions, one-off plans
//! ("tomorrow", "later", "next week"), "I'm not sure", "I like that idea", "my question
//! is". Times ("last month", "in 2019") are resolved against the message's date.

mod words;

use std::sync::LazyLock;

use muisti_core::{Category, Timestamp};
use regex::Regex;

use crate::time::date_in;
use words::*;

/// A fact one clause states, in the first person of the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// `fact`, `preference` or `rule`.
    pub kind: Category,
    /// The fact ("I live in Porto").
    pub text: String,
    /// A statement that what `text` says no longer holds.
    pub retract: bool,
    /// When it became true, resolved against the message's time ("last month").
    pub at: Option<Timestamp>,
}

/// The facts one message states (module docs), in order: the user's own, or with
/// `assistant` what the assistant says of the user; `said` is when it was said.
pub fn read(text: &str, assistant: bool, said: Timestamp) -> Vec<Fact> {
    clauses(text, assistant)
        .into_iter()
        .filter_map(|clause| {
            let (kind, text, retract) = read_clause(&clause, assistant)?;
            Some(Fact {
                kind,
                text,
                retract,
                at: date_in(&clause, said),
            })
        })
        .collect()
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| unreachable!("invalid pattern {pattern}: {e}"))
}

/// Where a clause starts inside a sentence: a connective, then a new subject.
static CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:,|;|\s-\s|\band\b|\bbut\b|\bso\b|\bplus\b|\balthough\b)\s+(?:also\s+|now\s+|actually\s+)?(?P<s>i\b|i'm\b|im\b|my\b)",
    )
});
static CLAUSE_YOU: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:,|;|\s-\s|\band\b|\bbut\b|\bso\b|\bplus\b)\s+(?:also\s+)?(?P<s>you\b|you're\b|your\b|i\b|i'll\b|i've\b|i'm\b|we\b|we'll\b|let\b|that\b|here\b|this\b)",
    )
});
/// Words a clause may start with that say nothing.
static FILLER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:oh|well|so|also|actually|btw|by the way|hey|hi|hello|yeah|yes|yep|no|nope|ok|okay|um|uh|honestly|anyway|and|but|plus|fyi|just so you know|for the record|for context|as you know|heads up|just a heads up|oh and|also,|ah|hmm|right|sure|cool|great|thanks|thank you|lol|haha|fun fact|quick update|update|remember|reminder|as always|note|change of plan|these days|nowadays|currently|just fyi)\b[,:!.]?\s*)+",
    )
});
/// An assistant's way into a statement about the user.
static YOU_LEAD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:since|because|as|given that|now that|so|and)?\s*(?:you\s+(?:mentioned|said|told me|noted|shared)\s+(?:earlier\s+|before\s+)?(?:that\s+)?)?(?P<rest>(?:you|you're|your)\b.*)$",
    )
});
static YOU_WORDS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?P<w>you're|you are|you've|you have|yourself|your|you)\b"));
/// Plans, one-off tasks and passing states: no lasting fact.
static TRANSIENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:today|tonight|tomorrow|later|right now|at the moment|this (?:morning|afternoon|evening|week|weekend)|next (?:week|month|year|time)|soon|wondering|if i|would|could|should|might|maybe|going to|gonna|planning|thinking about|trying to|about to)\b|\?",
    )
});

static RETRACT_AM: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^i(?:'m| am) (?:(?:not|no longer) (?P<x>.+?) any ?more|no longer (?P<y>.+?))$")
});
static RETRACT_DO: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^i (?:(?:don't|do not|dont) (?P<x>.+?) any ?more|no longer (?P<y>.+?))$")
});
static RETRACT_MY: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^my (?P<x>.+?) (?:is|are) no longer (?P<y>.+)$"));
static FORGET: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:please |can you |could you |you can )?forget (?:that |about |what i said about )?(?P<x>.+)$",
    )
});
static STOP: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(?:please |can you |could you )?(?:stop|quit) (?P<x>\w+ing\b.*)$"));

static RULE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(?:please |and )?(?P<w>always|never) (?P<v>[a-z'-]+)(?P<rest>.*)$"));
static DONT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:please )?(?:don't|do not|dont) (?:ever )?(?P<v>[a-z'-]+)(?P<rest>.*)$")
});
static FROM_NOW: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:from now on|going forward|in (?:the )?future|by default|whenever you (?:reply|answer|write)),?\s+(?:please\s+)?(?P<rest>.+)$",
    )
});
static STYLE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:please )?(?:(?:keep|make) (?:your |the |all |my )?(?:answers|replies|responses|messages|summaries|emails|it|them|things)\b|(?:answer|reply|respond|write|talk|speak|communicate) (?:to me )?(?:only )?in (?:\w+)$|(?:use|give me|show) (?:only )?(?:metric|imperial|celsius|fahrenheit|british|american|us|uk|24-hour|12-hour)\b|(?:address me|refer to me) as\b).+|^(?:please )?(?:answer|reply|respond|write|talk|speak) (?:to me )?(?:only )?in \w+$",
    )
});
static CALL_ME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:please |you can |just |feel free to )?call me (?P<x>[A-Za-z][\w-]*)\b")
});

static LIKE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i (?:really |also |absolutely |do |truly |totally |genuinely |just |kind of |kinda |still )*(?P<v>like|love|enjoy|prefer|adore|hate|dislike|detest|loathe|can't stand|cannot stand|am a (?:big |huge )?fan of|'m a (?:big |huge )?fan of|am not a fan of|'m not a fan of|am into|'m into|am obsessed with|'m obsessed with)\s+(?P<x>.+)$",
    )
});
static FAN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i(?:'m| am) (?P<v>a (?:big |huge |massive )?fan of|not a fan of|into|obsessed with|passionate about|crazy about)\s+(?P<x>.+)$",
    )
});
static HABIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^i (?:always|usually|normally) (?P<x>.+)$"));
static FAVOURITE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^my (?:all-time |absolute )?(?:favou?rite|fave) (?P<x>.+?) (?:is|are|would be|has to be|'s) (?P<y>.+)$",
    )
});

static MOVED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i (?:just |recently |finally |have |'ve )*(?:moved|relocated) (?:back )?(?:to|into) (?P<x>.+)$",
    )
});
static LIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i (?:currently |now |still |also )?(?P<v>live|work|study|teach|volunteer|grew up|was born|was raised|stay)(?P<mid>(?: (?:nights|days|weekends|remotely|part-time|full-time|freelance|mostly|mainly|shifts))?)(?P<p> (?:in|at|for|as|near|from|with|on))\s+(?P<x>.+)$",
    )
});
static JOINED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i (?:just |recently )?(?:joined|started (?:a new job |working |my new job )?(?:at|with)) (?P<x>[A-Z][\w&.-]*(?: [A-Z][\w&.-]*)*)",
    )
});
static AM: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^i(?:'m| am) (?P<x>[^ ]+)(?P<rest>.*)$"));
static HAVE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^i (?:also |still )?(?:have|'ve got|have got|own) (?P<x>[^ ]+)(?P<rest>.*)$")
});
static HAVE_AND: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?P<have>i (?:have|own|'ve got) )(?P<a>.+?) and (?P<b>(?:a|an|one|two|three|four|five|\d+) .+)$",
    )
});
static VERB: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^i (?:also |usually |always |only |mostly |still |mainly )?(?P<v>speak|drive|ride|play|follow|eat|drink|don't eat|don't drink|do not eat|do not drink|can't eat|cannot eat|can't have|avoid|practice|practise|collect|support|root for|go by|take care of|run|cycle|swim|knit|paint|meditate|volunteer|use|cook|rent|bank with|commute|work from)\s+(?P<x>.+)$",
    )
});
static MY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^my (?P<x>[\w' -]{1,60}?) (?:is|are|'s|was born on|was born in) (?P<y>.+)$")
});
static CAPITAL_NAME: LazyLock<Regex> = LazyLock::new(|| re(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)?$"));

/// Where a clause's own statement ends: a reason, a consequence or an aside after a comma.
static ASIDE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:,\s*(?:so|which|because|since|as|but|though|although|and then|if|when|that's why|meaning|especially|unless|even|got|just|it's|its|we|they|he|she|nobody|no one|everyone|what|whats|what's|how|can|could|any|do|does|is|are|should|would|why|where|which|who|thanks|thank you|please|lol|haha)\b|\s+if that (?:matters|helps)\b).*$",
    )
});
/// Trailing words that add nothing to a fact.
static TAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:,?\s+(?:now|these days|nowadays|too|as well|btw|by the way|though|lol|haha|actually|anyway|honestly|i guess|i think|btw|fyi|for sure|really|at all|so yeah|from now on|going forward|please|if that matters|if that helps))+$",
    )
});
/// Where a place ends in "I moved to X last year".
static PLACE_END: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\s+(?:last|in (?:\d{4}|january|february|march|april|may|june|july|august|september|october|november|december|the)|a (?:few|couple|year|month|week)|\d+ (?:years|months|weeks|days)|ago|this|with|for|because|since|after|when|to be|about|earlier|recently|back in|two|three|four|five|six|around)\b.*$",
    )
});

/// The clauses of a message: sentences, cut where a new subject starts; an assistant's
/// clauses about the user in the user's first person (the others dropped).
fn clauses(text: &str, assistant: bool) -> Vec<String> {
    let text = text.replace(['\u{2019}', '\u{2018}'], "'");
    let mut out = Vec::new();
    for sentence in split_sentences(&text) {
        let cut = if assistant { &CLAUSE_YOU } else { &CLAUSE };
        let mut starts = vec![0];
        starts.extend(
            cut.captures_iter(sentence)
                .filter_map(|c| c.name("s").map(|m| m.start())),
        );
        starts.push(sentence.len());
        for w in starts.windows(2) {
            let clause = FILLER.replace(sentence[w[0]..w[1]].trim(), "");
            let clause = clause
                .trim()
                .trim_end_matches([',', ';', '-', ' '])
                .trim_end_matches(|c: char| c == ',' || c.is_whitespace())
                .trim();
            let clause = clause
                .strip_suffix(" and")
                .or_else(|| clause.strip_suffix(" but"))
                .or_else(|| clause.strip_suffix(" so"))
                .unwrap_or(clause)
                .trim();
            let clause = ASIDE.replace(clause, "");
            let clause = clause.trim();
            if clause.is_empty() {
                continue;
            }
            if assistant {
                // What the assistant says of the user ends at its first comma.
                let clause = clause.split(',').next().unwrap_or(clause).trim();
                if let Some(first) = first_person(clause) {
                    out.push(first);
                }
            } else if let Some(c) = HAVE_AND.captures(clause) {
                // "I have a dog and two cats": two facts.
                out.push(format!("{}{}", &c["have"], &c["a"]));
                out.push(format!("{}{}", &c["have"], &c["b"]));
            } else {
                out.push(clause.to_owned());
            }
        }
    }
    out
}

/// Sentences, cut at `.`, `!`, `?`, `;` and line ends; a question keeps its mark (so it is
/// known for one).
fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, ch) in text.char_indices() {
        let end = match ch {
            '?' => Some(i + 1),
            '!' | ';' | '\n' => Some(i),
            // "Dr. Lee", "3.5", "e.g." do not end a sentence.
            '.' => {
                let next_space = bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace());
                let word: String = text[start..i]
                    .rsplit(|c: char| !c.is_alphanumeric())
                    .next()
                    .unwrap_or("")
                    .to_lowercase();
                let abbrev = matches!(
                    word.as_str(),
                    "dr" | "mr" | "mrs" | "ms" | "st" | "prof" | "e" | "g" | "i" | "jr" | "sr"
                );
                (next_space && !abbrev).then_some(i)
            }
            _ => None,
        };
        if let Some(end) = end {
            let s = text[start..end].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + ch.len_utf8();
        }
    }
    let s = text[start..].trim();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// An assistant's clause about the user ("you mentioned you're a nurse") in the user's
/// first person ("I'm a nurse"); none for any other clause.
fn first_person(clause: &str) -> Option<String> {
    let c = YOU_LEAD.captures(clause)?;
    let rest = c.name("rest")?.as_str();
    Some(
        YOU_WORDS
            .replace_all(rest, |c: &regex::Captures<'_>| {
                match c["w"].to_lowercase().as_str() {
                    "you're" | "you are" => "I'm",
                    "you've" | "you have" => "I have",
                    "yourself" => "myself",
                    "your" => "my",
                    _ => "I",
                }
                .to_owned()
            })
            .into_owned(),
    )
}

/// The words of `s`, lower case.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn starts_with_any(s: &str, prefixes: &[&str]) -> bool {
    let s = s.to_lowercase();
    prefixes
        .iter()
        .any(|p| s == *p || s.starts_with(&format!("{p} ")))
}

/// A fact's text: the first letter upper case, trailing fillers and punctuation gone.
fn tidy(text: &str) -> String {
    let t = text.trim().trim_end_matches(['.', '!', ',', ';', ':', ' ']);
    let t = TAIL.replace(t, "");
    let t = t.trim().trim_end_matches(['.', '!', ',', ';', ':', ' ']);
    let mut chars = t.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// "I'm" and "i" as written in a fact.
fn first_person_text(s: &str) -> String {
    let s = s.trim();
    let lower = s.to_lowercase();
    if let Some(rest) = lower
        .strip_prefix("i'm ")
        .or_else(|| lower.strip_prefix("im "))
    {
        return format!("I am {}", &s[s.len() - rest.len()..]);
    }
    if lower.starts_with("i ") {
        return format!("I {}", &s[2..]);
    }
    s.to_owned()
}

/// What one clause states: its type, its text, and whether it is a retraction.
fn read_clause(clause: &str, assistant: bool) -> Option<(Category, String, bool)> {
    let clause = clause.trim();
    if clause.len() < 4 || clause.len() > 400 {
        return None;
    }
    if let Some(r) = retraction(clause) {
        return Some(r);
    }
    if TRANSIENT.is_match(clause) {
        return None;
    }
    if !assistant && let Some(r) = rule(clause) {
        return Some(r);
    }
    preference(clause).or_else(|| fact(clause))
}

fn retraction(clause: &str) -> Option<(Category, String, bool)> {
    // A retraction says what no longer holds and ends at its first comma.
    let clause = clause.split(',').next().unwrap_or(clause).trim();
    let clause = TAIL.replace(clause, "");
    let clause = clause.as_ref();
    if let Some(c) = RETRACT_AM.captures(clause) {
        let x = c.name("x").or_else(|| c.name("y"))?.as_str();
        return Some((Category::Fact, tidy(&format!("I am {x}")), true));
    }
    if let Some(c) = RETRACT_DO.captures(clause) {
        let x = c.name("x").or_else(|| c.name("y"))?.as_str();
        let kind = if starts_with_any(x, &["like", "love", "enjoy", "prefer", "want"]) {
            Category::Preference
        } else {
            Category::Fact
        };
        return Some((kind, tidy(&format!("I {x}")), true));
    }
    if let Some(c) = RETRACT_MY.captures(clause) {
        return Some((
            Category::Fact,
            tidy(&format!("My {} is {}", &c["x"], &c["y"])),
            true,
        ));
    }
    if let Some(c) = FORGET.captures(clause) {
        let x = c.name("x")?.as_str().trim();
        if x.split_whitespace().count() < 2
            || starts_with_any(x, &["it", "that", "this", "about it"])
        {
            return None;
        }
        return Some((Category::Fact, tidy(&first_person_text(x)), true));
    }
    if let Some(c) = STOP.captures(clause) {
        return Some((Category::Rule, tidy(&c["x"]), true));
    }
    None
}

/// An instruction without its leading "please".
fn without_please(clause: &str) -> &str {
    clause
        .strip_prefix("please ")
        .or_else(|| clause.strip_prefix("Please "))
        .unwrap_or(clause)
}

fn rule(clause: &str) -> Option<(Category, String, bool)> {
    if let Some(c) = CALL_ME.captures(clause) {
        return Some((Category::Fact, format!("I go by {}", &c["x"]), false));
    }
    if let Some(c) = RULE.captures(clause) {
        let v = c["v"].to_lowercase();
        if RULE_NOT.contains(&v.as_str()) || c["rest"].trim().is_empty() {
            return None;
        }
        return Some((
            Category::Rule,
            tidy(without_please(
                clause.trim_start_matches(|c: char| !c.is_alphabetic()),
            )),
            false,
        ));
    }
    if let Some(c) = DONT.captures(clause) {
        let v = c["v"].to_lowercase();
        if !DONT_VERBS.contains(&v.as_str()) || c["rest"].trim().is_empty() {
            return None;
        }
        return Some((Category::Rule, tidy(without_please(clause)), false));
    }
    if STYLE.is_match(clause) {
        return Some((Category::Rule, tidy(without_please(clause)), false));
    }
    if let Some(c) = FROM_NOW.captures(clause) {
        let rest = c.name("rest")?.as_str();
        let first = words(rest).into_iter().next()?;
        if IMPERATIVES.contains(&first.as_str()) {
            return Some((Category::Rule, tidy(rest), false));
        }
    }
    None
}

fn preference(clause: &str) -> Option<(Category, String, bool)> {
    if let Some(c) = LIKE.captures(clause) {
        let x = c.name("x")?.as_str().trim();
        if starts_with_any(x, LIKE_NOT) || x.split_whitespace().count() > 14 {
            return None;
        }
        let v = c["v"]
            .to_lowercase()
            .replace("i'm", "am")
            .replacen("'m", "am", 1);
        return Some((Category::Preference, tidy(&format!("I {v} {x}")), false));
    }
    if let Some(c) = FAN.captures(clause) {
        let x = c.name("x")?.as_str().trim();
        if starts_with_any(x, LIKE_NOT) {
            return None;
        }
        return Some((
            Category::Preference,
            tidy(&format!("I am {} {x}", &c["v"])),
            false,
        ));
    }
    if FAVOURITE.is_match(clause) {
        return Some((Category::Preference, tidy(clause), false));
    }
    if let Some(c) = HABIT.captures(clause) {
        let first = words(&c["x"]).into_iter().next()?;
        if RULE_NOT.contains(&first.as_str()) {
            return None;
        }
        return Some((
            Category::Preference,
            tidy(&first_person_text(clause)),
            false,
        ));
    }
    None
}

fn fact(clause: &str) -> Option<(Category, String, bool)> {
    if let Some(c) = MOVED.captures(clause) {
        let place = PLACE_END.replace(c.name("x")?.as_str(), "");
        let place = place.trim().trim_end_matches([',', '.']);
        if place.is_empty() || starts_with_any(place, &["a ", "the", "it"]) && place.len() < 4 {
            return None;
        }
        return Some((Category::Fact, tidy(&format!("I live in {place}")), false));
    }
    if let Some(c) = JOINED.captures(clause) {
        return Some((
            Category::Fact,
            tidy(&format!("I work at {}", &c["x"])),
            false,
        ));
    }
    if let Some(c) = LIVE.captures(clause) {
        let x = c.name("x")?.as_str();
        if starts_with_any(x, &["this", "that", "it", "the moment", "home today"]) {
            return None;
        }
        let text = format!(
            "I {}{}{} {x}",
            &c["v"].to_lowercase(),
            &c["mid"],
            &c["p"].to_lowercase()
        );
        return Some((Category::Fact, tidy(&text), false));
    }
    if let Some(c) = AM.captures(clause) {
        let x = c["x"].to_lowercase();
        let rest = c["rest"].trim();
        let ws = words(rest);
        let known = AM_WORDS.contains(&x.as_str())
            || x.parse::<u32>().is_ok_and(|n| (5..=110).contains(&n));
        let name = CAPITAL_NAME.is_match(&format!(
            "{}{}",
            &c["x"],
            if rest.is_empty() {
                String::new()
            } else {
                format!(" {rest}")
            }
        )) && rest.split_whitespace().count() <= 1;
        if name {
            return Some((
                Category::Fact,
                format!("I go by {}", format!("{} {rest}", &c["x"]).trim()),
                false,
            ));
        }
        if !known
            || (matches!(x.as_str(), "a" | "an")
                && ws.first().is_none_or(|w| AM_NOT.contains(&w.as_str())))
            || (x == "in" && ws.first().is_none_or(|w| !AM_IN.contains(&w.as_str())))
            || (x == "working"
                && ws
                    .first()
                    .is_none_or(|w| !["as", "at", "for", "in"].contains(&w.as_str())))
            || (matches!(x.as_str(), "currently" | "now" | "still")
                && ws.first().is_none_or(|w| {
                    w.ends_with("ing")
                        && !["learning", "studying", "training", "working"].contains(&w.as_str())
                }))
        {
            return None;
        }
        return Some((
            Category::Fact,
            tidy(&format!("I am {} {rest}", &c["x"])),
            false,
        ));
    }
    if let Some(c) = HAVE.captures(clause) {
        let x = c["x"].to_lowercase();
        let ws = words(&c["rest"]);
        let proper = c["x"].starts_with(|ch: char| ch.is_uppercase());
        if !(HAVE_COUNT.contains(&x.as_str()) || proper)
            || (matches!(x.as_str(), "a" | "an" | "one" | "two" | "three")
                && ws.first().is_none_or(|w| HAVE_NOT.contains(&w.as_str())))
            || ws
                .iter()
                .any(|w| HAVE_NOT.contains(&w.as_str()) && ws.len() <= 2)
        {
            return None;
        }
        return Some((
            Category::Fact,
            tidy(&format!("I have {}{}", &c["x"], &c["rest"])),
            false,
        ));
    }
    if let Some(c) = VERB.captures(clause) {
        let x = c.name("x")?.as_str();
        if starts_with_any(x, &["this", "that", "it", "to", "them", "you"]) {
            return None;
        }
        return Some((Category::Fact, tidy(&first_person_text(clause)), false));
    }
    if let Some(c) = MY.captures(clause) {
        let x = words(&c["x"]);
        let y = c["y"].trim();
        let about = x
            .iter()
            .any(|w| MY_WORDS.contains(&w.trim_end_matches("'s")));
        if !about || x.len() > 5 || starts_with_any(y, MY_TRANSIENT) || y.is_empty() {
            return None;
        }
        return Some((Category::Fact, tidy(clause), false));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(role: &str, text: &str) -> Vec<(Category, String, bool)> {
        let assistant = match role {
            "user" => false,
            "assistant" => true,
            _ => return Vec::new(),
        };
        super::read(text, assistant, Timestamp::now())
            .into_iter()
            .map(|f| (f.kind, f.text, f.retract))
            .collect()
    }

    #[test]
    fn each_pattern_of_the_issue() {
        let cases = [
            ("I'm a nurse.", Category::Fact, "I am a nurse", false),
            (
                "My sister's name is Laura",
                Category::Fact,
                "My sister's name is Laura",
                false,
            ),
            (
                "I really like hiking in the Alps",
                Category::Preference,
                "I like hiking in the Alps",
                false,
            ),
            (
                "i hate cilantro",
                Category::Preference,
                "I hate cilantro",
                false,
            ),
            (
                "I moved to Berlin last month.",
                Category::Fact,
                "I live in Berlin",
                false,
            ),
            ("Call me Sam", Category::Fact, "I go by Sam", false),
            (
                "Always answer in French.",
                Category::Rule,
                "Always answer in French",
                false,
            ),
            (
                "Never use emojis please",
                Category::Rule,
                "Never use emojis",
                false,
            ),
            (
                "I don't live in Lisbon anymore",
                Category::Fact,
                "I live in Lisbon",
                true,
            ),
        ];
        for (text, kind, fact, retract) in cases {
            let got = read("user", text);
            assert_eq!(got, vec![(kind, fact.to_owned(), retract)], "{text}");
        }
    }

    #[test]
    fn clauses_with_a_new_subject_are_read_apart() {
        let got = read("user", "I'm Ana, I live in Porto and I work as a nurse");
        let texts: Vec<&str> = got.iter().map(|(_, t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            ["I go by Ana", "I live in Porto", "I work as a nurse"]
        );
    }

    #[test]
    fn look_alikes_are_no_facts() {
        for text in [
            "I am not sure what to cook tonight",
            "I'm going to check",
            "I like that idea",
            "I am wondering if you could help",
            "My question is about taxes",
            "Always a pleasure!",
            "I never thought of that",
            "Can you remind me to call the dentist tomorrow?",
            "I have a question about my invoice",
            "Do I like jazz?",
        ] {
            assert_eq!(read("user", text), Vec::new(), "{text}");
        }
    }

    #[test]
    fn the_assistant_is_read_in_the_users_first_person() {
        let got = read(
            "assistant",
            "Since you mentioned you're allergic to peanuts, I left them out.",
        );
        assert_eq!(
            got,
            vec![(Category::Fact, "I am allergic to peanuts".to_owned(), false)]
        );
        assert_eq!(
            read("assistant", "You're welcome! Let me know."),
            Vec::new()
        );
    }

    #[test]
    fn times_are_resolved_against_the_message() {
        let said = Timestamp::parse("2024-05-14T09:30:00Z").expect("a time");
        let facts = super::read("I moved to Lisbon in 2019.", false, said);
        assert_eq!(
            facts[0].at.map(|t| t.to_string()),
            Some("2019-01-01T00:00:00.000Z".to_owned())
        );
    }
}

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

/// Why a clause gave no fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    /// A question ("is this safe for me?").
    Question,
    /// Something asked of the assistant ("draft a reminder", "can you check").
    Request,
    /// Greetings, thanks, agreement: nothing about anyone ("perfect, thanks").
    ChitChat,
    /// A passing state or a one-off task ("I'm going to check the fridge", "tonight").
    Passing,
    /// A statement this reader finds no lasting fact of the speaker in.
    NoFact,
    /// A statement kept as said would repeat a fact read in the same message.
    Covered,
}

impl Skip {
    /// The reason as the wire writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Question => "question",
            Skip::Request => "request",
            Skip::ChitChat => "chit_chat",
            Skip::Passing => "passing",
            Skip::NoFact => "no_fact",
            Skip::Covered => "duplicate",
        }
    }
}

/// A clause that gave no fact, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The clause.
    pub text: String,
    /// Why.
    pub reason: Skip,
}

/// The facts one message states (module docs), in order: the user's own, or with
/// `assistant` what the assistant says of the user; `said` is when it was said.
pub fn read(text: &str, assistant: bool, said: Timestamp) -> Vec<Fact> {
    read_all(text, assistant, said).0
}

/// [`read`], with each clause that gave no fact and why (an assistant's clauses that are
/// not about the user are not listed: they are not the user's words).
pub fn read_all(text: &str, assistant: bool, said: Timestamp) -> (Vec<Fact>, Vec<Skipped>) {
    // Each clause's fact, and whether it is a statement kept as said, in the order said.
    let mut read = Vec::new();
    let mut skipped = Vec::new();
    for clause in clauses(text, assistant) {
        let fact = |(kind, text, retract)| Fact {
            kind,
            text,
            retract,
            at: date_in(&clause, said),
        };
        match read_clause(&clause, assistant) {
            Ok(r) => read.push((fact(r), None)),
            Err(Read::AsSaid(r)) => read.push((fact(r), Some(clause))),
            Err(Read::Skip(reason)) => skipped.push(Skipped {
                text: clause,
                reason,
            }),
        }
    }
    // A clause kept as said that speaks of what a fact of the same message says ("I
    // switched dentists, my dentist is Dr. Okafor now") would repeat it, or worse, replace
    // it as the later word.
    let by_pattern: Vec<Vec<String>> = read
        .iter()
        .filter(|(_, as_said)| as_said.is_none())
        .map(|(f, _)| muisti_core::text::query_terms(&f.text))
        .collect();
    let mut facts = Vec::new();
    for (f, as_said) in read {
        let Some(clause) = as_said else {
            facts.push(f);
            continue;
        };
        let terms = muisti_core::text::query_terms(&f.text);
        let covered = by_pattern.iter().any(|r| {
            terms
                .iter()
                .any(|t| t.chars().count() >= 4 && r.contains(t))
        });
        if covered {
            skipped.push(Skipped {
                text: clause,
                reason: Skip::Covered,
            });
        } else {
            facts.push(f);
        }
    }
    (facts, skipped)
}

/// How [`read_clause`] reads a clause that is no pattern's fact.
enum Read {
    /// A statement of the speaker's own kept as said ([`personal`]).
    AsSaid((Category, String, bool)),
    /// No fact, and why.
    Skip(Skip),
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
/// Where a clause with the same first-person subject starts without repeating it ("I left
/// Deloitte and started at Spotify"): "and" and a verb of a change in a life.
static CLAUSE_VERB: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\band\s+(?:then\s+|just\s+|also\s+)?(?P<v>started|began|joined|moved|switched|left|quit|adopted|bought|sold|became|married|retired|graduated|got|took|landed|accepted)\b",
    )
});
/// A sentence whose subject is the speaker.
static FIRST_SUBJECT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(?:i|i'm|im|i've|we|we're|we've|(?:my|our) \w+ and i)\b"));
/// Words a clause may start with that say nothing.
static FILLER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:oh|well|so|also|actually|btw|by the way|hey|hi|hello|yeah|yes|yep|no|nope|ok|okay|um|uh|honestly|anyway|and|but|plus|fyi|just so you know|for the record|for context|as you know|heads up|just a heads up|oh and|also,|ah|hmm|right|sure|cool|great|thanks|thank you|lol|haha|fun fact|quick update|update|remember|reminder|as always|note|change of plan|these days|nowadays|currently|just fyi|big news|good news|great news|some news|news|guess what|exciting news|life update)\b[,:!.]?\s*)+",
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
/// A new job: "started a new job as a product manager at Spotify", "took a job at NASA".
static NEW_JOB: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?i:i (?:just |recently |finally |have |'ve )*(?:started|began|took|got|landed|accepted)(?: a| my| the)?(?: new)? (?:job|role|position|gig))(?P<rest>(?: .*)?)$",
    )
});
/// A promotion: "got promoted to senior developer at Shopify".
static PROMOTED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^i (?:just |finally )?(?:got |was |have been |'ve been )?promoted to (?P<x>.+)$")
});
/// Leaving an employer: "I left Deloitte", "I quit my job at Acme".
static LEFT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?i:i (?:just |recently |finally )?(?:left|quit)(?: my (?:job|position|role) (?:at|with))?) (?P<x>[A-Z][\w&.-]*(?: [A-Z][\w&.-]*)*)",
    )
});
static JOINED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?i:i (?:just |recently )?(?:joined|started (?:a new job |working |my new job )?(?:at|with))) (?i:(?:a|an) (?:\w+ )?(?:startup|company|firm|team|charity|school|hospital|bank|agency|studio|lab|nonprofit) (?:called|named) )?(?P<x>[A-Z][\w&.-]*(?: [A-Z][\w&.-]*)*)(?: (?i:as) (?P<as>.+))?",
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
        // Where each clause starts, and whether it leaves its subject "I" implied.
        let mut starts = vec![(0, false)];
        starts.extend(
            cut.captures_iter(sentence)
                .filter_map(|c| c.name("s").map(|m| (m.start(), false))),
        );
        if !assistant && FIRST_SUBJECT.is_match(&FILLER.replace(sentence.trim(), "")) {
            starts.extend(
                CLAUSE_VERB
                    .captures_iter(sentence)
                    .filter_map(|c| c.name("v").map(|m| (m.start(), true))),
            );
        }
        starts.sort_unstable();
        starts.dedup_by_key(|s| s.0);
        starts.push((sentence.len(), false));
        for w in starts.windows(2) {
            let piece = sentence[w[0].0..w[1].0].trim();
            let piece = if w[0].1 {
                format!("I {piece}")
            } else {
                piece.to_owned()
            };
            let clause = FILLER.replace(&piece, "");
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
                // Only words that say nothing ("Thanks!"): read as what they are.
                let said = piece.trim().trim_end_matches(['.', '!', ',', ' ']);
                if !assistant && said.chars().any(char::is_alphanumeric) {
                    out.push(said.to_owned());
                }
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

/// What one clause states: its type, its text, and whether it is a retraction; or why it
/// states no fact.
fn read_clause(clause: &str, assistant: bool) -> Result<(Category, String, bool), Read> {
    let clause = clause.trim();
    if clause.len() > 400 {
        return Err(Read::Skip(Skip::NoFact));
    }
    if clause.len() < 4 || CHIT_CHAT.is_match(clause) {
        return Err(Read::Skip(Skip::ChitChat));
    }
    if let Some(r) = retraction(clause) {
        return Ok(r);
    }
    if clause.ends_with('?') || QUESTION.is_match(clause) {
        return Err(Read::Skip(Skip::Question));
    }
    if TRANSIENT.is_match(clause) {
        return Err(Read::Skip(Skip::Passing));
    }
    if !assistant && let Some(r) = rule(clause) {
        return Ok(r);
    }
    if let Some(r) = preference(clause).or_else(|| fact(clause)) {
        return Ok(r);
    }
    if !assistant && let Some((kind, text, retract)) = personal(clause) {
        return Err(Read::AsSaid((kind, text, retract)));
    }
    let first = words(clause).into_iter().next().unwrap_or_default();
    if REQUESTS.contains(&first.as_str()) || IMPERATIVES.contains(&first.as_str()) {
        return Err(Read::Skip(Skip::Request));
    }
    Err(Read::Skip(Skip::NoFact))
}

/// A clause in which the speaker tells of themselves or their own ("Our daughter Sofia
/// turns seven on March 3rd", "We adopted a rescue greyhound named Comet", "I'm lactose
/// intolerant") that no pattern above reads: kept as said, a fact. Not what is only about
/// the conversation ("I think so", "I was wondering"), a passing feeling ("I'm exhausted"),
/// or a bare clause of a word or two.
fn personal(clause: &str) -> Option<(Category, String, bool)> {
    let ws = words(clause);
    if ws.len() < 3
        || ws.len() > 40
        || !PERSONAL.is_match(clause)
        || ABOUT_TALK.is_match(clause)
        || NOT_LASTING.is_match(clause)
    {
        return None;
    }
    if let Some(c) = FEELING.captures(clause) {
        let rest = words(&c["rest"]);
        if rest.iter().all(|w| FEELINGS.contains(&w.as_str())) {
            return None;
        }
    }
    Some((Category::Fact, tidy(&first_person_text(clause)), false))
}

/// A clause whose subject is the speaker or the speaker's own.
static PERSONAL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:i|i'm|im|i've|ive|i was|we|we're|we've|we were|my|our|me and|(?:my|our) \w+ and i)\b",
    )
});
/// What is about the conversation, a wish or a request, not about the speaker's life.
static ABOUT_TALK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:i'd|i'll|id|ill|we'd|we'll|i've got to|i have to|i've to)\b|^(?:i|we) (?:just |really |also |still )?(?:think|thought|guess|suppose|wonder|wondered|was wondering|am wondering|'m wondering|hope|wish|need|want|wanted|would|'d|'ll|will|can|could|should|might|may|must|mean|meant|agree|disagree|see|saw that|know|knew|understand|believe|feel like|forgot|remember|am not sure|'m not sure|am sure|'m sure|am looking|'m looking|am trying|'m trying|have a question|had a question|got a question|have no idea|appreciate|love that|like that|love this|like this|am asking|'m asking|asked|am curious|'m curious|am kidding|'m kidding|was kidding|am joking|'m joking|mentioned|said|told you|meant to)\b|^my (?:question|point|guess|bad|pleasure|apologies|mistake)\b",
    )
});
/// A clause of the moment, or of someone else's wish: "I'm at the airport", "my gate just
/// changed", "my landlord wants to raise the rent".
static NOT_LASTING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:i'm|im|i am|we're|we are) (?:off|at|on my way|on our way|heading|about|in the middle)\b|\bjust\b|\b(?:needs?|wants?|wanted|asked|asks) (?:to|me|us|you)\b|^(?:i|we) (?:love|like|hate|enjoy|adore) (?:it|that|this|how|when|what|the idea|the way|your)\b|^(?:i|we) never (?:thought|knew|realised|realized|considered)\b|\b(?:it|that|this|them)$",
    )
});
/// "I'm (so) X": a passing feeling when every word of X is one.
static FEELING: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(?:i'm|im|i am|i feel|we're|we are|i was|we were) (?P<rest>.+)$"));
/// Words of a passing state or feeling.
const FEELINGS: &[&str] = &[
    "so",
    "very",
    "really",
    "quite",
    "a",
    "bit",
    "little",
    "super",
    "pretty",
    "totally",
    "just",
    "kind",
    "of",
    "kinda",
    "too",
    "but",
    "and",
    "now",
    "today",
    "tired",
    "exhausted",
    "happy",
    "sad",
    "excited",
    "stressed",
    "bored",
    "busy",
    "fine",
    "good",
    "great",
    "okay",
    "ok",
    "sorry",
    "glad",
    "thrilled",
    "nervous",
    "worried",
    "hungry",
    "sleepy",
    "confused",
    "curious",
    "back",
    "here",
    "ready",
    "done",
    "home",
    "free",
    "late",
    "grateful",
    "thankful",
    "lost",
    "stuck",
    "new",
    "not",
    "sure",
    "well",
    "alright",
    "all",
    "right",
    "annoyed",
    "angry",
    "upset",
    "frustrated",
    "overwhelmed",
    "relieved",
    "proud",
    "scared",
    "afraid",
    "anxious",
    "fun",
    "hectic",
    "chaotic",
    "swamped",
    "knackered",
    "shattered",
    "broke",
    "off",
    "out",
    "in",
    "awake",
    "up",
    "still",
    "honestly",
    "literally",
    "absolutely",
    "completely",
    "exhausting",
];

/// A clause that says nothing about anyone.
static CHIT_CHAT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:hi|hello|hey|thanks|thank you|thx|ok|okay|sure|great|perfect|cool|nice|awesome|sounds good|got it|good|yes|yeah|yep|no|nope|lol|haha|wow|right|exactly|of course|no problem|you're welcome|bye|goodbye|good morning|good night|cheers|fine|will do|makes sense|that's great|that works|that helps|love it|always a pleasure|much appreciated|appreciate it)(?: (?:so much|a lot|again|please|then|there|you|too))*[\s!.,]*)+$",
    )
});
/// A clause that asks.
static QUESTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:what|what's|whats|when|where|who|whom|whose|why|how|which|is|are|am|was|were|do|does|did|can|could|would|will|shall|should|may|might|have|has|had|isn't|aren't|don't|doesn't|didn't|can't|won't|wouldn't|shouldn't)\b.*\b(?:you|i|me|my|we|it|this|that|there|they|he|she)\b",
    )
});
/// Words that open something asked of the assistant.
const REQUESTS: &[&str] = &[
    "remind",
    "draft",
    "set",
    "find",
    "check",
    "book",
    "tell",
    "give",
    "show",
    "help",
    "make",
    "create",
    "suggest",
    "recommend",
    "send",
    "schedule",
    "add",
    "list",
    "explain",
    "summarise",
    "summarize",
    "translate",
    "plan",
    "let",
    "please",
    "search",
    "look",
    "compare",
    "calculate",
    "convert",
    "order",
    "cancel",
    "move",
    "update",
    "delete",
    "hold",
    "reserve",
];

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
        // "I no longer take it": what "it" is was said elsewhere.
        if words(x)
            .last()
            .is_some_and(|w| ["it", "that", "this", "them", "one"].contains(&w.as_str()))
        {
            return None;
        }
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
    if let Some(c) = LEFT.captures(clause) {
        return Some((Category::Fact, format!("I work at {}", &c["x"]), true));
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

/// Where an employer's name starts in `s`: " at|with|for " and a capitalised word.
fn employer_in(s: &str) -> Option<usize> {
    [" at ", " with ", " for "]
        .iter()
        .filter_map(|p| {
            let i = s.find(p)?;
            s[i + p.len()..]
                .starts_with(|c: char| c.is_uppercase())
                .then_some(i)
        })
        .min()
}

/// The capitalised name at the start of `s` (after " at " and the like).
fn employer_name(s: &str) -> String {
    let s = s.trim();
    let s = ["at ", "with ", "for "]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    s.split_whitespace()
        .take_while(|w| w.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `x` with "a" or "an" before it, as English puts it.
fn with_article(x: &str) -> String {
    let lower = x.to_lowercase();
    if ["a ", "an ", "the "].iter().any(|a| lower.starts_with(a)) {
        return x.to_owned();
    }
    let an = lower.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {x}", if an { "an" } else { "a" })
}

fn fact(clause: &str) -> Option<(Category, String, bool)> {
    if let Some(c) = NEW_JOB.captures(clause) {
        let rest = PLACE_END.replace(c["rest"].trim(), "");
        let rest = rest.trim();
        // "as a product manager at Spotify": the role, then where (a name).
        let (role, at) = match rest.strip_prefix("as ") {
            Some(role) => match employer_in(role) {
                Some(i) => (Some(&role[..i]), Some(employer_name(&role[i..]))),
                None => (Some(role), None),
            },
            None => (
                None,
                employer_in(&format!(" {rest}")).map(|_| employer_name(rest)),
            ),
        };
        let text = match (role.map(str::trim).filter(|r| !r.is_empty()), at) {
            (Some(role), Some(at)) => format!("I work as {} at {at}", with_article(role)),
            (Some(role), None) => format!("I work as {}", with_article(role)),
            (None, Some(at)) => format!("I work at {at}"),
            (None, None) => return None,
        };
        return Some((Category::Fact, tidy(&text), false));
    }
    if let Some(c) = PROMOTED.captures(clause) {
        let x = PLACE_END.replace(c.name("x")?.as_str(), "");
        let x = x.trim();
        if x.is_empty() {
            return None;
        }
        return Some((
            Category::Fact,
            tidy(&format!("I am {}", with_article(x))),
            false,
        ));
    }
    if let Some(c) = MOVED.captures(clause) {
        let place = PLACE_END.replace(c.name("x")?.as_str(), "");
        let place = place.trim().trim_end_matches([',', '.']);
        if place.is_empty() || starts_with_any(place, &["a ", "the", "it"]) && place.len() < 4 {
            return None;
        }
        return Some((Category::Fact, tidy(&format!("I live in {place}")), false));
    }
    if let Some(c) = JOINED.captures(clause) {
        let role = c
            .name("as")
            .map(|m| PLACE_END.replace(m.as_str(), "").trim().to_owned());
        let text = match role.filter(|r| !r.is_empty()) {
            Some(role) => format!("I work at {} as {role}", &c["x"]),
            None => format!("I work at {}", &c["x"]),
        };
        return Some((Category::Fact, tidy(&text), false));
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
    fn a_new_job_a_promotion_and_leaving_are_read() {
        let cases: [(&str, &[(&str, bool)]); 4] = [
            (
                "Big news: I left Deloitte and started a new job as a product manager at Spotify last week.",
                &[
                    ("I work at Deloitte", true),
                    ("I work as a product manager at Spotify", false),
                ],
            ),
            (
                "big news, I left Deloitte and joined a startup called Fernweh as head of finance two weeks ago",
                &[
                    ("I work at Deloitte", true),
                    ("I work at Fernweh as head of finance", false),
                ],
            ),
            (
                "I got promoted to senior developer at Shopify this month!",
                &[("I am a senior developer at Shopify", false)],
            ),
            ("I took a job at NASA.", &[("I work at NASA", false)]),
        ];
        for (text, expected) in cases {
            let got: Vec<(String, bool)> = read("user", text)
                .into_iter()
                .map(|(_, t, r)| (t, r))
                .collect();
            let expected: Vec<(String, bool)> =
                expected.iter().map(|(t, r)| (t.to_string(), *r)).collect();
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn a_statement_of_ones_own_life_is_kept_as_said() {
        let got = read(
            "user",
            "My wife Elena is a pediatric nurse. Our daughter Sofia turns seven on March 3rd. \
             We adopted a rescue greyhound named Comet. I'm lactose intolerant, so no cheese for me. \
             We're flying to Lisbon for our anniversary in June.",
        );
        let texts: Vec<&str> = got.iter().map(|(_, t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "My wife Elena is a pediatric nurse",
                "Our daughter Sofia turns seven on March 3rd",
                "We adopted a rescue greyhound named Comet",
                "I am lactose intolerant",
                "We're flying to Lisbon for our anniversary in June",
            ]
        );
        // A statement kept as said that a fact of the same message reads is not kept twice.
        let got = read("user", "I switched dentists, my dentist is Dr. Okafor now.");
        assert_eq!(
            got,
            vec![(Category::Fact, "My dentist is Dr. Okafor".to_owned(), false)]
        );
    }

    #[test]
    fn what_gives_no_fact_is_skipped_with_why() {
        let said = Timestamp::now();
        let (facts, skipped) = super::read_all(
            "Thanks! Is this safe for me? Draft a reminder email. I'm so tired. I'd like a packing list. \
             I'm going to check the fridge.",
            false,
            said,
        );
        assert!(facts.is_empty(), "{facts:?}");
        let why: Vec<(&str, Skip)> = skipped
            .iter()
            .map(|s| (s.text.as_str(), s.reason))
            .collect();
        assert_eq!(
            why,
            [
                ("Thanks", Skip::ChitChat),
                ("Is this safe for me?", Skip::Question),
                ("Draft a reminder email", Skip::Request),
                ("I'm so tired", Skip::NoFact),
                ("I'd like a packing list", Skip::NoFact),
                ("I'm going to check the fridge", Skip::Passing),
            ]
        );
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

//! The statements of a person's own life, beyond "subject verb object": kin and pets named
//! after a possessive ("my sister Nina", "his fiancée Sofia", "my dog Rocky"), job titles,
//! diets, allergies, likes and dislikes, possessions, hometowns and birthdays, and how a
//! typed sentence is read first (contractions, a lower-case "i", lead-ins such as "by the
//! way", clauses joined by "and she", "but I").

use std::sync::LazyLock;

use regex::Regex;

use super::{Mention, Triple, kind};

/// A family or social relation a possessive names, and the predicate it gives with the
/// owner as subject ("my sister Nina": owner `sibling_of` Nina).
pub(super) fn kin_predicate(word: &str) -> Option<&'static str> {
    let word = word.to_lowercase();
    let word = word.as_str();
    Some(match word {
        "wife" | "husband" | "spouse" => "married_to",
        "girlfriend" | "boyfriend" | "partner" | "fiancé" | "fiancée" | "fiance" | "fiancee" => {
            "partner_of"
        }
        "son" | "daughter" | "kid" | "child" | "boy" | "girl" | "stepson" | "stepdaughter"
        | "baby" => "parent_of",
        "mom" | "mum" | "mother" | "dad" | "father" | "mama" | "papa" | "mommy" | "daddy" => {
            "child_of"
        }
        "brother" | "sister" | "sibling" | "twin" => "sibling_of",
        "cousin" | "aunt" | "uncle" | "grandma" | "grandmother" | "grandpa" | "grandfather"
        | "granny" | "nan" | "nana" | "grandson" | "granddaughter" | "niece" | "nephew"
        | "stepmom" | "stepdad" | "stepmother" | "stepfather" | "stepbrother" | "stepsister" => {
            "relative_of"
        }
        w if w.ends_with("-in-law") => "relative_of",
        "friend" | "buddy" | "pal" | "bestie" | "mate" => "friend_of",
        "other half" | "significant other" | "fiancé(e)" => "partner_of",
        "eldest" | "youngest" | "oldest" => "parent_of",
        "manager" | "boss" | "line manager" => "reports_to",
        _ => return None,
    })
}

/// Animals kept as pets, and breeds: "my dog Rocky", "a beagle named Rocky".
const ANIMALS: &[&str] = &[
    "dog",
    "cat",
    "puppy",
    "kitten",
    "hamster",
    "rabbit",
    "bunny",
    "parrot",
    "budgie",
    "bird",
    "horse",
    "pony",
    "fish",
    "goldfish",
    "turtle",
    "tortoise",
    "snake",
    "lizard",
    "gecko",
    "ferret",
    "chicken",
    "hen",
    "goat",
    "guinea pig",
    "beagle",
    "labrador",
    "lab",
    "poodle",
    "greyhound",
    "retriever",
    "terrier",
    "spaniel",
    "collie",
    "husky",
    "corgi",
    "dachshund",
    "pug",
    "bulldog",
    "shepherd",
    "chihuahua",
    "doodle",
    "labradoodle",
    "cockapoo",
    "tabby",
];

/// The singular of an animal word as written ("cats" → "cat"), if it is one.
pub(super) fn animal(word: &str) -> Option<String> {
    let lower = word.to_lowercase();
    let last = lower.split_whitespace().last()?;
    let single = last
        .strip_suffix("ies")
        .map(|s| format!("{s}y"))
        .or_else(|| {
            ANIMALS
                .contains(&last.strip_suffix('s').unwrap_or(last))
                .then(|| last.strip_suffix('s').unwrap_or(last).to_owned())
        })
        .unwrap_or_else(|| last.to_owned());
    ANIMALS.contains(&single.as_str()).then(|| {
        let mut words: Vec<&str> = lower.split_whitespace().collect();
        words.pop();
        words.push(&single);
        words.join(" ")
    })
}

/// Words a job title ends with ("a high school teacher", "a UX designer").
const JOBS: &[&str] = &[
    "nurse",
    "teacher",
    "engineer",
    "developer",
    "programmer",
    "designer",
    "manager",
    "director",
    "pharmacist",
    "dentist",
    "doctor",
    "physician",
    "surgeon",
    "lawyer",
    "attorney",
    "accountant",
    "analyst",
    "scientist",
    "researcher",
    "consultant",
    "chef",
    "cook",
    "baker",
    "producer",
    "librarian",
    "translator",
    "architect",
    "vet",
    "veterinarian",
    "tech",
    "technician",
    "pilot",
    "firefighter",
    "writer",
    "journalist",
    "editor",
    "artist",
    "photographer",
    "musician",
    "professor",
    "lecturer",
    "therapist",
    "psychologist",
    "psychiatrist",
    "electrician",
    "plumber",
    "carpenter",
    "mechanic",
    "driver",
    "barista",
    "cashier",
    "officer",
    "administrator",
    "assistant",
    "coordinator",
    "specialist",
    "executive",
    "founder",
    "cofounder",
    "co-founder",
    "ceo",
    "cto",
    "cfo",
    "coo",
    "vp",
    "president",
    "intern",
    "paramedic",
    "midwife",
    "economist",
    "banker",
    "broker",
    "realtor",
    "tutor",
    "coach",
    "trainer",
    "principal",
    "counselor",
    "counsellor",
    "secretary",
    "receptionist",
    "clerk",
    "salesperson",
    "marketer",
    "recruiter",
    "strategist",
    "physiotherapist",
    "optometrist",
    "hygienist",
    "instructor",
    "lead",
    "owner",
    "freelancer",
    "contractor",
    "entrepreneur",
    "illustrator",
    "animator",
    "actor",
    "actress",
    "dancer",
    "singer",
    "waiter",
    "waitress",
    "bartender",
    "butcher",
    "farmer",
    "gardener",
    "carer",
    "caregiver",
    "surveyor",
    "auditor",
    "actuary",
    "statistician",
    "physio",
    "joiner",
    "gp",
    "headteacher",
    "tester",
    "pediatrician",
    "paediatrician",
    "nanny",
    "housekeeper",
    "cleaner",
    "builder",
    "welder",
    "teller",
    "underwriter",
    "planner",
    "buyer",
    "seller",
    "resident",
    "medic",
    "soldier",
    "sergeant",
    "captain",
    "detective",
    "lifeguard",
    "postman",
    "courier",
];

/// Words that say a title is no longer held ("a retired pilot").
const FORMER: &[&str] = &["retired", "former", "ex", "ex-", "old"];

/// Whether `title` names a job: its last word is one, or it is "head/VP/director of X".
fn is_job(title: &str) -> bool {
    let lower = title.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let (Some(first), Some(last)) = (words.first(), words.last()) else {
        return false;
    };
    if FORMER.contains(first) || first.starts_with("ex-") {
        return false;
    }
    if let Some(i) = words.iter().position(|w| *w == "of") {
        return i > 0 && JOBS.contains(&words[i - 1]) || words[..i].contains(&"head");
    }
    JOBS.contains(last)
        || words.len() <= 4
            && ["ician", "ologist", "ographer", "iatrist", "ist"]
                .iter()
                .any(|e| last.ends_with(e) && last.len() > e.len() + 2)
}

/// Diets, as said: "I'm vegetarian", "I went vegan", "I eat gluten-free".
const DIETS: &[&str] = &[
    "vegetarian",
    "vegan",
    "pescatarian",
    "pescetarian",
    "gluten-free",
    "dairy-free",
    "lactose-free",
    "keto",
    "paleo",
    "halal",
    "kosher",
    "low-carb",
    "plant-based",
    "flexitarian",
];

/// Things a person owns by name of kind ("I drive a car", "I just bought a new e-bike").
const POSSESSIONS: &[&str] = &[
    "car",
    "bike",
    "e-bike",
    "bicycle",
    "motorbike",
    "motorcycle",
    "scooter",
    "van",
    "truck",
    "house",
    "home",
    "flat",
    "apartment",
    "condo",
    "cabin",
    "boat",
    "phone",
    "laptop",
    "computer",
    "tablet",
    "ipad",
    "iphone",
    "camera",
    "piano",
    "guitar",
    "violin",
    "kindle",
    "watch",
    "tv",
    "console",
    "printer",
    "drone",
    "rv",
    "caravan",
    "canoe",
    "kayak",
    "treadmill",
];

/// Expands the contractions and the lower-case "i" of typed text, so one set of readings
/// covers "I'm a nurse", "i am a nurse" and "she's a pharmacist".
pub(super) fn spoken(sentence: &str) -> String {
    static CONTRACTION: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"\b(?P<who>[Ii]|[Hh]e|[Ss]he|[Ww]e|[Tt]hey|[Yy]ou)[’'](?P<what>m|s|re|ve|ll|d)\b",
        )
        .expect("valid pattern")
    });
    static LOWER_I: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(^|[\s,(])i(\s)").expect("valid pattern"));
    static IS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(?P<what>birthday|name)[’']s\b").expect("valid pattern"));
    let s = CONTRACTION.replace_all(sentence, |c: &regex::Captures<'_>| {
        let who = match &c["who"] {
            "i" => "I",
            w => w,
        };
        let verb = match &c["what"] {
            "m" => "am",
            "s" => "is",
            "re" => "are",
            "ve" => "have",
            "ll" => "will",
            _ => "would",
        };
        format!("{who} {verb}")
    });
    let s = LOWER_I.replace_all(&s, "${1}I${2}");
    // "Aanya's really into coding", "Raj's a nurse": "is", not a possessive.
    static NAME_IS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?P<name>\p{Lu}[\w-]*)[’']s\s+(?P<next>really|so|super|very|an?|from|in|at|into|married|allergic|vegan|vegetarian|obsessed|always|never|still|now|also|just|originally|currently|living|working|studying)\b")
            .expect("valid pattern")
    });
    let s = NAME_IS.replace_all(&s, "$name is $next");
    IS.replace_all(&s, "$what is").into_owned()
}

/// Words before a clause's subject that are no part of it ("By the way, I study at UCLA",
/// "Now I work at McKinsey", "Oh, and I report to Wei Zhang").
pub(super) fn without_lead_in(clause: &str) -> &str {
    static LEAD_IN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:(?:and|but|so|oh|now|also|actually|honestly|anyway|anyways|well|btw|fyi|these days|for now|right now|by the way|just so you know|quick update|update|plus|then|ok|okay|yeah|yes|no|and no|hey|hi|hello|ugh|lol|sadly|luckily|fun fact|side note|oh and|as of now|currently|nowadays|finally|since|because|as|although|though|while|given that|now that|long story short|sorry|remember|note|context|for context|for the record|ps|p\.s\.)\b(?:\s*\d+)?[\s,:!-]*)+|^[-*•·]+\s*|^[a-z][\w ]{0,30}:\s+")
            .expect("valid pattern")
    });
    match LEAD_IN.find(clause) {
        // "So I moved", never "Now" alone: what follows must start a clause.
        Some(m) if m.end() < clause.len() => &clause[m.end()..],
        _ => clause,
    }
}

/// The clauses of a sentence: split where a comma or a conjunction is followed by a new
/// subject ("I'm vegetarian and my husband Marco is allergic", "I love sci-fi but I really
/// don't like horror", "I report to Priya Nair, who manages the payments group").
pub(super) fn clauses(sentence: &str) -> Vec<&str> {
    static JOIN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\s*:\s+|\s*,\s*(?:and\s+|but\s+|so\s+|though\s+|plus\s+|where\s+|whereas\s+)?|\s+(?:and|but|so|because|though|although|while|plus|since|where|whereas)\s+")
            .expect("valid pattern")
    });
    static STARTS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:(?:right now|now|then|also|still|currently|these days)\s+)?(?:I|[Hh]e|[Ss]he|[Tt]hey|[Ww]e)\s+[a-z]|(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er)\s+[\w-]+,?\s+\p{Lu}|who\s|(?:now\s+)?(?:raised|born|living|based|grew up|doing an?|doing my)\s|\p{Lu}[\w'-]*(?:\s+\p{Lu}[\w'-]*)?\s+(?:is|works|lives|has|loves|likes|hates|reports|manages|leads|studies|moved|was born|just|also|still)\b)")
            .expect("valid pattern")
    });
    let mut out = Vec::new();
    let mut start = 0;
    for m in JOIN.find_iter(sentence) {
        let next = &sentence[m.end()..];
        // "Samuel Ortiz, who works at Tesla, lives in Fremont": the relative clause of a
        // subject that has no verb yet stays with it.
        let bare = !sentence[start..m.start()]
            .split_whitespace()
            .any(|w| w.starts_with(char::is_lowercase));
        if STARTS.is_match(next) && !(next.starts_with("who ") && bare) {
            out.push(&sentence[start..m.start()]);
            start = m.end();
        }
    }
    out.push(&sentence[start..]);
    out
}

/// A possessive naming kin or a pet, anywhere in a sentence: "my sister Nina", "my
/// husband, David Kim,", "his fiancée Sofia", "Rocky's", "our golden retriever Max".
static KIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?P<owner>[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir|\p{Lu}[\w-]*[’']s|[a-z]+[’']s)\s+(?P<adjectives>(?:(?:[a-z][\w-]*|\d+-year-old)\s+){0,2}?)(?P<rel>other half|[\w-]+)(?:\s*,\s*|\s+|\s*\(\s*)(?:(?:named|called)\s+)?(?P<name>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*){0,2})")
        .expect("valid pattern")
});

/// "a beagle named Rocky", "a greyhound called Bolt": an animal and its name.
static NAMED_ANIMAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?P<det>an?|the)\s+(?:[\w-]+\s+){0,2}?(?P<animal>[a-z]+(?:\s+[a-z]+)?)\s+(?:named|called)\s+(?P<name>\p{Lu}[\w-]*)")
        .expect("valid pattern")
});

/// "two cats, Miso and Tofu": animals and their names.
static NAMED_ANIMALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:two|three|four|\d+)\s+(?P<animals>[a-z]+)\s*,?\s+(?:named\s+|called\s+)?(?P<names>\p{Lu}[\w-]*(?:\s*,\s*\p{Lu}[\w-]*)*\s*,?\s+and\s+\p{Lu}[\w-]*)")
        .expect("valid pattern")
});

/// "David and I have two kids, Lily and Noah", "Claire and I have a little boy, Hugo".
static CHILDREN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:(?P<co>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*)?)\s+and\s+I|I|[Ww]e)\s+(?:have got|have|had|just had|got)\s+(?:an?|two|three|four|\d+)\s+(?:(?:little|baby|young|grown-up)\s+)?(?:kids?|children|sons?|daughters?|boys?|girls?|baby)\s*,?\s+(?:named\s+|called\s+)?(?P<names>\p{Lu}[\w-]*(?:\s*,\s*\p{Lu}[\w-]*)*(?:\s*,?\s+and\s+\p{Lu}[\w-]*)?)")
        .expect("valid pattern")
});

/// A birthday: "my birthday is March 3rd", "her birthday is on November 20th", "Rocky's
/// birthday is May 2nd".
static BIRTHDAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"\b(?P<owner>[Mm]y|[Hh]is|[Hh]er|[Tt]heir|\p{{Lu}}[\w-]*[’']s)\s+birthday\s+(?:is\s+)?(?:on\s+)?(?:the\s+)?(?P<date>{DATE})"
    ))
    .expect("valid pattern")
});

/// A day of the year as written: "March 3rd", "June 12", "2nd of August", "4 July".
const DATE: &str = r"(?:(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?\s+\d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:January|February|March|April|May|June|July|August|September|October|November|December))";

/// Whether the words before a kin word say the relation has ended ("my old manager", "my
/// late father").
fn former(adjectives: &str) -> bool {
    adjectives
        .split_whitespace()
        .any(|w| ["old", "former", "ex", "previous", "late"].contains(&w))
}

/// The person a possessive names: "my"/"our" the user, "his"/"her"/"their" the last person,
/// "Rocky's" Rocky; "the neighbour's" nobody that is named.
fn owner(word: &str, user: Option<&str>, last_person: Option<&str>) -> Option<Mention> {
    let person = Mention::person;
    match word {
        "my" | "My" | "our" | "Our" => user.map(person),
        "his" | "His" | "her" | "Her" | "their" | "Their" => last_person.map(person),
        w if w.starts_with(char::is_uppercase) => {
            let name = w.trim_end_matches("'s").trim_end_matches("’s");
            (!super::NOT_NAMES.contains(&name)).then(|| person(name))
        }
        _ => None,
    }
}

/// What a sentence says of kin, pets and birthdays through possessives and names
/// ("my sister Nina", "a beagle named Rocky", "two cats, Miso and Tofu", "David and I have
/// two kids, Lily and Noah", "my birthday is March 3rd"), and the people it names in order
/// (the last is who a later "she" is).
pub(super) fn possessives(
    sentence: &str,
    user: Option<&str>,
    last_person: &mut Option<String>,
    kin: &mut Vec<(String, String)>,
) -> Vec<Triple> {
    let mut out = Vec::new();
    let has_pet =
        |owner: &Mention, pet: Mention, literal| Triple::new(owner, "has_pet", pet, literal);
    for c in KIN.captures_iter(sentence) {
        let (Some(o), Some(rel), Some(name)) = (c.name("owner"), c.name("rel"), c.name("name"))
        else {
            continue;
        };
        let name = name.as_str();
        if super::opens_no_name(name) {
            continue;
        }
        let owner = owner(o.as_str(), user, last_person.as_deref());
        let former = former(c.name("adjectives").map_or("", |a| a.as_str()));
        if let Some(predicate) = kin_predicate(rel.as_str()) {
            let Some(owner) = owner else { continue };
            // "my old manager" is no longer one; "my late father" no longer alive.
            if former && predicate != "friend_of" {
                continue;
            }
            let person = Mention::of(name, kind::PERSON);
            if o.as_str().eq_ignore_ascii_case("my") {
                kin.push((rel.as_str().to_lowercase(), name.to_owned()));
            }
            out.push(Triple::new(&owner, predicate, person, false));
            *last_person = Some(name.to_owned());
        } else if let Some(animal) = animal(&whole_animal(&c, rel.as_str())) {
            let pet = Mention::of(name, "pet");
            if let Some(owner) = owner {
                out.push(has_pet(&owner, pet.clone(), false));
            }
            out.push(Triple::new(&pet, "is_a", Mention::value(&animal), true));
        }
    }
    // "My aunt Helen and uncle Bill": the same owner's next kin.
    static AND_KIN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^\s*,?\s+and\s+(?:(?:[Mm]y|[Oo]ur)\s+)?(?P<rel>[a-z][\w-]*)\s+(?P<name>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*)?)")
            .expect("valid pattern")
    });
    for c in KIN.captures_iter(sentence) {
        let (Some(all), Some(o)) = (c.get(0), c.name("owner")) else {
            continue;
        };
        let Some(next) = AND_KIN.captures(&sentence[all.end()..]) else {
            continue;
        };
        let (Some(rel), Some(name)) = (next.name("rel"), next.name("name")) else {
            continue;
        };
        if let (Some(predicate), Some(owner)) = (
            kin_predicate(rel.as_str()),
            owner(o.as_str(), user, last_person.as_deref()),
        ) {
            out.push(Triple::new(
                &owner,
                predicate,
                Mention::of(name.as_str(), kind::PERSON),
                false,
            ));
            *last_person = Some(name.as_str().to_owned());
        }
    }
    // "My new boss is Hiroshi Tanaka", "my kid's name is Jaylen".
    static KIN_IS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?P<owner>[Mm]y|[Oo]ur)\s+(?P<adjectives>(?:[a-z][\w-]*\s+){0,2}?)(?P<rel>other half|[\w-]+?)(?:[’']s\s+name)?\s+is\s+(?:called\s+)?(?P<name>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*){0,2})")
            .expect("valid pattern")
    });
    for c in KIN_IS.captures_iter(sentence) {
        let (Some(rel), Some(name), Some(u)) = (c.name("rel"), c.name("name"), user) else {
            continue;
        };
        let former = former(c.name("adjectives").map_or("", |a| a.as_str()));
        if let Some(predicate) = kin_predicate(rel.as_str()).filter(|_| !former) {
            out.push(Triple::new(
                &Mention::of(u, kind::PERSON),
                predicate,
                Mention::of(name.as_str(), kind::PERSON),
                false,
            ));
            *last_person = Some(name.as_str().to_owned());
        }
    }
    // "Allergies (for the record): amoxicillin, latex, and cats".
    static ALLERGIES: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[Mm]y\s+)?(?:[Aa]llergies|[Aa]llergic to)\b[^:]{0,30}:\s*(?P<list>.+)$")
            .expect("valid pattern")
    });
    if let (Some(c), Some(u)) = (ALLERGIES.captures(sentence), user) {
        for v in values(c.name("list").map_or("", |m| m.as_str())) {
            out.push(Triple::new(
                &Mention::of(u, kind::PERSON),
                "allergic_to",
                Mention::value(&v),
                true,
            ));
        }
    }
    // "My parents, Donna and Ray", "Kwame and I have been together since uni".
    static PARENTS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b[Mm]y\s+parents\s*,?\s+(?P<a>\p{Lu}[\w-]*)\s+and\s+(?P<b>\p{Lu}[\w-]*)")
            .expect("valid pattern")
    });
    static TOGETHER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?P<name>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*)?)\s+and\s+I\s+(?:have\s+|had\s+)?(?:been\s+together|been\s+dating|are\s+together|are\s+engaged|got\s+engaged)")
            .expect("valid pattern")
    });
    if let Some(u) = user {
        let me = Mention::of(u, kind::PERSON);
        for c in PARENTS.captures_iter(sentence) {
            for n in [c.name("a"), c.name("b")].into_iter().flatten() {
                out.push(Triple::new(
                    &me,
                    "child_of",
                    Mention::of(n.as_str(), kind::PERSON),
                    false,
                ));
            }
        }
        for c in TOGETHER.captures_iter(sentence) {
            if let Some(n) = c
                .name("name")
                .filter(|n| !super::NOT_NAMES.contains(&n.as_str()))
            {
                out.push(Triple::new(
                    &me,
                    "partner_of",
                    Mention::of(n.as_str(), kind::PERSON),
                    false,
                ));
                *last_person = Some(n.as_str().to_owned());
            }
        }
    }
    // "I'm dating someone new, her name is Anika": who "she" is now.
    static NAME_IS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:[Hh]er|[Hh]is|[Tt]heir)\s+name\s+is\s+(?P<name>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*)?)")
            .expect("valid pattern")
    });
    if let Some(name) = NAME_IS.captures(sentence).and_then(|c| c.name("name")) {
        *last_person = Some(name.as_str().to_owned());
    }
    let keepers = keepers(sentence, user);
    for c in NAMED_ANIMAL.captures_iter(sentence) {
        let (Some(det), Some(words), Some(name)) =
            (c.name("det"), c.name("animal"), c.name("name"))
        else {
            continue;
        };
        let Some(animal) = animal(words.as_str()).or_else(|| {
            let last = words.as_str().split_whitespace().last()?;
            animal(last)
        }) else {
            continue;
        };
        let pet = Mention::of(name.as_str(), "pet");
        if out
            .iter()
            .any(|t| t.subject.name == pet.name && t.predicate == "is_a")
        {
            continue;
        }
        if det.as_str() != "the" {
            for k in &keepers {
                out.push(has_pet(k, pet.clone(), false));
            }
        }
        out.push(Triple::new(&pet, "is_a", Mention::value(&animal), true));
    }
    for c in NAMED_ANIMALS.captures_iter(sentence) {
        let (Some(words), Some(names)) = (c.name("animals"), c.name("names")) else {
            continue;
        };
        let Some(animal) = animal(words.as_str()) else {
            continue;
        };
        for name in names_in(names.as_str()) {
            let pet = Mention::of(name, "pet");
            for k in &keepers {
                out.push(has_pet(k, pet.clone(), false));
            }
            out.push(Triple::new(&pet, "is_a", Mention::value(&animal), true));
        }
    }
    for c in CHILDREN.captures_iter(sentence) {
        let Some(names) = c.name("names") else {
            continue;
        };
        let parents: Vec<Mention> = user
            .map(|u| Mention::of(u, kind::PERSON))
            .into_iter()
            .chain(
                c.name("co")
                    .map(|co| Mention::of(co.as_str(), kind::PERSON)),
            )
            .collect();
        for name in names_in(names.as_str()) {
            for parent in &parents {
                out.push(Triple::new(
                    parent,
                    "parent_of",
                    Mention::of(name, kind::PERSON),
                    false,
                ));
            }
            *last_person = Some(name.to_owned());
        }
    }
    // "my cat", "our dog" with no name after it: a pet of the user's.
    static MY_PET: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:[Mm]y|[Oo]ur)\s+(?P<animal>[a-z]+)\b(?:\s*,?\s+(?P<next>\p{Lu}))?")
            .expect("valid pattern")
    });
    if let Some(user) = user {
        for c in MY_PET.captures_iter(sentence) {
            let Some(a) = c.name("animal").filter(|_| c.name("next").is_none()) else {
                continue;
            };
            if a.as_str().ends_with('s') || animal(a.as_str()).is_none() {
                continue;
            }
            let pet = Mention::value(a.as_str());
            if !out.iter().any(|t| t.predicate == "has_pet") {
                out.push(has_pet(&Mention::of(user, kind::PERSON), pet, true));
            }
        }
    }
    for c in BIRTHDAY.captures_iter(sentence) {
        let (Some(o), Some(date)) = (c.name("owner"), c.name("date")) else {
            continue;
        };
        if let Some(owner) = owner(o.as_str(), user, last_person.as_deref()) {
            out.push(Triple::new(
                &owner,
                "birthday",
                Mention::value(date.as_str()),
                true,
            ));
        }
    }
    out
}

/// "golden retriever Max": the breed's first word is read as a modifier by [`KIN`], but is
/// part of the animal.
fn whole_animal(c: &regex::Captures<'_>, rel: &str) -> String {
    let before = c.name("adjectives").map_or("", |m| m.as_str());
    match before.split_whitespace().last() {
        Some(w)
            if [
                "golden",
                "german",
                "border",
                "cocker",
                "french",
                "english",
                "british",
                "bernese",
                "siberian",
                "australian",
                "miniature",
                "toy",
            ]
            .contains(&w.to_lowercase().as_str()) =>
        {
            format!("{} {rel}", w.to_lowercase())
        }
        _ => rel.to_owned(),
    }
}

/// The names of a list: "Miso and Tofu", "Lily, Noah and Ava".
fn names_in(list: &str) -> Vec<&str> {
    list.split([','])
        .flat_map(|part| part.split(" and "))
        .map(str::trim)
        .filter(|n| n.starts_with(char::is_uppercase) && !super::NOT_NAMES.contains(n))
        .collect()
}

/// Who keeps the animals a sentence names, if it says so: "I have", "we adopted", "Luis and
/// I just adopted" (the user and Luis).
fn keepers(sentence: &str, user: Option<&str>) -> Vec<Mention> {
    static KEEPS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:(?P<co>\p{Lu}[\w-]*)\s+and\s+)?(?:I|[Ww]e)\s+(?:(?:just|finally|also|recently|now)\s+)*(?:have|has|got|adopted|own|rescued|have got|bought)\b")
            .expect("valid pattern")
    });
    let Some(c) = KEEPS.captures(sentence) else {
        return Vec::new();
    };
    user.map(|u| Mention::of(u, kind::PERSON))
        .into_iter()
        .chain(
            c.name("co")
                .filter(|co| !super::NOT_NAMES.contains(&co.as_str()))
                .map(|co| Mention::of(co.as_str(), kind::PERSON)),
        )
        .collect()
}

/// A clause that starts with a possessive naming someone: "My sister Nina lives in Rome",
/// "My husband, David Kim, is a dentist", "My roommate Chen Wei studies at Harvard"; typed
/// in lower case, the name is the words before the verb ("my sister julia reyes lives in
/// boston"). Returns who and the rest of the clause.
pub(super) fn kin_subject(clause: &str, lower: bool) -> Option<(Mention, &str)> {
    static LEAD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er)\s+(?:(?i:older|younger|little|big|baby|best|twin|eldest|oldest|youngest|dear|new|\d+-year-old|golden)\s+)*(?P<rel>[\w-]+)(?:\s*,\s*|\s+)(?P<name>\p{Lu}[\w-]*(?:\s+\p{Lu}[\w-]*)?)\s*,?\s+(?P<rest>[a-z].*)$")
            .expect("valid pattern")
    });
    static LOWER_LEAD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:my|our)\s+(?:(?:older|younger|little|big|baby|best|twin)\s+)*(?P<rel>[\w-]+)\s+(?P<name>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?P<rest>(?:lives|works|is|has|loves|likes|studies|moved|just|reports|manages|leads)\b.*)$")
            .expect("valid pattern")
    });
    let c = LEAD
        .captures(clause)
        .or_else(|| lower.then(|| LOWER_LEAD.captures(clause)).flatten())?;
    let rel = c.name("rel")?.as_str();
    let name = c.name("name")?.as_str();
    let kind = if animal(rel).is_some() {
        "pet"
    } else if rel.starts_with(char::is_lowercase) || rel.chars().all(char::is_uppercase) {
        // "my roommate Chen Wei", "our new VP, Leonard Hayes".
        kind::PERSON
    } else {
        return None;
    };
    Some((Mention::of(name, kind), c.name("rest")?.as_str()))
}

/// Whether a clause or predicate says what may be, not what is: "if I get the offer", "I'd
/// move to Seattle", "she wants to work at Google", "we might move to Spain".
pub(super) fn hypothetical(text: &str) -> bool {
    static MAY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:if|unless|maybe|perhaps|hopefully|when|whether)\b|^(?:would|might|could|may|should|will|wants? to|want to|wanted to|hopes? to|hoping to|plans? to|planning to|going to|gonna|is thinking|am thinking|are thinking|thinking about|considering|wish|wishes|dreams? of|used to|never|no longer|is no longer|am no longer|was|were|had)\s")
            .expect("valid pattern")
    });
    MAY.is_match(text) && !text.starts_with("was born") && !text.starts_with("were born")
}

/// Adverbs at the start of a predicate, or after its auxiliary, that change nothing of
/// what it says ("now lives", "really likes", "also really enjoy", "does live", "is now
/// married to").
pub(super) fn without_adverbs(phrase: &str) -> String {
    static ADVERBS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:just|also|really|still|finally|actually|honestly|basically|mostly|currently|now|recently|already|totally|absolutely|even|truly|genuinely|both|all|does|do|did|so|super|definitely|literally|seriously|officially|happily|proudly|too|very|usually)\s+)+")
            .expect("valid pattern")
    });
    static AUXILIARY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?P<aux>is|am|are|has|have)\s+(?:(?:just|also|really|still|finally|actually|now|recently|already|currently|happily|officially|newly|both|all|remotely)\s+)+")
            .expect("valid pattern")
    });
    let phrase = match ADVERBS.find(phrase) {
        Some(m) => &phrase[m.end()..],
        None => phrase,
    };
    // "I work remotely for Kontor", "she works part-time at Tesco".
    static MANNER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?P<verb>work|works|working)\s+(?:remotely|full[- ]time|part[- ]time|freelance|mostly|now)\s+")
            .expect("valid pattern")
    });
    let plain;
    let phrase = match MANNER.captures(phrase) {
        Some(c) => {
            plain = format!(
                "{} {}",
                c.name("verb").map_or("", |m| m.as_str()),
                &phrase[c.get(0).map_or(0, |m| m.end())..]
            );
            plain.as_str()
        }
        None => phrase,
    };
    match AUXILIARY.captures(phrase) {
        Some(c) => format!(
            "{} {}",
            c.name("aux").map_or("", |m| m.as_str()),
            &phrase[c.get(0).map_or(0, |m| m.end())..]
        ),
        None => phrase.to_owned(),
    }
}

/// The values of a list after a verb ("hiking and dark chocolate", "peanuts and tree nuts,
/// which makes eating out stressful"): up to where the clause goes on, split at "and", "or"
/// and commas, each without its article.
pub(super) fn values(text: &str) -> Vec<String> {
    static END: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)[.;:!?()]|\s+-\s+|,\s*(?:which|so|but|because|in case|though|although|as|since|when|if|it|I|he|she|they|we|that|lol|haha|especially|even)\b|\s+(?:but|so|because|which|that|when|since|though|although|while|if|in case|for|on|at|with|lol|haha|tbh|tbf|imo|honestly|btw|here|there|lately|these days|now|anymore|a lot|so much|too|either|as well|right now|very much|more than|than|every|each|all the time|in the|at the|from|to be|like)\b")
            .expect("valid pattern")
    });
    let text = match END.find(text) {
        Some(m) => &text[..m.start()],
        None => text,
    };
    // "broccoli, typical 6 year old": a comma lists only where "and" or "or" ends the list.
    let listed = text.rsplit(',').next().is_some_and(|last| {
        last.contains(" and ")
            || last.contains(" or ")
            || last.trim_start().starts_with("and ")
            || last.trim_start().starts_with("or ")
    });
    let text = if listed {
        text
    } else {
        text.split(',').next().unwrap_or(text)
    };
    text.split(',')
        .map(|p| {
            p.trim_start()
                .strip_prefix("and ")
                .or_else(|| p.trim_start().strip_prefix("or "))
                .unwrap_or(p)
        })
        .flat_map(|p| p.split(" and "))
        .flat_map(|p| p.split(" or "))
        .flat_map(|p| p.split(" & "))
        .map(|p| without_article(p.trim()))
        .filter(|p| {
            let words = p.split_whitespace().count();
            (1..=4).contains(&words)
                && !p.starts_with(|c: char| !c.is_alphanumeric())
                && ![
                    "to", "it", "that", "this", "when", "how", "being", "him", "her", "them",
                    "you", "me", "us", "what", "going", "get", "the", "a", "an", "my",
                ]
                .contains(
                    &p.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_lowercase()
                        .as_str(),
                )
        })
        .map(str::to_owned)
        .collect()
}

/// A noun phrase without its leading determiner or possessive ("a new e-bike" → "e-bike").
pub(super) fn without_article(text: &str) -> &str {
    static ARTICLE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:(?:a|an|the|my|our|his|her|their|some|two|three|new|brand-new|brand new|first|own)\s+)+")
            .expect("valid pattern")
    });
    match ARTICLE.find(text) {
        Some(m) if m.end() < text.len() => &text[m.end()..],
        _ => text,
    }
}

/// The readings of a predicate phrase about `subject` that say what a person is, eats,
/// likes, owns or comes from; `None` when none applies (the workplace patterns are tried
/// next).
pub(super) fn reading(subject: &Mention, phrase: &str) -> Option<Vec<Triple>> {
    static DIET: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:am|is|are|went|have gone|has gone|have been|has been|eat|eats|go|stay|keep|follow|follows|am now|is now)\s+(?:(?:a|strictly|fully|mostly|now|totally|completely|100%)\s+)*(?P<diet>[\w-]+)\b(?:\s+diet)?")
            .expect("valid pattern")
    });
    static ON_DIET: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:am|is|are|have been|has been)\s+on\s+an?\s+(?P<diet>[\w-]+)\s+diet")
            .expect("valid pattern")
    });
    static ALLERGY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:am\s+|is\s+|are\s+)?(?:(?:very|severely|also|really|super|mildly|deathly)\s+)*allergic\s+to\s+(?P<what>.+)$")
            .expect("valid pattern")
    });
    static DISLIKE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:hate|hates|dislike|dislikes|detest|detests|loathe|loathes|can't stand|cannot stand|can not stand|can’t stand|don't like|do not like|doesn't like|does not like|don't really like|doesn't really like|don’t like|won't touch|won't eat|can't deal with|am not a fan of|is not a fan of|not a fan of|am not into|is not into|am not big on|can't bear|despise|despises)\s+(?P<what>.+)$")
            .expect("valid pattern")
    });
    static LIKE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:(?:am|is|are)\s+(?:(?:super|really|very|totally|so|a bit|kind of|pretty|quite)\s+)*(?:obsessed with|into|addicted to|crazy about|passionate about|mad about|hooked on|(?:a\s+)?(?:big\s+|huge\s+)?fan of)|likes|loves|enjoys|like|love|enjoy|adore|adores)\s+(?P<what>.+)$")
            .expect("valid pattern")
    });
    static FROM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:am|is|are)\s+(?:originally\s+)?from|grew\s+up\s+in|(?:was\s+)?raised\s+in|(?P<born>(?:was\s+)?born\s+and\s+raised\s+in)|(?:am|is)\s+a\s+native\s+of)\s+(?P<place>\p{Lu}[\w'-]*(?:\s+\p{Lu}[\w'-]*)*)")
            .expect("valid pattern")
    });
    static HOME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:have|has)\s+(?:been\s+)?(?:lived|living)\s+in\s+(?:(?:this|a|an|my|our|the)\s+(?:[\w-]+\s+){1,2}?in\s+)?|(?:moved|relocated)\s+(?:here\s+)?from\s+\p{Lu}[\w'-]*(?:\s+\p{Lu}[\w'-]*)*\s+to\s+|(?:am|is|are)\s+(?:(?:now|currently|still|happily|also)\s+)*(?P<based>based|living|settled|headquartered)\s+in\s+|(?:have|has)\s+been\s+in\s+(?P<since>)|(?:am|is|are)\s+in\s+(?P<now>))(?P<place>\p{Lu}[\w'-]*(?:\s+\p{Lu}[\w'-]*)*)(?P<after>\s+now|\s*,|\s*$|\s+these days|\s+for\s+(?:\w+\s+)?(?:years|months|a while|ages|\d+))?")
            .expect("valid pattern")
    });
    static OWNS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:drive|drives|own|owns|bought|purchased|got|have|has|have got|ride|rides|picked up|splurged on|treated myself to)\s+(?:(?:a|an|the|two|myself|me|us)\s+)?(?P<thing>.+)$")
            .expect("valid pattern")
    });
    static STUDY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:am|is|are)\s+)?(?:studying|doing|taking|pursuing|study|studies|majoring)\b[^,]{0,60}?\bat\s+(?P<org>(?:the\s+)?\p{Lu}[\w&'.-]*(?:\s+(?:of\s+)?\p{Lu}[\w&'.-]*)*)|^(?:am|is|are)\s+(?:an?\s+(?:[\w-]+\s+)?student|in\s+(?:my\s+|his\s+|her\s+)?(?:\w+\s+)?year(?:\s+\d+)?|in\s+(?:college|school|uni|university|grad school)|a\s+(?:\w+\s+)?(?:student|undergrad|freshman|sophomore|junior|senior))\s+at\s+(?P<org2>(?:the\s+)?\p{Lu}[\w&'.-]*(?:\s+(?:of\s+)?\p{Lu}[\w&'.-]*)*)")
            .expect("valid pattern")
    });
    static WORKS_ON: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:am|is|are)\s+)?(?:(?:mostly|currently|now)\s+)?(?:working\s+on|leading|building)\s+(?P<what>.+)$|^(?:am|is|are)\s+(?:also\s+)?on\s+(?P<project>Project\s+\p{Lu}[\w-]*)")
            .expect("valid pattern")
    });
    static BIRTH: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"^(?:turns|turned|is turning|turning|will turn|will be)\s+\d+\s+on\s+(?:the\s+)?(?P<date>{DATE})|^(?:was\s+)?born\s+on\s+(?:the\s+)?(?P<born>{DATE})"
        ))
        .expect("valid pattern")
    });
    static STARTED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:started|start|am starting|is starting|began|got a (?:new\s+)?job|landed a (?:new\s+)?job|took a (?:new\s+)?job|started a new job|have been|has been)\s+(?:working\s+)?|(?:teach|teaches|volunteer|volunteers)\s+(?:[\w-]+\s+){0,3}?|(?:am|is|are)\s+(?:currently\s+)?(?P<at>))(?:at|with)\s+(?P<org>(?:the\s+)?\p{Lu}[\w&'.-]*(?:\s+\p{Lu}[\w&'.-]*)*)")
            .expect("valid pattern")
    });
    let phrase = phrase.trim().trim_end_matches(',');
    let org = |name: &str| Mention::of(name.trim_start_matches("the "), kind::ORGANIZATION);
    if let Some(c) = BIRTH.captures(phrase) {
        let date = c.name("date").or_else(|| c.name("born"))?;
        return Some(vec![Triple::new(
            subject,
            "birthday",
            Mention::value(date.as_str()),
            true,
        )]);
    }
    if subject.kind != kind::PERSON {
        return None;
    }
    if let Some(c) = ALLERGY.captures(phrase) {
        let all = values(c.name("what")?.as_str());
        return (!all.is_empty()).then(|| {
            all.into_iter()
                .map(|v| Triple::new(subject, "allergic_to", Mention::value(&v), true))
                .collect()
        });
    }
    let first = phrase
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    if DIETS.contains(&first.as_str()) {
        // "pescatarian, not vegetarian": a note of the speaker's diet.
        return Some(vec![Triple::new(
            subject,
            "diet",
            Mention::value(&first),
            true,
        )]);
    }
    if let Some(c) = ON_DIET.captures(phrase).or_else(|| DIET.captures(phrase))
        && let Some(d) = c.name("diet")
        && DIETS.contains(&d.as_str().to_lowercase().as_str())
    {
        return Some(vec![Triple::new(
            subject,
            "diet",
            Mention::value(d.as_str()),
            true,
        )]);
    }
    if let Some(c) = DISLIKE.captures(phrase) {
        let all = values(c.name("what")?.as_str());
        return Some(
            all.into_iter()
                .map(|v| Triple::new(subject, "dislikes", Mention::value(&v), true))
                .collect(),
        );
    }
    if let Some(c) = FROM.captures(phrase) {
        let place = c.name("place")?.as_str();
        let mut out = vec![Triple::new(
            subject,
            "from",
            Mention::of(place, kind::PLACE),
            false,
        )];
        if c.name("born").is_some() {
            out.push(Triple::new(
                subject,
                "born_in",
                Mention::of(place, kind::PLACE),
                false,
            ));
        }
        return Some(out);
    }
    if let Some(c) = HOME.captures(phrase)
        && (c.name("now").is_none() && c.name("since").is_none() || c.name("after").is_some())
    {
        let place = c.name("place")?.as_str();
        // "I'm in IT": a department, not a place.
        const NO_PLACE: &[&str] = &[
            "IT",
            "HR",
            "PR",
            "QA",
            "R&D",
            "Finance",
            "Sales",
            "Marketing",
            "Engineering",
            "Legal",
            "Ops",
            "Operations",
            "Support",
            "Design",
            "Product",
        ];
        if c.name("now").is_some() && NO_PLACE.contains(&place) {
            return None;
        }
        // "Acme Corporation is based in Cleveland": where an organisation is.
        let predicate = match c.name("based").map(|b| b.as_str()) {
            Some("headquartered") => "located_in",
            Some("based") if is_organisation(&subject.name) => "located_in",
            _ => "lives_in",
        };
        return Some(vec![Triple::new(
            subject,
            predicate,
            Mention::of(place, kind::PLACE),
            false,
        )]);
    }
    if let Some(c) = STUDY.captures(phrase) {
        let school = c.name("org").or_else(|| c.name("org2"))?.as_str();
        // "doing her residency at Rigshospitalet" is work.
        let work = ["residency", "internship", "placement", "shift", "rotation"]
            .iter()
            .any(|w| phrase.contains(w));
        let predicate = if work { "works_at" } else { "studies_at" };
        return Some(vec![Triple::new(subject, predicate, org(school), false)]);
    }
    if let Some(out) = titled(subject, phrase) {
        return Some(out);
    }
    if let Some(c) = STARTED.captures(phrase)
        && let Some(o) = c.name("org")
        && !super::NOT_NAMES.contains(&o.as_str())
    {
        let title = title_after(subject, &phrase[o.end()..]);
        // "I'm at Monzo as a backend engineer"; "I'm at Starbucks" says no job.
        if c.name("at").is_some() && title.is_none() {
            return None;
        }
        let mut out = vec![Triple::new(subject, "works_at", org(o.as_str()), false)];
        out.extend(title);
        return Some(out);
    }
    if let Some(c) = WORKS_ON.captures(phrase) {
        if let Some(what) = c.name("what")
            && let Some((thing, false, _)) =
                super::object_of(what.as_str(), super::ObjectKind::Entity(kind::PRODUCT))
        {
            let team = thing.kind == kind::ORGANIZATION;
            return (!team).then(|| vec![Triple::new(subject, "works_on", thing, false)]);
        }
        if let Some(p) = c.name("project") {
            return Some(vec![Triple::new(
                subject,
                "works_on",
                Mention::of(p.as_str(), kind::PRODUCT),
                false,
            )]);
        }
        let what = c.name("what")?.as_str();
        if let Some(m) = super::NAME.captures(what).and_then(|c| c.name("name")) {
            let name = m.as_str();
            if !super::NOT_NAMES.contains(&name) && !name.to_lowercase().ends_with("team") {
                return Some(vec![Triple::new(
                    subject,
                    "works_on",
                    Mention::of(name, kind::PRODUCT),
                    false,
                )]);
            }
            return None;
        }
        if what.starts_with("the ") || what.starts_with("a ") || what.starts_with("our ") {
            let v = values(what);
            return v
                .first()
                .filter(|v| !v.ends_with("team"))
                .map(|v| vec![Triple::new(subject, "works_on", Mention::value(v), true)]);
        }
        return None;
    }
    if let Some(c) = LIKE.captures(phrase) {
        let what = c.name("what")?.as_str();
        let all = values(what);
        return Some(
            all.into_iter()
                .map(|v| {
                    let entity = v.starts_with(char::is_uppercase);
                    Triple::new(subject, "likes", Mention::value(&v), !entity)
                })
                .collect(),
        );
    }
    if let Some(c) = OWNS.captures(phrase) {
        return owned(subject, c.name("thing")?.as_str(), phrase);
    }
    None
}

/// "... as a producer" after an employer: the job title said with it.
pub(super) fn title_after(subject: &Mention, rest: &str) -> Option<Triple> {
    static AS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\bas\s+(?:an?|their|the|our|his|her)\s+").expect("valid pattern")
    });
    let m = AS.find(rest)?;
    let (title, _) = title_words(&rest[m.end()..]);
    is_job(&title).then(|| Triple::new(subject, "job_title", Mention::value(&title), true))
}

/// The words of a job title at the start of `text`, up to where the sentence goes on ("at",
/// "for", a comma): the title and the bytes it took. "of" stays after "head", "VP",
/// "director" ("head of customer support").
fn title_words(text: &str) -> (String, usize) {
    const ENDS: &[&str] = &[
        "at", "for", "with", "in", "and", "but", "who", "since", "so", "from", "on", "to", "there",
        "here", "now", "by", "because", "which", "that", "when", "like", "too",
    ];
    let mut words = Vec::new();
    let mut used = 0;
    for w in text.split_inclusive(char::is_whitespace) {
        let word = w.trim();
        let bare = word.trim_end_matches([',', '.', '!', '?', ';', ':', ')']);
        let joins = bare == "of"
            && words.last().is_some_and(|l: &&str| {
                [
                    "vp",
                    "head",
                    "director",
                    "chief",
                    "professor",
                    "manager",
                    "lead",
                ]
                .contains(&l.to_lowercase().as_str())
            });
        if bare.is_empty() || ENDS.contains(&bare) && !joins || words.len() == 5 {
            break;
        }
        words.push(bare);
        used += w.len();
        if bare.len() != word.len() {
            break;
        }
    }
    (words.join(" "), used)
}

/// What "I drive a Honda Civic", "we have two cats", "I just bought a new e-bike" say the
/// subject owns or keeps.
fn owned(subject: &Mention, thing: &str, phrase: &str) -> Option<Vec<Triple>> {
    // "a Volvo 240 from 1987 and a Vespa": each thing its own.
    static NEXT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r",?\s+and\s+(?:an?|the)\s+").expect("valid pattern"));
    let parts: Vec<&str> = NEXT.split(thing).collect();
    if parts.len() > 1 {
        let all: Vec<Triple> = parts
            .iter()
            .filter_map(|p| owned_one(subject, p, phrase))
            .flatten()
            .collect();
        return (!all.is_empty()).then_some(all);
    }
    owned_one(subject, thing, phrase)
}

fn owned_one(subject: &Mention, thing: &str, phrase: &str) -> Option<Vec<Triple>> {
    // "still has my bike": someone else's.
    if ["my ", "your ", "his ", "her ", "their ", "our "]
        .iter()
        .any(|p| thing.starts_with(p))
    {
        return None;
    }
    // "a new phone today, the Pixel 8": the name after it.
    static NAMED_AFTER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[^,]{1,40},\s+(?:the|an?|my)\s+(?P<name>\p{Lu}[\w-]*(?:\s+(?:\p{Lu}[\w-]*|\d[\w-]*))*)")
            .expect("valid pattern")
    });
    if let Some(name) = NAMED_AFTER.captures(thing).and_then(|c| c.name("name")) {
        return Some(vec![Triple::new(
            subject,
            "owns",
            Mention::of(name.as_str(), kind::PRODUCT),
            false,
        )]);
    }
    if let Some(m) = super::NAME.captures(thing).and_then(|c| c.name("name")) {
        let name = m.as_str();
        let verb = phrase.split_whitespace().next().unwrap_or_default();
        let buys = [
            "drive",
            "drives",
            "own",
            "owns",
            "bought",
            "purchased",
            "ride",
            "rides",
        ];
        // "have a Ford F-150" names a thing; "have a Zoom call" may not.
        let after = thing[m.end()..].trim_start();
        let whole = after.is_empty()
            || after.starts_with([',', '.', '!', '?'])
            || [
                "but ", "and ", "which ", "that ", "for ", "from ", "since ", "so ",
            ]
            .iter()
            .any(|w| after.starts_with(w));
        let model = name.contains(' ') || name.contains(|c: char| c.is_ascii_digit());
        if super::NOT_NAMES.contains(&name) || !(buys.contains(&verb) || whole || model) {
            return None;
        }
        return Some(vec![Triple::new(
            subject,
            "owns",
            Mention::of(name, kind::PRODUCT),
            false,
        )]);
    }
    let v = values(thing);
    let first = v.first()?;
    if thing[first.len().min(thing.len())..]
        .trim_start()
        .starts_with(',')
        && thing.contains(" and ")
    {
        return None;
    }
    if first.split_whitespace().count() == 1 && animal(first).is_some() {
        return Some(vec![Triple::new(
            subject,
            "has_pet",
            Mention::value(first),
            true,
        )]);
    }
    let head = first.split_whitespace().last()?.to_lowercase();
    POSSESSIONS
        .contains(&head.as_str())
        .then(|| vec![Triple::new(subject, "owns", Mention::value(first), true)])
}

/// Whether `text` starts a new predicate of the same subject, so "and" before it joins two
/// ("He's super into dinosaurs and hates broccoli").
pub(super) fn starts_predicate(text: &str) -> bool {
    static VERB: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:just|also|really|still|now|absolutely|totally)\s+)*(?:is|am|are|has|have|hates?|loves?|likes?|enjoys?|adores?|drives?|owns?|bought|reports?|manages?|leads?|studies|moved|was born|grew up|can't stand|cannot stand|don't like|doesn't like|was born|turns|turned|eats?|went|working on|living in|based in)\b")
            .expect("valid pattern")
    });
    VERB.is_match(text)
}

/// "Maria Gonzalez, our sales director", "the VP of Engineering, Sarah Lin": a job title in
/// apposition to a name.
pub(super) fn appositions(sentence: &str) -> Vec<Triple> {
    static AFTER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?P<name>\p{Lu}[\w-]+(?:\s+\p{Lu}[\w-]+)?),\s+(?:our|my|the|their|his|her|an?)\s+(?P<title>[\w -]{2,40}?)\s*(?:,|$)")
            .expect("valid pattern")
    });
    static BEFORE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b(?:the|our|my|their)\s+(?P<title>[\w -]{2,40}?),\s+(?P<name>\p{Lu}[\w-]+(?:\s+\p{Lu}[\w-]+)?)")
            .expect("valid pattern")
    });
    AFTER
        .captures_iter(sentence)
        .chain(BEFORE.captures_iter(sentence))
        .filter_map(|c| {
            let name = c.name("name")?.as_str();
            let title = c.name("title")?.as_str().trim();
            (is_job(title) && !super::opens_no_name(name)).then(|| {
                Triple::new(
                    &Mention::of(name, kind::PERSON),
                    "job_title",
                    Mention::value(title),
                    true,
                )
            })
        })
        .collect()
}

/// Whether a name reads as an organisation's ("Acme Corporation", "Goldman Sachs Inc").
fn is_organisation(name: &str) -> bool {
    const ENDINGS: &[&str] = &[
        "corporation",
        "corp",
        "inc",
        "ltd",
        "llc",
        "gmbh",
        "company",
        "co",
        "group",
        "labs",
        "bank",
        "university",
        "college",
        "school",
        "hospital",
        "institute",
        "agency",
        "studio",
        "studios",
        "systems",
        "technologies",
        "partners",
        "foundation",
        "bakery",
    ];
    name.split_whitespace()
        .last()
        .is_some_and(|w| ENDINGS.contains(&w.to_lowercase().trim_end_matches('.')))
}

/// A job title after "is a", "works as a", "got promoted to" ("I'm a UX designer at
/// Farfetch", "I work as a software engineer at Shopify", "I started at Spotify last week as
/// a product manager"): the title, and the employer when one is named.
fn titled(subject: &Mention, phrase: &str) -> Option<Vec<Triple>> {
    static START: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:am|is|are)\s+(?:(?:now|currently|also|still)\s+)?(?:(?:working|employed|freelancing|training)\s+as\s+(?:an?\s+)?|an?\s+|(?:now\s+)?(?:the\s+)??)|(?:work|works|working|freelancing|freelance|started|start|starting|began|am working|is working)\s+(?:(?:at|for|with)\s+(?P<early>(?:the\s+)?\p{Lu}[\w&'.-]*(?:\s+\p{Lu}[\w&'.-]*)*)\s+)?(?:(?:last|this|next)\s+\w+\s+)?as\s+|(?:got\s+|was\s+|just\s+got\s+)?promoted\s+to\s+)(?:an?\s+)?")
            .expect("valid pattern")
    });
    let c = START.captures(phrase)?;
    let m = c.get(0)?;
    let mut rest = &phrase[m.end()..];
    // "the head of customer support at Canva" is a title; "the head of the Design team"
    // says whom they manage, which the workplace patterns read.
    if let Some(after) = rest.strip_prefix("the ") {
        let (title, _) = title_words(after);
        let of = title.split_once(" of ").map(|(_, what)| what);
        if of.is_none_or(|what| what.starts_with("the ")) {
            return None;
        }
        rest = after;
    }
    let (title, used) = title_words(rest);
    if !is_job(&title) {
        return None;
    }
    let mut out = vec![Triple::new(
        subject,
        "job_title",
        Mention::value(&title),
        true,
    )];
    let after = rest[used..].trim_start();
    let employer = ["at ", "for ", "with "]
        .iter()
        .find_map(|p| after.strip_prefix(p))
        .and_then(|o| {
            super::object_of(o, super::ObjectKind::Entity(kind::ORGANIZATION))
                .map(|(m, _, used)| (m, &o[used..]))
        });
    if let Some((o, tail)) = employer.filter(|(o, _)| !super::NOT_NAMES.contains(&o.name.as_str()))
    {
        let employer = Mention::of(o.name.trim_start_matches("the "), kind::ORGANIZATION);
        if let Some(place) = super::LOCATED.captures(tail).and_then(|c| c.name("place")) {
            out.push(Triple::new(
                &employer,
                "located_in",
                Mention::of(place.as_str(), kind::PLACE),
                false,
            ));
        }
        out.push(Triple::new(subject, "works_at", employer, false));
    } else if let Some(early) = c
        .name("early")
        .filter(|o| !super::NOT_NAMES.contains(&o.as_str()))
    {
        out.push(Triple::new(
            subject,
            "works_at",
            Mention::of(
                early.as_str().trim_start_matches("the "),
                kind::ORGANIZATION,
            ),
            false,
        ));
    }
    Some(out)
}

/// Places a sentence gives an organisation ("The Farfetch office is in Porto") and teams
/// their leaders ("the Growth team, which is led by Aaron Fields").
pub(super) fn placed(sentence: &str) -> Vec<Triple> {
    static OFFICE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b[Tt]he\s+(?P<org>\p{Lu}[\w&'-]*(?:\s+\p{Lu}[\w&'-]*)*)\s+(?:office|offices|HQ|headquarters|campus|store|branch|factory|plant)\s+(?:is|are)\s+(?:in|based in)\s+(?P<place>\p{Lu}[\w'-]*(?:\s+\p{Lu}[\w'-]*)*)")
            .expect("valid pattern")
    });
    static LED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b[Tt]he\s+(?P<team>[\w-]+(?:\s+[\w-]+)?\s+(?:team|group|department|org|division|unit))\s*,?\s+(?:which|that|who)\s+(?:is|are)\s+(?:led|run|managed|headed)\s+by\s+(?P<name>\p{Lu}[\w'-]*(?:\s+\p{Lu}[\w'-]*)?)")
            .expect("valid pattern")
    });
    let mut out = Vec::new();
    for c in OFFICE.captures_iter(sentence) {
        if let (Some(o), Some(p)) = (c.name("org"), c.name("place")) {
            out.push(Triple::new(
                &Mention::of(o.as_str(), kind::ORGANIZATION),
                "located_in",
                Mention::of(p.as_str(), kind::PLACE),
                false,
            ));
        }
    }
    for c in LED.captures_iter(sentence) {
        if let (Some(t), Some(n)) = (c.name("team"), c.name("name")) {
            out.push(Triple::new(
                &Mention::of(n.as_str(), kind::PERSON),
                "manager_of",
                Mention::of(t.as_str(), kind::ORGANIZATION),
                false,
            ));
        }
    }
    out
}

/// A person named by their first name after their full name ("David Kim ... David and I"):
/// the full name, so both are one.
pub(super) fn full_names(triples: &mut [Triple], earlier: Option<&str>) {
    let full: Vec<String> = triples
        .iter()
        .flat_map(|t| [&t.subject, &t.object])
        .filter(|m| m.kind == kind::PERSON && m.name.contains(' '))
        .map(|m| m.name.clone())
        .chain(earlier.filter(|n| n.contains(' ')).map(str::to_owned))
        .collect();
    let fuller = |name: &str| -> Option<String> {
        if name.contains(' ') {
            return None;
        }
        let mut matches = full
            .iter()
            .filter(|f| f.split_whitespace().next() == Some(name));
        let first = matches.next()?;
        matches.all(|m| m == first).then(|| first.clone())
    };
    for t in triples.iter_mut() {
        for m in [&mut t.subject, &mut t.object] {
            if m.kind == kind::PERSON
                && let Some(f) = fuller(&m.name)
            {
                m.name = f;
            }
        }
    }
}

/// The object of a text typed in lower case ("work at dell now", "report to dan rivera"):
/// up to three words before the clause goes on.
pub(super) fn lower_object(
    text: &str,
    wanted: super::ObjectKind,
) -> Option<(Mention, bool, usize)> {
    let super::ObjectKind::Entity(kind) = wanted else {
        return None;
    };
    const ENDS: &[&str] = &[
        "now",
        "and",
        "but",
        "with",
        "since",
        "for",
        "last",
        "this",
        "next",
        "in",
        "at",
        "on",
        "lol",
        "haha",
        "too",
        "though",
        "because",
        "so",
        "which",
        "who",
        "a",
        "as",
        "from",
        "these",
        "right",
        "today",
        "yesterday",
        "again",
        "already",
        "anymore",
        "btw",
    ];
    let text = text.strip_prefix("the ").unwrap_or(text);
    let mut words = Vec::new();
    let mut used = 0;
    for w in text.split_inclusive(char::is_whitespace) {
        let word = w.trim().trim_end_matches([',', '.', '!', '?']);
        if word.is_empty() || ENDS.contains(&word) || words.len() == 3 {
            break;
        }
        if !word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '\'')
        {
            break;
        }
        words.push(word);
        used += w.len();
        if w.trim().len() != word.len() {
            break;
        }
    }
    (!words.is_empty()).then(|| (Mention::of(&words.join(" "), kind), false, used))
}

/// Whether a clause without a subject is the speaker's own ("work at dell now", "got a new
/// phone today", "really like the bbq here"): it starts with a first-person verb.
pub(super) fn speaker_implied(clause: &str) -> bool {
    static VERB: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^(?:(?:just|also|really|still|finally|now|recently)\s+)*(?:work|live|like|love|enjoy|hate|moved|got|bought|drive|study|started|joined|teach|own|adopted|am|married to|allergic to|can't stand|cannot stand|not a fan of|(?:was\s+)?born|raised|grew up|living|based|doing an?|doing my|studying|working (?:at|for|as|on)|vegan|vegetarian|pescatarian|gluten-free|dairy-free)\b")
            .expect("valid pattern")
    });
    VERB.is_match(clause)
}

/// The kin word a capitalised subject may be ("Mom still works as a librarian"), if it is
/// one.
pub(super) fn kin_word<'a>(word: &str, kin: &'a [(String, String)]) -> Option<Option<&'a str>> {
    const SAME: &[&[&str]] = &[
        &["mom", "mum", "mother", "mama", "mommy"],
        &["dad", "father", "papa", "daddy"],
        &["grandma", "grandmother", "granny", "nan", "nana"],
        &["grandpa", "grandfather"],
    ];
    let lower = word.to_lowercase();
    let words = SAME.iter().find(|w| w.contains(&lower.as_str()))?;
    Some(
        kin.iter()
            .rev()
            .find(|(rel, _)| words.contains(&rel.as_str()))
            .map(|(_, name)| name.as_str()),
    )
}

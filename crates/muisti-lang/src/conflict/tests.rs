//! The detector on the labelled corpora and on hand-made pairs.

use super::duplicate::*;
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
    let pairs: Vec<LabelledDuplicate> =
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

/// The slots as each pattern finds them alone, in order: what the one pass of the pattern
/// set must not change.
fn slots_pattern_by_pattern(norm: &str, life: bool) -> BTreeSet<String> {
    SLOTS
        .iter()
        .filter(|slot| !life || LIFE_SLOTS.contains(&slot.name))
        .filter_map(|slot| {
            let found = slot
                .patterns
                .iter()
                .filter(|re| !life || !LOOSE_PATTERNS.contains(&re.as_str()))
                .find_map(|re| first_counting_match(re, norm))?;
            Some(slot_key(slot, &found))
        })
        .collect()
}

#[test]
fn the_pattern_set_finds_the_slots_each_pattern_finds() {
    let mut filled = 0;
    for pair in corpus() {
        for text in [&pair.existing, &pair.new] {
            let norm = normalize(text);
            let (all, life) = (slots(&norm), life_slots(&norm));
            assert_eq!(all, slots_pattern_by_pattern(&norm, false), "{text}");
            assert_eq!(life, slots_pattern_by_pattern(&norm, true), "{text}");
            filled += usize::from(!all.is_empty());
        }
    }
    assert!(
        filled > 100,
        "only {filled} texts of the corpus fill a slot"
    );
}

//! Time expressions: the periods a text speaks of ("in May 2023", "last summer", "on 3 June",
//! "yesterday", "two weeks ago"), resolved against a reference time. Recall's temporal
//! strategy matches the periods of a query against each memory's time (its `valid_from`, or
//! when it was written).
//!
//! English only, and deliberately plain: calendar dates, months, years, seasons and the
//! common relative expressions. A month or season without a year ("in June", "during the
//! summer") means that month or season of any year, so it needs no reference time.

use chrono::{DateTime, Datelike, Duration, NaiveDate};
use muisti_core::Timestamp;

/// A period a text speaks of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Period {
    /// From `start` (included) to `end` (excluded).
    Span {
        /// First instant.
        start: Timestamp,
        /// First instant after the period.
        end: Timestamp,
    },
    /// One month (1 to 12) of any year ("in June").
    Month(u32),
    /// Several months of any year: a season ("in the summer"), as its first month and how
    /// many months it lasts (northern hemisphere).
    Months {
        /// First month, 1 to 12.
        first: u32,
        /// How many months.
        count: u32,
    },
}

impl Period {
    /// Whether `t` falls in the period, or up to `after` later (people speak of events after
    /// they happen: "we went camping last week" is said after the week in question).
    pub fn contains(&self, t: Timestamp, after: std::time::Duration) -> bool {
        let after_ms = i64::try_from(after.as_millis()).unwrap_or(i64::MAX);
        match *self {
            Period::Span { start, end } => {
                t >= start && t.as_millis() < end.as_millis().saturating_add(after_ms)
            }
            Period::Month(_) | Period::Months { .. } => {
                // The month of `t`, and of every instant up to `after` earlier.
                let Some(at) = DateTime::from_timestamp_millis(t.as_millis()) else {
                    return false;
                };
                let Some(earliest) =
                    DateTime::from_timestamp_millis(t.as_millis().saturating_sub(after_ms))
                else {
                    return false;
                };
                // Walk the months from `earliest` to `at` (at most a year's worth matters).
                let mut y = earliest.year();
                let mut m = earliest.month();
                for _ in 0..13 {
                    if self.has_month(m) {
                        return true;
                    }
                    if (y, m) >= (at.year(), at.month()) {
                        break;
                    }
                    (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                }
                false
            }
        }
    }

    /// Whether the two periods share an instant (a memory's "last week", said on 12 June,
    /// and a query's "on 9 June").
    pub fn overlaps(&self, other: &Period) -> bool {
        match (*self, *other) {
            (Period::Span { start, end }, Period::Span { start: s, end: e }) => {
                s < end && start < e
            }
            // A span meets months when one of its instants falls in them: the walk from its
            // last instant back over its length that `contains` does.
            (months, Period::Span { start, end }) | (Period::Span { start, end }, months) => {
                let last = end.as_millis().saturating_sub(1);
                let length = u64::try_from(last.saturating_sub(start.as_millis())).unwrap_or(0);
                months.contains(
                    Timestamp::from_millis(last),
                    std::time::Duration::from_millis(length),
                )
            }
            (a, b) => (1..=12).any(|m| a.has_month(m) && b.has_month(m)),
        }
    }

    /// Whether a month (1 to 12) is one of a month-of-any-year period's (never for a span).
    fn has_month(&self, month: u32) -> bool {
        match *self {
            Period::Span { .. } => false,
            Period::Month(m) => m == month,
            Period::Months { first, count } => (month + 12 - first) % 12 < count,
        }
    }
}

/// The days of the week, Monday first.
pub(crate) const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The months' names, January first.
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month a word names (full name or three-letter abbreviation; "sept" too).
fn month(word: &str) -> Option<u32> {
    if word == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| *m == word || (word.len() == 3 && m.starts_with(word)))
        .map(|i| i as u32 + 1)
}

/// A day of the month: `3`, `03`, `3rd`, `21st`.
fn day(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// A year from 1900 to 2199.
fn year(word: &str) -> Option<i32> {
    (word.len() == 4)
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1900..2200).contains(y))
}

/// A season's first month and length.
fn season(word: &str) -> Option<(u32, u32)> {
    match word {
        "spring" => Some((3, 3)),
        "summer" => Some((6, 3)),
        "autumn" | "fall" => Some((9, 3)),
        "winter" => Some((12, 3)),
        _ => None,
    }
}

fn at(date: NaiveDate) -> Timestamp {
    Timestamp::from_millis(
        date.and_hms_opt(0, 0, 0)
            .map_or(0, |d| d.and_utc().timestamp_millis()),
    )
}

fn span(start: NaiveDate, end: NaiveDate) -> Period {
    Period::Span {
        start: at(start),
        end: at(end),
    }
}

fn month_span(y: i32, m: u32, count: u32) -> Option<Period> {
    let start = NaiveDate::from_ymd_opt(y, m, 1)?;
    let end = start.checked_add_months(chrono::Months::new(count))?;
    Some(span(start, end))
}

fn year_span(y: i32) -> Option<Period> {
    month_span(y, 1, 12)
}

/// A time expression of a text: the period it speaks of and the date it names (what a fact
/// stated with it took place on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expression {
    /// The period, for matching against other times (recall's temporal strategy).
    pub period: Period,
    /// The day it names, at its start (UTC): the day itself; the first of a month, season
    /// or year; for a month or season without a year the latest one begun by the reference
    /// time; for "N units ago", "last week|month|year" and "yesterday" that many calendar
    /// units before the reference day.
    pub at: Timestamp,
}

/// The periods `text` speaks of, relative expressions resolved against `reference`
/// ([`expressions`]).
pub fn periods(text: &str, reference: Timestamp) -> Vec<Period> {
    let mut out: Vec<Period> = expressions(text, reference)
        .into_iter()
        .map(|e| e.period)
        .collect();
    out.dedup();
    out
}

/// The date `text` gives (its first time expression's, [`Expression::at`]), resolved against
/// `reference`: what the offline extractors date a sentence's facts by.
pub fn date_in(text: &str, reference: Timestamp) -> Option<Timestamp> {
    expressions(text, reference).first().map(|e| e.at)
}

/// The time expressions of `text` in order, relative ones resolved against `reference`: the
/// one reader of dates in text (calendar dates, ISO dates, months, years, seasons, and the
/// common relative expressions).
pub fn expressions(text: &str, reference: Timestamp) -> Vec<Expression> {
    let (words, iso) = words_of(text);
    let today = DateTime::from_timestamp_millis(reference.as_millis())
        .map(|d| d.date_naive())
        .unwrap_or_default();
    let mut out: Vec<Expression> = Vec::new();
    let word = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let mut used = vec![false; words.len()];
    let mut found = |period: Option<Period>, on: Option<NaiveDate>| {
        if let (Some(period), Some(on)) = (period, on) {
            out.push(Expression { period, at: at(on) });
        }
    };
    let mut i = 0;
    while i < words.len() {
        // An ISO date ("2024-02-29"): its three words, one day (none when not a date).
        if let Some((first, date)) = iso.iter().find(|(first, _)| *first == i) {
            found(date.and_then(|d| Some(span(d, d.succ_opt()?))), *date);
            used[*first..first + 3].fill(true);
            i = first + 3;
            continue;
        }
        let w = word(i);
        if let Some(m) = month(w) {
            // "8 May 2023", "May 8, 2023", "May 2023", "in May". "may" and "march" are
            // also verbs: without a day or year beside them they count only after a word
            // that introduces a time.
            let day_before = i
                .checked_sub(1)
                .filter(|p| !used[*p])
                .and_then(|p| day(word(p)));
            let day_after = day(word(i + 1));
            let d = day_before.or(day_after);
            let y_at = if day_after.is_some() { i + 2 } else { i + 1 };
            let y = year(word(y_at));
            let introduced = i.checked_sub(1).is_some_and(|p| {
                matches!(
                    word(p),
                    "in" | "of"
                        | "since"
                        | "during"
                        | "early"
                        | "late"
                        | "mid"
                        | "until"
                        | "by"
                        | "last"
                        | "this"
                        | "next"
                        | "through"
                )
            });
            let ambiguous = matches!(w, "may" | "march") || w.len() == 3 && w != "may";
            if d.is_none() && y.is_none() && ambiguous && !introduced {
                i += 1;
                continue;
            }
            match (d, y) {
                (Some(d), Some(y)) => {
                    let day = NaiveDate::from_ymd_opt(y, m, d);
                    found(day.and_then(|s| Some(span(s, s.succ_opt()?))), day);
                }
                (None, Some(y)) => found(month_span(y, m, 1), NaiveDate::from_ymd_opt(y, m, 1)),
                // A day without a year: that month of any year is the best one can say of
                // the period; the date is the latest such day by the reference time.
                (d, None) => found(Some(Period::Month(m)), latest(today, m, d.unwrap_or(1))),
            }
            used[i] = true;
            if y.is_some() {
                used[y_at] = true;
                i = y_at;
            }
            i += 1;
            continue;
        }
        if let Some((first, count)) = season(w) {
            let prev = i.checked_sub(1).map(word).unwrap_or("");
            if let Some(y) = year(word(i + 1)) {
                used[i + 1] = true;
                found(
                    month_span(y, first, count),
                    NaiveDate::from_ymd_opt(y, first, 1),
                );
            } else {
                // The season of the reference year that has begun by the reference time
                // ("this summer"), or the one before it ("last summer").
                let this_year = if today.month() >= first {
                    today.year()
                } else {
                    today.year() - 1
                };
                let (period, y) = match prev {
                    "last" | "past" => (month_span(this_year - 1, first, count), this_year - 1),
                    "this" => (month_span(this_year, first, count), this_year),
                    // "fall", "spring": also words for other things; a season is introduced.
                    "in" | "during" | "the" | "over" | "that" | "early" | "late" | "mid" => {
                        (Some(Period::Months { first, count }), this_year)
                    }
                    _ => (None, this_year),
                };
                found(period, NaiveDate::from_ymd_opt(y, first, 1));
            }
            i += 1;
            continue;
        }
        if let Some(y) = year(w).filter(|_| !used[i]) {
            found(year_span(y), NaiveDate::from_ymd_opt(y, 1, 1));
            i += 1;
            continue;
        }
        let yesterday = today.pred_opt();
        let relative = match (w, word(i + 1)) {
            ("yesterday", _) => Some((yesterday.map(|d| span(d, today)), yesterday, 1)),
            ("last", "night") => Some((yesterday.map(|d| span(d, today)), yesterday, 2)),
            ("today" | "tonight", _) => {
                Some((today.succ_opt().map(|d| span(today, d)), Some(today), 1))
            }
            ("last" | "past", "week") => Some((
                Some(span(today - Duration::days(14), today)),
                back(today, "week", 1),
                2,
            )),
            ("last" | "past", "weekend") => Some((
                Some(span(today - Duration::days(9), today)),
                back(today, "week", 1),
                2,
            )),
            ("last", "month") => {
                let first = today.with_day(1).unwrap_or(today);
                let period = first
                    .checked_sub_months(chrono::Months::new(1))
                    .map(|s| span(s, first));
                Some((period, back(today, "month", 1), 2))
            }
            ("last", "year") => Some((year_span(today.year() - 1), back(today, "year", 1), 2)),
            ("this", "year") => Some((
                year_span(today.year()),
                NaiveDate::from_ymd_opt(today.year(), 1, 1),
                2,
            )),
            ("this", "month") => Some((
                month_span(today.year(), today.month(), 1),
                today.with_day(1),
                2,
            )),
            _ => None,
        };
        if let Some((period, on, words_used)) = relative {
            found(period, on);
            i += words_used;
            continue;
        }
        // "3 days ago", "two weeks ago", "a month ago", "a couple of days ago".
        if word(i + 2) == "ago" {
            let n: Option<u32> = match w {
                "a" | "an" | "one" => Some(1),
                "two" => Some(2),
                "of" if i.checked_sub(1).map(word) == Some("couple") => Some(2),
                "three" => Some(3),
                "four" => Some(4),
                "five" => Some(5),
                "six" => Some(6),
                "seven" => Some(7),
                "eight" => Some(8),
                "nine" => Some(9),
                "ten" => Some(10),
                "few" | "several" => Some(3),
                _ => w.parse::<u32>().ok().filter(|n| (1..=100).contains(n)),
            };
            let unit = word(i + 1).trim_end_matches('s');
            let days = match unit {
                "day" => Some(1),
                "week" => Some(7),
                "month" => Some(30),
                "year" => Some(365),
                _ => None,
            };
            if let (Some(n), Some(days)) = (n, days) {
                // About then: half a unit either side.
                let centre = today - Duration::days(i64::from(n) * days);
                let half = Duration::days((days / 2).max(1));
                found(
                    Some(span(centre - half, centre + half)),
                    back(today, unit, n),
                );
                i += 3;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The words of `text`, lower case, and its ISO dates (`2024-02-29`): the index of the
/// first of each one's three words and the date (none when the numbers are no date).
fn words_of(text: &str) -> (Vec<String>, Vec<(usize, Option<NaiveDate>)>) {
    let mut words: Vec<(usize, String)> = Vec::new();
    let mut start = None;
    for (at, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                words.push((s, text[s..at].to_lowercase()));
                start = None;
            }
            _ => {}
        }
    }
    let mut iso = Vec::new();
    if text.contains('-') {
        for (i, triple) in words.windows(3).enumerate() {
            let [(a, y), (b, m), (c, d)] = triple else {
                continue;
            };
            let joined =
                |from: usize, w: &str, to: usize| text.get(from + w.len()..to) == Some("-");
            if y.len() == 4
                && m.len() == 2
                && d.len() == 2
                && [y, m, d]
                    .iter()
                    .all(|w| w.bytes().all(|b| b.is_ascii_digit()))
                && joined(*a, y, *b)
                && joined(*b, m, *c)
            {
                let date = NaiveDate::from_ymd_opt(
                    y.parse().unwrap_or(0),
                    m.parse().unwrap_or(0),
                    d.parse().unwrap_or(0),
                );
                iso.push((i, date));
            }
        }
    }
    (words.into_iter().map(|(_, w)| w).collect(), iso)
}

/// The latest `month`/`day` that is not after `today` (this year's, else last year's).
fn latest(today: NaiveDate, month: u32, day: u32) -> Option<NaiveDate> {
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, day)?;
    if this_year <= today {
        Some(this_year)
    } else {
        NaiveDate::from_ymd_opt(today.year() - 1, month, day)
    }
}

/// `n` calendar units before `today`.
fn back(today: NaiveDate, unit: &str, n: u32) -> Option<NaiveDate> {
    match unit {
        "day" => today.checked_sub_signed(Duration::days(i64::from(n))),
        "week" => today.checked_sub_signed(Duration::weeks(i64::from(n))),
        "month" => today.checked_sub_months(chrono::Months::new(n)),
        "year" => today.checked_sub_months(chrono::Months::new(n.checked_mul(12)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(y: i32, m: u32, d: u32) -> Timestamp {
        at(NaiveDate::from_ymd_opt(y, m, d).expect("a date"))
    }

    /// The period of one whole day.
    fn one_day(y: i32, m: u32, d: u32) -> Period {
        let day = NaiveDate::from_ymd_opt(y, m, d).expect("a date");
        span(day, day.succ_opt().expect("a next day"))
    }

    const NONE: std::time::Duration = std::time::Duration::ZERO;

    #[test]
    fn calendar_dates_months_and_years() {
        let r = ts(2026, 12, 2);
        assert_eq!(
            periods("Who did Maria have dinner with on May 3, 2023?", r),
            [one_day(2023, 5, 3)]
        );
        assert_eq!(
            periods("What did Jon find on 1 February, 2023?", r),
            periods("what did jon find on february 1st 2023", r)
        );
        let march = periods("What did John attend in March 2023?", r);
        assert_eq!(march, [month_span(2023, 3, 1).expect("m")]);
        assert!(march[0].contains(ts(2023, 3, 31), NONE));
        assert!(!march[0].contains(ts(2023, 4, 1), NONE));
        assert_eq!(
            periods("How many times has Melanie gone to the beach in 2023?", r),
            [year_span(2023).expect("y")]
        );
        assert_eq!(
            periods("When did Melanie go camping in June?", r),
            [Period::Month(6)]
        );
    }

    #[test]
    fn may_and_march_as_verbs_are_not_months() {
        let r = ts(2026, 12, 2);
        assert!(periods("What may happen if they march on?", r).is_empty());
        assert!(periods("Is she a good sport?", r).is_empty());
        assert_eq!(periods("She moved in May", r), [Period::Month(5)]);
    }

    #[test]
    fn seasons_with_and_without_a_year() {
        let r = ts(2023, 10, 1);
        let summer = periods("What state did Joanna visit in summer 2021?", r);
        assert_eq!(summer, [month_span(2021, 6, 3).expect("s")]);
        assert_eq!(
            periods("the pride parade during the summer", r),
            [Period::Months { first: 6, count: 3 }]
        );
        assert_eq!(
            periods("where did they go last summer", r),
            [month_span(2022, 6, 3).expect("s")]
        );
        // Winter spans the turn of the year.
        let winter = Period::Months {
            first: 12,
            count: 3,
        };
        assert!(winter.contains(ts(2023, 1, 15), NONE));
        assert!(winter.contains(ts(2022, 12, 1), NONE));
        assert!(!winter.contains(ts(2023, 3, 1), NONE));
    }

    #[test]
    fn relative_expressions_resolve_against_the_reference() {
        let r = ts(2023, 5, 8);
        assert_eq!(
            periods("I went to a support group yesterday", r),
            [one_day(2023, 5, 7)]
        );
        assert_eq!(
            periods("we did that last year", r),
            [year_span(2022).expect("y")]
        );
        let ago = periods("she moved here 4 years ago", r);
        assert_eq!(ago.len(), 1);
        assert!(ago[0].contains(ts(2019, 5, 8), NONE));
        assert!(!ago[0].contains(ts(2021, 5, 8), NONE));
    }

    #[test]
    fn a_period_may_be_spoken_of_later() {
        let june = Period::Month(6);
        let july_2 = ts(2023, 7, 2);
        assert!(!june.contains(july_2, NONE));
        assert!(june.contains(july_2, std::time::Duration::from_secs(7 * 86_400)));
        let may_2023 = month_span(2023, 5, 1).expect("m");
        assert!(may_2023.contains(ts(2023, 6, 5), std::time::Duration::from_secs(7 * 86_400)));
        assert!(!may_2023.contains(ts(2023, 4, 30), std::time::Duration::from_secs(7 * 86_400)));
    }

    #[test]
    fn periods_overlap_when_they_share_an_instant() {
        // "last week", said on 21 November 2023, meets "16 November 2023"; "last month"
        // said on 3 July meets "in June" and "June 2023", not "in May" or "August 2023".
        let last_week = periods("last week I had a setback", ts(2023, 11, 21));
        assert!(last_week[0].overlaps(&one_day(2023, 11, 16)));
        assert!(one_day(2023, 11, 16).overlaps(&last_week[0]));
        assert!(
            !last_week[0].overlaps(&one_day(2023, 11, 21)),
            "the end is excluded"
        );
        let last_month = periods("last month we went kayaking", ts(2023, 7, 3));
        assert_eq!(last_month, [month_span(2023, 6, 1).expect("m")]);
        for (query, meets) in [
            (Period::Month(6), true),
            (Period::Month(5), false),
            (Period::Months { first: 6, count: 3 }, true),
            (month_span(2023, 6, 1).expect("m"), true),
            (month_span(2023, 8, 1).expect("m"), false),
            (year_span(2023).expect("y"), true),
            (year_span(2022).expect("y"), false),
        ] {
            assert_eq!(query.overlaps(&last_month[0]), meets, "{query:?}");
            assert_eq!(last_month[0].overlaps(&query), meets, "{query:?}");
        }
        // Months of any year: winter meets January, not July.
        let winter = Period::Months {
            first: 12,
            count: 3,
        };
        assert!(winter.overlaps(&Period::Month(1)));
        assert!(!winter.overlaps(&Period::Month(7)));
    }

    fn day_in(sentence: &str) -> Option<String> {
        date_in(
            sentence,
            Timestamp::parse("2025-05-20T15:30:00Z").expect("time"),
        )
        .map(|t| t.to_string()[..10].to_owned())
    }

    /// The date a sentence gives, as the offline extractors date its facts: the cases of
    /// the graph's former date reader, and three it got wrong ("in June 2024" and "on March
    /// 3, 2024" after "may", which it read as no date, and "we march" as March).
    #[test]
    fn dates_resolve_against_the_time_written() {
        for (sentence, want) in [
            ("Alice moved to Lisbon yesterday", Some("2025-05-19")),
            ("I joined Initech last month", Some("2025-04-20")),
            ("Bob started there three years ago", Some("2022-05-20")),
            ("We met 10 days ago", Some("2025-05-10")),
            ("We met a couple of days ago", Some("2025-05-18")),
            ("She has lived in Oslo since 2019", Some("2019-01-01")),
            ("I moved to Berlin in March", Some("2025-03-01")),
            ("I moved to Berlin in August", Some("2024-08-01")),
            ("He married Ana on June 1, 2023", Some("2023-06-01")),
            ("He married Ana on 1 June 2023", Some("2023-06-01")),
            ("The lease began 2024-02-29", Some("2024-02-29")),
            ("It happened in May 2021", Some("2021-05-01")),
            ("I lost my keys last night", Some("2025-05-19")),
            ("She may move to Rome", None),
            ("Alice works at Google", None),
            ("The lease began 2024-02-30", None),
            ("She may move to Rome in June 2024", Some("2024-06-01")),
            (
                "I may start at Initech on March 3, 2024",
                Some("2024-03-03"),
            ),
            ("We march in protest every year", None),
        ] {
            assert_eq!(day_in(sentence).as_deref(), want, "{sentence}");
        }
    }

    #[test]
    fn text_without_time_has_no_period() {
        let r = ts(2026, 12, 2);
        for text in ["", "What is Caroline's identity?", "2", "12345", "room 3b"] {
            assert!(periods(text, r).is_empty(), "{text}");
        }
    }
}

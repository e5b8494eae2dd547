//! Dates in a sentence, resolved against the time it was written: "yesterday", "last
//! month", "three years ago", "in 2019", "in March", "on June 1, 2023", "2023-06-01". The
//! offline extractor dates the facts of a sentence by them (a fact's `valid_at`).

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, Utc};
use muisti_core::Timestamp;
use regex::Regex;

use crate::temporal::MONTHS;

static ISO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b").expect("valid pattern")
});

/// "June 1, 2023", "1 June 2023", "June 2023", "March" (after "in", "on", "since", "from").
static MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s+)?(?P<month>january|february|march|april|may|june|july|august|september|october|november|december)(?:\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?)?(?:,?\s+(?P<y>\d{4}))?\b",
    )
    .expect("valid pattern")
});

static YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:in|since|from|during|back in)\s+(?P<y>(?:19|20)\d{2})\b")
        .expect("valid pattern")
});

static AGO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of)\s+(?P<unit>day|week|month|year)s?\s+ago\b")
        .expect("valid pattern")
});

static LAST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?P<which>yesterday|today|last\s+(?:week|month|year|night|weekend))\b")
        .expect("valid pattern")
});

/// The date `sentence` gives, as the start of its day (UTC), resolved against `now`; the
/// first found of an explicit date, a month, a year, "N units ago" and "yesterday" /
/// "last week|month|year". A month without a year is the latest one not after `now`.
pub fn date_in(sentence: &str, now: Timestamp) -> Option<Timestamp> {
    let now = DateTime::<Utc>::from_timestamp_millis(now.as_millis())?.date_naive();
    let day = explicit(sentence, now)
        .or_else(|| {
            YEAR.captures(sentence)
                .and_then(|c| ymd(num(&c, "y")?, 1, 1))
        })
        .or_else(|| ago(sentence, now))
        .or_else(|| last(sentence, now))?;
    let millis = day.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    Some(Timestamp::from_millis(millis))
}

fn num(c: &regex::Captures<'_>, name: &str) -> Option<u32> {
    c.name(name)?.as_str().parse().ok()
}

fn ymd(y: u32, m: u32, d: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, d)
}

fn explicit(sentence: &str, now: NaiveDate) -> Option<NaiveDate> {
    if let Some(c) = ISO.captures(sentence) {
        return ymd(num(&c, "y")?, num(&c, "m")?, num(&c, "d")?);
    }
    let c = MONTH.captures(sentence)?;
    let name = c.name("month")?.as_str().to_lowercase();
    // "may" alone is a verb as often as a month: only with a day or a year.
    let day = num(&c, "d1").or_else(|| num(&c, "d2"));
    let year = num(&c, "y");
    if name == "may" && day.is_none() && year.is_none() {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == name)? as u32 + 1;
    let day = day.unwrap_or(1);
    match year {
        Some(y) => ymd(y, month, day),
        None => {
            let this_year = ymd(now.year() as u32, month, day)?;
            if this_year <= now {
                Some(this_year)
            } else {
                ymd(now.year() as u32 - 1, month, day)
            }
        }
    }
}

fn ago(sentence: &str, now: NaiveDate) -> Option<NaiveDate> {
    let c = AGO.captures(sentence)?;
    let n = match c.name("n")?.as_str().to_lowercase().as_str() {
        "a" | "an" | "one" => 1,
        "a couple of" | "two" => 2,
        "a few" | "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        digits => digits.parse().ok()?,
    };
    back(now, &c.name("unit")?.as_str().to_lowercase(), n)
}

fn last(sentence: &str, now: NaiveDate) -> Option<NaiveDate> {
    let c = LAST.captures(sentence)?;
    let which = c.name("which")?.as_str().to_lowercase();
    let which: Vec<&str> = which.split_whitespace().collect();
    match which[..] {
        ["today"] => Some(now),
        ["yesterday"] | ["last", "night"] => back(now, "day", 1),
        ["last", "weekend"] => back(now, "week", 1),
        ["last", unit] => back(now, unit, 1),
        _ => None,
    }
}

/// `n` units before `now`.
fn back(now: NaiveDate, unit: &str, n: u32) -> Option<NaiveDate> {
    match unit {
        "day" => now.checked_sub_signed(Duration::days(i64::from(n))),
        "week" => now.checked_sub_signed(Duration::weeks(i64::from(n))),
        "month" => now.checked_sub_months(Months::new(n)),
        "year" => now.checked_sub_months(Months::new(n.checked_mul(12)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("time")
    }

    fn day(sentence: &str) -> Option<String> {
        date_in(sentence, at("2025-05-20T15:30:00Z")).map(|t| t.to_string()[..10].to_owned())
    }

    #[test]
    fn dates_resolve_against_the_time_written() {
        for (sentence, want) in [
            ("Alice moved to Lisbon yesterday", Some("2025-05-19")),
            ("I joined Initech last month", Some("2025-04-20")),
            ("Bob started there three years ago", Some("2022-05-20")),
            ("We met 10 days ago", Some("2025-05-10")),
            ("She has lived in Oslo since 2019", Some("2019-01-01")),
            ("I moved to Berlin in March", Some("2025-03-01")),
            ("I moved to Berlin in August", Some("2024-08-01")),
            ("He married Ana on June 1, 2023", Some("2023-06-01")),
            ("He married Ana on 1 June 2023", Some("2023-06-01")),
            ("The lease began 2024-02-29", Some("2024-02-29")),
            ("It happened in May 2021", Some("2021-05-01")),
            ("She may move to Rome", None),
            ("Alice works at Google", None),
            ("The lease began 2024-02-30", None),
        ] {
            assert_eq!(day(sentence).as_deref(), want, "{sentence}");
        }
    }
}

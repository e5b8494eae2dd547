//! `muisti bench scale`: ingest and recall on a deterministic synthetic corpus of N memories.

use std::time::Instant;

use anyhow::Result;
use muisti::{Engine, Filter, Namespace, Partition, Put, RecallMode, RecallRequest};
use serde::Serialize;

const NAMES: &[&str] = &[
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun", "Kofi",
    "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
];
const VERBS: &[&str] = &[
    "moved to",
    "visited",
    "loves",
    "works at",
    "studied in",
    "bought a flat in",
    "met a friend in",
    "is planning a trip to",
    "used to live in",
    "ran a marathon in",
    "opened a bakery in",
    "volunteers in",
    "teaches yoga in",
    "adopted a cat in",
    "got married in",
];
const PLACES: &[&str] = &[
    "Lisbon", "Porto", "Berlin", "Nairobi", "Osaka", "Lima", "Toronto", "Krakow", "Seville",
    "Hanoi", "Accra", "Bergen", "Quito", "Tbilisi", "Perth", "Dakar", "Riga", "Cusco",
];
const WHEN: &[&str] = &[
    "last spring",
    "in March",
    "two years ago",
    "every summer",
    "on weekends",
    "since 2019",
    "after the pandemic",
    "for a conference",
    "with her sister",
    "with his parents",
];

/// Memories per `remember_many` (one transaction).
const BATCH: usize = 5_000;

/// A small deterministic generator (xorshift).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }

    /// A pronounceable made-up word, so the vocabulary grows with the corpus.
    fn word(&mut self) -> String {
        const SYL: &[&str] = &[
            "ka", "lo", "mi", "ter", "van", "su", "dre", "po", "lin", "gar",
        ];
        (0..2 + self.next() % 2).map(|_| self.pick(SYL)).collect()
    }
}

fn sentence(rng: &mut Rng, i: usize) -> String {
    format!(
        "{} {} {} {} and mentioned the {} project (note {i})",
        rng.pick(NAMES),
        rng.pick(VERBS),
        rng.pick(PLACES),
        rng.pick(WHEN),
        rng.word()
    )
}

#[derive(Serialize)]
pub(crate) struct Report {
    memories: usize,
    users: usize,
    ingest_per_s: f64,
    queries: usize,
    /// The first recall, which loads the partition into memory (not in the percentiles).
    first_query_ms: f64,
    /// Seconds waited after the first recall for the ANN graph (unfiltered runs).
    index_wait_s: f64,
    unfiltered: bool,
    query_p50_ms: f64,
    query_p99_ms: f64,
    peak_rss_mib: f64,
}

/// How many users a corpus of `memories` has (1,000 memories each).
pub(crate) fn users_for(memories: usize) -> usize {
    (memories / 1000).max(1)
}

/// Empties `partition` and writes the deterministic corpus of `memories` into it, in
/// transactions of [`BATCH`].
pub(crate) fn seed(
    engine: &Engine,
    partition: &Partition,
    memories: usize,
    rng: &mut Rng,
) -> Result<()> {
    engine.store().flush(partition)?;
    let users = users_for(memories);
    let mut batch = Vec::with_capacity(BATCH);
    for i in 0..memories {
        let mut put = Put::new(partition.clone(), None, sentence(rng, i));
        put.owner.user_id = Some(format!("user-{}", i % users));
        batch.push(put);
        if batch.len() == BATCH {
            engine.remember_many(std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        engine.remember_many(batch)?;
    }
    Ok(())
}

/// A paraphrase-like question about a random place.
pub(crate) fn question(rng: &mut Rng) -> String {
    format!(
        "who {} {} {}?",
        rng.pick(VERBS),
        rng.pick(PLACES),
        rng.pick(WHEN)
    )
}

/// A new memory's text, like the corpus's.
pub(crate) fn fact(rng: &mut Rng, i: usize) -> String {
    sentence(rng, i)
}

/// `unfiltered`: recall across all users; `wait_for_index` is called after the first recall
/// (which starts building an ANN graph where the store has one) and before the timed ones.
pub(crate) fn run(
    engine: &Engine,
    memories: usize,
    queries: usize,
    unfiltered: bool,
    wait_for_index: &dyn Fn(&Partition),
) -> Result<Report> {
    let ns = Namespace::new("scale")?;
    let partition = Partition::new(engine.tenant().clone(), ns.clone());
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let users = users_for(memories);
    let start = Instant::now();
    seed(engine, &partition, memories, &mut rng)?;
    let ingest = start.elapsed().as_secs_f64();
    // Queries: a user and a paraphrase-like question about a random place.
    let mut latencies = Vec::with_capacity(queries);
    let mut first_query_ms = 0.0;
    let mut index_wait_s = 0.0;
    for q in 0..=queries {
        let req = RecallRequest {
            namespace: ns.clone(),
            query: question(&mut rng),
            limit: 10,
            filter: Filter {
                user_id: (!unfiltered).then(|| format!("user-{}", q % users)),
                ..Filter::default()
            },
            min_score: None,
            mode: RecallMode::Hybrid,
        };
        let t = Instant::now();
        engine.recall(&req)?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if q == 0 {
            first_query_ms = ms;
            if unfiltered {
                let t = Instant::now();
                wait_for_index(&partition);
                index_wait_s = t.elapsed().as_secs_f64();
            }
        } else {
            latencies.push(ms);
        }
    }
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    let report = Report {
        memories,
        users,
        ingest_per_s: memories as f64 / ingest,
        queries,
        first_query_ms,
        index_wait_s,
        unfiltered,
        query_p50_ms: pct(0.5),
        query_p99_ms: pct(0.99),
        peak_rss_mib: crate::locomo::peak_rss_mib(),
    };
    engine.flush_access();
    Ok(report)
}

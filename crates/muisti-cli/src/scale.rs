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
    /// Memories written per second, when this run wrote the corpus (not when the store
    /// already held it).
    ingest_per_s: Option<f64>,
    queries: usize,
    /// The first recall after the store was opened again (a restart): it loads what the
    /// query needs into memory (not in the percentiles).
    first_query_ms: f64,
    /// Seconds waited after the first recall for the ANN graph (unfiltered runs).
    index_wait_s: f64,
    unfiltered: bool,
    /// The recalls after the first (user-filtered: each user's first recall loads that
    /// user's rows unless the whole partition is loaded).
    query_p50_ms: f64,
    query_p95_ms: f64,
    query_p99_ms: f64,
    /// The same recalls again.
    repeat_p50_ms: f64,
    repeat_p99_ms: f64,
    /// The SQLite store's cache budget and what its copies hold after the recalls
    /// (estimated), in MiB.
    cache_budget_mib: Option<f64>,
    cache_mib: Option<f64>,
    /// What the SQLite store holds after the recalls, by part (estimated), in MiB.
    memory: Option<MemoryParts>,
    /// Resident memory after the recalls: all, anonymous (the heap: the cache, SQLite's page
    /// caches, the model) and file-backed (SQLite's memory-mapped file, the binary); and
    /// its peak over the run (the ingest included).
    rss_mib: f64,
    rss_anon_mib: f64,
    rss_file_mib: f64,
    peak_rss_mib: f64,
}

/// The SQLite store's memory by part ([`muisti::CacheMemory`]), in MiB, and what
/// resident memory holds besides.
#[derive(Serialize)]
pub(crate) struct MemoryParts {
    /// The copies' rows (fields for filters and rescoring, the indexes by id and session).
    copies_rows_mib: f64,
    /// The copies' quantised vectors.
    copies_vectors_mib: f64,
    /// The copies' full-text terms (forward index, term ids, users' postings).
    copies_text_mib: f64,
    /// HNSW graphs.
    graphs_mib: f64,
    /// Decoded records, and their budget (on top of the copies').
    records_mib: f64,
    records_budget_mib: f64,
    /// Resident memory less all of the above: SQLite's page caches, the file's mapped
    /// pages, the allocator's free and part-used pages, the program and its models.
    other_rss_mib: f64,
}

impl MemoryParts {
    fn of(m: &muisti::CacheMemory, rss_mib: f64) -> Self {
        let mib = |b: usize| b as f64 / f64::from(1 << 20);
        let held = m.copies.total() + m.graphs + m.records;
        Self {
            copies_rows_mib: mib(m.copies.rows),
            copies_vectors_mib: mib(m.copies.vectors),
            copies_text_mib: mib(m.copies.text),
            graphs_mib: mib(m.graphs),
            records_mib: mib(m.records),
            records_budget_mib: mib(m.records_budget),
            other_rss_mib: rss_mib - mib(held),
        }
    }
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

/// What [`run`] reads from the SQLite store, when it is one.
pub(crate) struct Probe<'a> {
    /// Waits for the partition's ANN graph, if it gets one.
    pub(crate) wait_for_index: &'a dyn Fn(&Partition),
    /// What the store holds in memory, by part.
    pub(crate) cache: &'a dyn Fn() -> Option<muisti::CacheMemory>,
}

/// Writes the corpus unless the store already holds exactly `memories` in its `scale`
/// namespace; the memories per second written, if it did.
pub(crate) fn prepare(engine: &Engine, memories: usize) -> Result<Option<f64>> {
    let partition = Partition::new(engine.tenant().clone(), Namespace::new("scale")?);
    if engine.store().count(&partition, &Filter::default())? == memories as u64 {
        return Ok(None);
    }
    let start = Instant::now();
    seed(
        engine,
        &partition,
        memories,
        &mut Rng(0x5eed_1234_abcd_ef01),
    )?;
    Ok(Some(memories as f64 / start.elapsed().as_secs_f64()))
}

/// Recalls over the corpus [`prepare`] wrote, on an engine opened afresh. `unfiltered`:
/// recall across all users; the index wait comes after the first recall (which starts
/// building an ANN graph where the store has one) and before the timed ones.
pub(crate) fn run(
    engine: &Engine,
    memories: usize,
    ingest_per_s: Option<f64>,
    queries: usize,
    unfiltered: bool,
    probe: &Probe<'_>,
) -> Result<Report> {
    let ns = Namespace::new("scale")?;
    let partition = Partition::new(engine.tenant().clone(), ns.clone());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let users = users_for(memories);
    // Queries: a user and a paraphrase-like question about a random place.
    let requests: Vec<RecallRequest> = (0..=queries)
        .map(|q| RecallRequest {
            namespace: ns.clone(),
            query: question(&mut rng),
            limit: 10,
            filter: Filter {
                user_id: (!unfiltered).then(|| format!("user-{}", q % users)),
                ..Filter::default()
            },
            min_score: None,
            mode: RecallMode::Hybrid,
            include_archived: false,
            cluster: None,
            as_of: None,
            include_superseded: false,
            include_shared: false,
            exclude_key_value: false,
        })
        .collect();
    let timed = |req: &RecallRequest| -> Result<f64> {
        let t = Instant::now();
        engine.recall(req)?;
        Ok(t.elapsed().as_secs_f64() * 1000.0)
    };
    let first_query_ms = timed(&requests[0])?;
    let mut index_wait_s = 0.0;
    if unfiltered {
        let t = Instant::now();
        (probe.wait_for_index)(&partition);
        index_wait_s = t.elapsed().as_secs_f64();
    }
    let mut passes = [Vec::with_capacity(queries), Vec::with_capacity(queries)];
    for pass in &mut passes {
        for req in &requests[1..] {
            pass.push(timed(req)?);
        }
        pass.sort_by(f64::total_cmp);
    }
    let pct = |v: &[f64], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let cache = (probe.cache)();
    let rss_mib = crate::locomo::status_mib("VmRSS:");
    let mib = |b: usize| b as f64 / f64::from(1 << 20);
    let report = Report {
        memories,
        users,
        ingest_per_s,
        queries,
        first_query_ms,
        index_wait_s,
        unfiltered,
        query_p50_ms: pct(&passes[0], 0.5),
        query_p95_ms: pct(&passes[0], 0.95),
        query_p99_ms: pct(&passes[0], 0.99),
        repeat_p50_ms: pct(&passes[1], 0.5),
        repeat_p99_ms: pct(&passes[1], 0.99),
        cache_budget_mib: cache.map(|m| mib(m.budget)),
        cache_mib: cache.map(|m| mib(m.copies.total() + m.graphs)),
        memory: cache.map(|m| MemoryParts::of(&m, rss_mib)),
        rss_mib,
        rss_anon_mib: crate::locomo::status_mib("RssAnon:"),
        rss_file_mib: crate::locomo::status_mib("RssFile:"),
        peak_rss_mib: crate::locomo::peak_rss_mib(),
    };
    engine.flush_access();
    Ok(report)
}

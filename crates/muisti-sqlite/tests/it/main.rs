//! Conformance of the SQLite store, and what only SQLite has.

use std::sync::Arc;

use muisti_core::{Limits, Store};
use muisti_sqlite::SqliteStore;
use muisti_testkit::Harness;

struct SqliteHarness(tempfile::TempDir);

/// Waits (at most a minute) until `ready` holds, for what happens in the background.
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{what}: not within a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

impl SqliteHarness {
    fn path(&self) -> std::path::PathBuf {
        self.0.path().join("muisti.db")
    }
}

impl Harness for SqliteHarness {
    fn open(&self) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(self.path()).expect("opens"))
    }
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
        Arc::new(
            SqliteStore::open(self.path())
                .expect("opens")
                .with_limits(limits),
        )
    }
    fn location(&self) -> Option<String> {
        Some(self.path().display().to_string())
    }
    fn open_at(&self, location: &str) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(location).expect("opens"))
    }
}

fn harness() -> Option<SqliteHarness> {
    Some(SqliteHarness(tempfile::tempdir().expect("temp dir")))
}

muisti_testkit::conformance!(harness());
muisti_testkit::conformance_persistent!(harness());

#[test]
fn not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    std::fs::write(&path, b"this is not a sqlite database, just text long enough to look like a header ......................................").expect("writes");
    let err = SqliteStore::open(&path).err().expect("refuses");
    assert_eq!(err.kind(), muisti_core::ErrorKind::Corrupted, "{err}");
}

#[test]
fn a_version_1_database_is_migrated_and_its_records_are_searchable() {
    use muisti_core::{Filter, Key, Namespace, Partition, Put, TextQuery};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    let p = Partition::of(Namespace::default_ns());
    let id = {
        let s = SqliteStore::open(&path).expect("opens");
        s.put(Put::new(
            p.clone(),
            Some(Key::new("city").expect("valid")),
            "Lisbon since March",
        ))
        .expect("writes")
        .memory
        .id
    };
    // Turn it back into what version 1 wrote.
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute_batch(
        "DROP TRIGGER user_copy_insert; DROP TRIGGER user_copy_update; \
         DROP TRIGGER user_copy_moved; DROP TRIGGER user_copy_delete; DROP TABLE user_copies; \
         DROP TABLE user_copy_parts; \
         DROP TRIGGER memories_deleted; DROP TRIGGER memories_access_folded; \
         DROP INDEX memories_scope_user; DROP INDEX memories_scope_session; \
         DROP TABLE memory_terms; DROP TABLE memory_access; DROP TABLE deferred_indexes; \
         ALTER TABLE memories DROP COLUMN vector; \
         ALTER TABLE memories DROP COLUMN context; ALTER TABLE memories DROP COLUMN version; \
         PRAGMA user_version = 1;",
    )
    .expect("downgrades");
    drop(conn);
    let s = SqliteStore::open(&path).expect("migrates");
    let hits = s
        .text_search(&TextQuery {
            partition: p,
            query: "where is lisbon".into(),
            filter: Filter::default(),
            limit: 5,
        })
        .expect("searches");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, id);
    let version: i64 = rusqlite::Connection::open(&path)
        .expect("opens")
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("reads");
    assert_eq!(version, 8);
    let m = s
        .get(&muisti_core::Locator::Id {
            tenant: muisti_core::Tenant::default(),
            id,
        })
        .expect("reads")
        .expect("there");
    assert_eq!(m.version, 1, "records from before versions start at 1");
}

#[test]
fn a_version_3_database_keeps_its_terms_and_access_counts() {
    use muisti_core::{Filter, Key, Locator, Namespace, Partition, Put, Tenant, TextQuery};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    let p = Partition::of(Namespace::default_ns());
    let id = {
        let s = SqliteStore::open(&path).expect("opens");
        let id = s
            .put(Put::new(
                p.clone(),
                Some(Key::new("city").expect("valid")),
                "Lisbon since March",
            ))
            .expect("writes")
            .memory
            .id;
        s.touch(&Tenant::default(), &[id], muisti_core::Timestamp::now())
            .expect("touches");
        id
    };
    // What version 3 kept: terms in FTS5, the access count in the record.
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute_batch(
        "CREATE VIRTUAL TABLE memories_fts USING fts5(tokens, context, scope, \
           tokenize = 'unicode61 remove_diacritics 0'); \
         INSERT INTO memories_fts (rowid, tokens, context, scope) \
           SELECT rowid, tokens, context, '' FROM memory_terms; \
         DROP TRIGGER user_copy_insert; DROP TRIGGER user_copy_update; \
         DROP TRIGGER user_copy_moved; DROP TRIGGER user_copy_delete; DROP TABLE user_copies; \
         DROP TABLE user_copy_parts; \
         DROP TRIGGER memories_deleted; DROP TRIGGER memories_access_folded; \
         DROP INDEX memories_scope_user; DROP INDEX memories_scope_session; \
         UPDATE memories SET access_count = 1 + (SELECT access_count FROM memory_access); \
         DROP TABLE memory_terms; DROP TABLE memory_access; DROP TABLE deferred_indexes; \
         PRAGMA user_version = 3;",
    )
    .expect("downgrades");
    drop(conn);
    let s = SqliteStore::open(&path).expect("migrates");
    let hits = s
        .text_search(&TextQuery {
            partition: p,
            query: "lisbon".into(),
            filter: Filter::default(),
            limit: 5,
        })
        .expect("searches");
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![id]);
    let at = Locator::Id {
        tenant: Tenant::default(),
        id,
    };
    assert_eq!(s.get(&at).expect("reads").expect("there").access_count, 2);
    s.touch(&Tenant::default(), &[id], muisti_core::Timestamp::now())
        .expect("touches");
    assert_eq!(s.get(&at).expect("reads").expect("there").access_count, 3);
    assert!(s.delete(&at).expect("deletes"));
    let left: i64 = rusqlite::Connection::open(&path)
        .expect("opens")
        .query_row(
            "SELECT (SELECT COUNT(*) FROM memory_terms) + (SELECT COUNT(*) FROM memory_access)",
            [],
            |r| r.get(0),
        )
        .expect("reads");
    assert_eq!(
        left, 0,
        "a deleted record leaves no terms and no access row"
    );
}

#[test]
fn a_database_from_a_newer_muisti_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    drop(SqliteStore::open(&path).expect("opens"));
    rusqlite::Connection::open(&path)
        .expect("opens")
        .execute_batch("PRAGMA user_version = 99;")
        .expect("sets");
    let err = SqliteStore::open(&path).err().expect("refuses");
    assert!(err.to_string().contains("newer muisti"), "{err}");
}

/// Two handles on one file, as two processes would hold it, writing vectors of the default
/// namespace by key; the nearest to a query, as the first handle finds it.
struct TwoHandles {
    _dir: tempfile::TempDir,
    reader: SqliteStore,
    writer: SqliteStore,
    p: muisti_core::Partition,
}

impl TwoHandles {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("muisti.db");
        Self {
            reader: SqliteStore::open(&path).expect("opens"),
            writer: SqliteStore::open(&path).expect("opens"),
            _dir: dir,
            p: muisti_core::Partition::of(muisti_core::Namespace::default_ns()),
        }
    }

    fn put(&self, store: &SqliteStore, key: &str, v: Vec<f32>) -> muisti_core::MemoryId {
        let valid = muisti_core::Key::new(key).expect("valid");
        let mut put = muisti_core::Put::new(self.p.clone(), Some(valid), key);
        put.embedding_model = Some("m".into());
        put.embedding = Some(v);
        store.put(put).expect("writes").memory.id
    }

    fn delete(&self, key: &str) {
        self.writer
            .delete(&muisti_core::Locator::Key {
                partition: self.p.clone(),
                key: muisti_core::Key::new(key).expect("valid"),
            })
            .expect("deletes");
    }

    fn nearest(&self, v: Vec<f32>) -> muisti_core::MemoryId {
        self.reader
            .vector_search(&muisti_core::VectorQuery {
                partition: self.p.clone(),
                vector: v,
                filter: muisti_core::Filter::default(),
                limit: 1,
            })
            .expect("searches")[0]
            .id
    }
}

#[test]
fn cached_vectors_see_writes_from_another_handle() {
    let h = TwoHandles::new();
    let a = h.put(&h.reader, "a", vec![1.0, 0.0]);
    assert_eq!(
        h.nearest(vec![0.0, 1.0]),
        a,
        "loads the partition into the cache"
    );
    // Another handle (as another process would) writes a better match.
    let b = h.put(&h.writer, "b", vec![0.0, 1.0]);
    assert_eq!(h.nearest(vec![0.0, 1.0]), b);
    // And deletes it.
    h.delete("b");
    assert_eq!(h.nearest(vec![0.0, 1.0]), a);
}

/// In a read run, the store looks at other handles' (processes') commits at the run's first
/// read only: the run reads one snapshot, and the next run sees what was committed since.
#[test]
fn a_read_run_looks_at_other_handles_commits_once() {
    use muisti_core::ReadRun;
    let h = TwoHandles::new();
    let best = || h.nearest(vec![0.0, 1.0]);
    let a = h.put(&h.reader, "a", vec![1.0, 0.0]);
    let run = ReadRun::open();
    assert_eq!(best(), a, "loads the copy, checks");
    let b = h.put(&h.writer, "b", vec![0.0, 1.0]);
    assert_eq!(best(), a, "the run's snapshot");
    drop(run);
    assert_eq!(best(), b, "outside a run, every read checks");
    let outer = ReadRun::open();
    assert_eq!(best(), b);
    h.delete("b");
    assert_eq!(best(), b, "the outer run's snapshot");
    {
        let _inner = ReadRun::open();
        assert_eq!(best(), a, "a run of its own checks");
    }
    assert_eq!(best(), a, "the copy saw the delete");
    drop(outer);
    let c = h.put(&h.writer, "c", vec![0.1, 1.0]);
    let _next = ReadRun::open();
    assert_eq!(best(), c, "a new run checks");
}

#[test]
fn large_partitions_search_through_an_hnsw_graph() {
    use muisti_core::{Category, Filter, Key, Namespace, Partition, Put, VectorQuery};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    let ann = SqliteStore::open(&path)
        .expect("opens")
        .with_ann_threshold(500);
    let exact = SqliteStore::open(&path)
        .expect("opens")
        .with_ann_threshold(0);
    let p = Partition::of(Namespace::default_ns());
    // Deterministic clustered vectors: 20 centres, 100 noisy points each.
    let mut x: u64 = 0x1234_5678_9abc_def1;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 2001) as f32 / 1000.0 - 1.0
    };
    let dim = 32;
    let centres: Vec<Vec<f32>> = (0..20)
        .map(|_| (0..dim).map(|_| rand()).collect())
        .collect();
    let unit = |mut v: Vec<f32>| {
        muisti_core::text::normalize(&mut v);
        v
    };
    let puts: Vec<Put> = (0..2000)
        .map(|i| {
            let c = &centres[i % 20];
            let mut put = Put::new(
                p.clone(),
                Some(Key::new(format!("k{i}")).expect("valid")),
                "x",
            );
            put.category = if i % 2 == 0 {
                Category::Core
            } else {
                Category::Daily
            };
            put.embedding_model = Some("m".into());
            put.embedding = Some(unit(c.iter().map(|v| v + 0.3 * rand()).collect()));
            put
        })
        .collect();
    ann.put_many(puts).expect("writes");
    let search = |store: &SqliteStore, q: &[f32], filter: Filter| {
        store
            .vector_search(&VectorQuery {
                partition: p.clone(),
                vector: q.to_vec(),
                filter,
                limit: 10,
            })
            .expect("searches")
            .into_iter()
            .map(|s| s.id)
            .collect::<Vec<_>>()
    };
    let queries: Vec<Vec<f32>> = (0..20)
        .map(|i| unit(centres[i].iter().map(|v| v + 0.3 * rand()).collect()))
        .collect();
    // The first query starts building the graph; wait for it (bounded).
    search(&ann, &queries[0], Filter::default());
    wait_until("the graph is built", || ann.ann_ready(&p));
    let (mut found, mut total) = (0, 0);
    for q in &queries {
        let truth = search(&exact, q, Filter::default());
        let got = search(&ann, q, Filter::default());
        assert_eq!(got.len(), 10);
        total += truth.len();
        found += got.iter().filter(|id| truth.contains(id)).count();
        // Filters hold on the graph path too.
        let daily = Filter {
            category: Some(Category::Daily),
            ..Filter::default()
        };
        let got = search(&ann, q, daily.clone());
        let all_daily: Vec<_> = search(&exact, q, daily);
        assert!(
            got.iter()
                .all(|id| all_daily.contains(id) || !all_daily.is_empty())
        );
    }
    let recall = found as f64 / total as f64;
    assert!(
        recall >= 0.9,
        "recall@10 of the graph against exact search: {recall}"
    );
    // A deleted record is never returned (the copy and its graph are dropped and rebuilt).
    let top = search(&ann, &queries[3], Filter::default())[0];
    ann.delete(&muisti_core::Locator::Id {
        tenant: p.tenant.clone(),
        id: top,
    })
    .expect("deletes");
    assert!(!search(&ann, &queries[3], Filter::default()).contains(&top));
}

/// A deleted memory leaves no byte of itself in the store's files: not its text, not its
/// full-text terms, not its part of its user's kept copy (secure_delete zeroes freed space;
/// the terms table and the parts lose the record's row with it; the WAL is checkpointed
/// away when the store closes).
#[test]
fn a_deleted_canary_leaves_nothing_in_the_files() {
    use muisti_core::{Locator, Namespace, Partition, Put, Tenant};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    let p = Partition::of(Namespace::default_ns());
    {
        let s = SqliteStore::open(&path).expect("opens");
        // Enough other records that the canary shares pages with live data; all of one
        // user, whose copy the store keeps as the records are written.
        let owned = |text: String| {
            let mut put = Put::new(p.clone(), None, text);
            put.owner.user_id = Some("u".into());
            put
        };
        let others: Vec<Put> = (0..200)
            .map(|i| owned(format!("an ordinary memory number {i}")))
            .collect();
        s.put_many(others).expect("writes");
        let canary = s
            .put(owned("CANARYzq7 secret diagnosis xylophone".into()))
            .expect("writes")
            .memory;
        for user in [Some("u".to_owned()), None] {
            s.text_search(&muisti_core::TextQuery {
                partition: p.clone(),
                query: "xylophone".into(),
                filter: muisti_core::Filter {
                    user_id: user,
                    ..Default::default()
                },
                limit: 5,
            })
            .expect("searches");
        }
        let parts = kept_parts(&path, "u");
        assert_eq!(parts.len(), 201, "the user's copy is kept");
        assert!(
            parts
                .iter()
                .any(|p| p.windows(9).any(|w| w == b"canaryzq7")),
            "with the canary's terms"
        );
        assert!(
            s.delete(&Locator::Id {
                tenant: Tenant::default(),
                id: canary.id,
            })
            .expect("deletes")
        );
    }
    let (hits, files) =
        muisti_testkit::needles_in_files(dir.path(), &["canaryzq7", "xylophon", "diagnos"]);
    assert!(files > 0, "the store has files");
    assert!(hits.is_empty(), "still there: {hits:?}");
}

/// A path in a directory that does not exist is an error (a typo must not create a new,
/// empty store), and nothing is created.
#[test]
fn a_missing_directory_is_an_error_not_a_new_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("no").join("such").join("muisti.db");
    let err = SqliteStore::open(&path).err().expect("refused");
    assert_eq!(err.kind(), muisti_core::ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!dir.path().join("no").exists(), "nothing created");
}

/// A misspelt URL parameter is refused, not ignored.
#[test]
fn unknown_url_parameters_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = format!("sqlite://{}/muisti.db", dir.path().display());
    let mut registry = muisti_store::StoreRegistry::new();
    muisti_sqlite::register(&mut registry);
    assert!(registry.open(&format!("{base}?synchronous=full")).is_ok());
    let err = registry
        .open(&format!("{base}?synchronus=full"))
        .err()
        .expect("refused");
    assert!(err.to_string().contains("unknown parameter"), "{err}");
}

/// The in-memory copy follows this process's writes in place (no reload): after every kind
/// of write (new records, key replacements, updates of text, owner and tags), a store that
/// kept its copy answers vector search, full-text search and the rank fields exactly as a
/// store that loads the file afresh; with the HNSW graph built, records added after it are
/// found too.
#[test]
fn the_copy_follows_writes_as_a_fresh_load_sees_them() {
    copies_follow_writes(
        |path| SqliteStore::open(path).expect("opens"),
        Queries::Mixed,
    );
}

/// The same with only user-filtered queries: the store holds one-user copies (never the
/// whole partition), and they follow writes too, records moving between users included.
#[test]
fn one_user_copies_follow_writes_as_a_fresh_load_sees_them() {
    copies_follow_writes(
        |path| {
            SqliteStore::open(path)
                .expect("opens")
                .with_background_loads(false)
        },
        Queries::UsersOnly,
    );
}

/// The same within a budget smaller than the partition's copy: the whole copy is never kept
/// (each query that needs it loads it), one-user copies are dropped least recently used
/// first, the answers stay exact, and the copies held never exceed the budget.
#[test]
fn copies_within_a_budget_answer_exactly_and_stay_within_it() {
    copies_follow_writes(
        |path| {
            SqliteStore::open(path)
                .expect("opens")
                .with_cache_budget(BUDGET)
                .with_background_loads(false)
        },
        Queries::Budget,
    );
}

const BUDGET: usize = 24 * 1024;

#[derive(Clone, Copy, PartialEq)]
enum Queries {
    /// Filtered and unfiltered; then the HNSW graph.
    Mixed,
    /// Filtered by user only.
    UsersOnly,
    /// Filtered and unfiltered, in a store with a [`BUDGET`].
    Budget,
}

fn copies_follow_writes(open: impl Fn(&std::path::Path) -> SqliteStore, queries: Queries) {
    use muisti_core::{
        Filter, Key, ListQuery, Locator, Namespace, Partition, Patch, Put, Tenant, TextQuery,
        UpdateRequest, VectorQuery,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    // Every store of the test reads this clock: it moves past some records' expiry at the end.
    let clock = Arc::new(muisti_core::ManualClock::new(
        muisti_core::Timestamp::from_millis(1_800_000_000_000),
    ));
    let warm = open(&path).with_clock(clock.clone()).with_ann_threshold(40);
    let p = Partition::new(
        Tenant::new("t").expect("tenant"),
        Namespace::new("n").expect("ns"),
    );
    let mut seed = 7u32;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let words = [
        "apple", "river", "engine", "violet", "harbor", "canyon", "lantern",
    ];
    let vector = |r: u32| -> Vec<f32> {
        let mut v: Vec<f32> = (0..16)
            .map(|k| ((r >> (k % 16)) & 7) as f32 - 3.5)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|x| *x /= n);
        v
    };
    let put = |r: u32, key: Option<String>, vector: Vec<f32>| {
        let text = format!(
            "{} {} {}",
            words[r as usize % 7],
            words[(r / 7) as usize % 7],
            r % 97
        );
        let mut put = Put::new(p.clone(), key.map(|k| Key::new(k).expect("key")), text);
        put.owner.user_id = Some(format!("u{}", r % 3));
        put.owner.session_id = Some(format!("s{}", r % 4));
        put.embedding_model = Some("m".into());
        put.embedding = Some(vector);
        // Fields the decoded records' cache keeps as written: they must read back as the
        // database has them.
        put.importance = Some((r % 10) as f32 / 9.0);
        put.tags = vec![format!("t{}", r % 5)];
        put.metadata.insert(
            "weight".into(),
            serde_json::json!(0.1 + f64::from(r % 1000) / 7.0),
        );
        put
    };
    let compare = |warm: &SqliteStore, ids: &[muisti_core::MemoryId], step: &str| {
        let cold = SqliteStore::open(&path)
            .expect("opens")
            .with_clock(clock.clone())
            .with_ann_threshold(0);
        for q in 0..6u32 {
            let user = (q % 2 == 0 || queries == Queries::UsersOnly).then(|| format!("u{}", q % 3));
            let filter = Filter {
                user_id: user,
                ..Filter::default()
            };
            let text = TextQuery {
                partition: p.clone(),
                query: format!("{} {}", words[q as usize], words[(q as usize + 3) % 7]),
                filter: filter.clone(),
                limit: 10,
            };
            let a = warm.text_search(&text).expect("searches");
            let b = cold.text_search(&text).expect("searches");
            assert_eq!(
                a.iter().map(|s| s.id).collect::<Vec<_>>(),
                b.iter().map(|s| s.id).collect::<Vec<_>>(),
                "{step}: full text"
            );
            // And as the contract's reference ranks the records the filter admits.
            let records = muisti_core::list_all(&cold, &p, &filter).expect("lists");
            let want = muisti_testkit::bm25_reference(&records, &text.query, 10);
            assert_eq!(a.len(), want.len(), "{step}: full text as the reference");
            for (got, want) in a.iter().zip(&want) {
                assert!(
                    (got.score - want.score).abs() <= 1e-4 * want.score.abs().max(1.0),
                    "{step}: {got:?} vs the reference {want:?}"
                );
            }
            if filter.user_id.is_some() {
                // Exact on both sides below the threshold: the same answer.
                let vq = VectorQuery {
                    partition: p.clone(),
                    vector: (0..16).map(|k| ((q + k) % 5) as f32 - 2.0).collect(),
                    filter: filter.clone(),
                    limit: 10,
                };
                let a = warm.vector_search(&vq).expect("searches");
                let b = cold.vector_search(&vq).expect("searches");
                assert_eq!(
                    a.iter().map(|s| s.id).collect::<Vec<_>>(),
                    b.iter().map(|s| s.id).collect::<Vec<_>>(),
                    "{step}: vectors"
                );
                // Of the records the filter admits (live ones), as many as asked for.
                let admitted: std::collections::HashSet<_> = records.iter().map(|m| m.id).collect();
                assert_eq!(a.len(), admitted.len().min(10), "{step}: vector hits");
                assert!(
                    a.iter().all(|s| admitted.contains(&s.id)),
                    "{step}: a vector hit the filter does not admit"
                );
                let ids: Vec<_> = b.iter().map(|s| s.id).collect();
                assert_eq!(
                    warm.rank_fields(&p, &ids).expect("fields"),
                    cold.rank_fields(&p, &ids).expect("fields"),
                    "{step}: rank fields"
                );
            }
        }
        // A session's records, listed from the copy, as the database lists them.
        let truth = SqliteStore::open(&path)
            .expect("opens")
            .with_clock(clock.clone())
            .with_cache_budget(0);
        for session in 0..4 {
            for user in [None, Some("u1".to_owned())] {
                for after in [None, ids.get(ids.len() / 2).copied()] {
                    let query = ListQuery {
                        partition: p.clone(),
                        filter: Filter {
                            session_id: Some(format!("s{session}")),
                            user_id: user.clone(),
                            ..Filter::default()
                        },
                        after,
                        limit: 3,
                    };
                    assert_eq!(
                        warm.list(&query).expect("lists"),
                        truth.list(&query).expect("lists"),
                        "{step}: list {query:?}"
                    );
                }
            }
        }
        // The decoded records (read again and again) as the database has them.
        assert_eq!(
            warm.get_many(&p.tenant, ids).expect("reads"),
            cold.get_many(&p.tenant, ids).expect("reads"),
            "{step}: records"
        );
        if queries == Queries::Budget {
            assert!(
                warm.cache_bytes() <= BUDGET,
                "{step}: {} bytes held",
                warm.cache_bytes()
            );
        }
    };
    let mut ids = Vec::new();
    for i in 0..60u32 {
        let r = rand();
        ids.push(
            warm.put(put(r, Some(format!("k{i}")), vector(r)))
                .expect("writes")
                .memory
                .id,
        );
    }
    compare(&warm, &ids, "loaded");
    let mut deleted = 0;
    let mut expiring = Vec::new();
    for step in 0..40u32 {
        let r = rand();
        match step % 4 {
            // Every fourth write of a new record expires (in a day): the copies' statistics
            // then count it as the database does.
            0 if step % 16 == 8 => {
                let mut put = put(r, None, vector(r));
                put.ttl = Some(
                    muisti_core::Ttl::new(std::time::Duration::from_secs(86_400)).expect("ttl"),
                );
                let id = warm.put(put).expect("writes").memory.id;
                ids.push(id);
                expiring.push((id, r));
            }
            // And some are deleted.
            0 if step % 16 == 12 => {
                let id = ids.swap_remove(r as usize % ids.len());
                let at = Locator::Id {
                    tenant: p.tenant.clone(),
                    id,
                };
                deleted += usize::from(warm.delete(&at).expect("deletes"));
            }
            0 => {
                ids.push(warm.put(put(r, None, vector(r))).expect("writes").memory.id);
            }
            1 => {
                let key = format!("k{}", r % 60);
                warm.put(put(r, Some(key), vector(r))).expect("replaces");
            }
            _ => {
                let id = ids[r as usize % ids.len()];
                let mut patch = Patch {
                    content: Some(format!("{} lantern", words[r as usize % 7]).into()),
                    tags: Some(vec![format!("t{}", r % 5)]),
                    ..Patch::default()
                };
                if step % 4 == 3 {
                    patch.user_id = Some(Some(format!("u{}", r % 3)));
                }
                let req = UpdateRequest::new(
                    Locator::Id {
                        tenant: p.tenant.clone(),
                        id,
                    },
                    patch,
                );
                warm.update(&req).expect("updates");
            }
        }
        compare(&warm, &ids, &format!("after write {step}"));
    }
    assert!(deleted > 0, "no record was deleted");
    // Last (a write after it clears the copies): the records written to expire in a day
    // have expired, and are neither found nor counted.
    let expire = || {
        // Each expired record's own vector, asked of each user (whichever holds it now).
        let found_expired = |store: &SqliteStore| -> Vec<muisti_core::MemoryId> {
            let mut found = Vec::new();
            for (id, r) in &expiring {
                for user in 0..3 {
                    let vq = VectorQuery {
                        partition: p.clone(),
                        vector: vector(*r),
                        filter: Filter {
                            user_id: Some(format!("u{user}")),
                            ..Filter::default()
                        },
                        limit: 10,
                    };
                    let hits = store.vector_search(&vq).expect("searches");
                    found.extend(hits.iter().map(|s| s.id).filter(|hit| hit == id));
                }
            }
            found
        };
        // A store whose copies are loaded while those records are live: unlike the warm
        // one's, they hold no replaced row, so only expiry sets those records apart.
        let fresh = open(&path).with_clock(clock.clone());
        assert!(
            !found_expired(&fresh).is_empty(),
            "an expiring record is found before"
        );
        clock.advance(std::time::Duration::from_secs(2 * 86_400));
        for store in [&fresh, &warm] {
            assert_eq!(found_expired(store), [], "expired records found");
        }
        compare(&warm, &ids, "after the expiry");
    };
    if queries == Queries::Budget {
        // The budget did bite: the whole copy alone is larger.
        let unbounded = SqliteStore::open(&path).expect("opens");
        unbounded
            .text_search(&TextQuery {
                partition: p.clone(),
                query: "apple".into(),
                filter: Filter::default(),
                limit: 10,
            })
            .expect("searches");
        assert!(
            unbounded.cache_bytes() > BUDGET,
            "{}",
            unbounded.cache_bytes()
        );
    }
    if queries != Queries::Mixed {
        expire();
        return;
    }
    // The graph: built over the copy, then a record written after it is found first.
    let probe: Vec<f32> = (0..16).map(|k| if k == 0 { 1.0 } else { 0.0 }).collect();
    let nearest = |s: &SqliteStore| {
        s.vector_search(&VectorQuery {
            partition: p.clone(),
            vector: probe.clone(),
            filter: Filter::default(),
            limit: 5,
        })
        .expect("searches")
    };
    nearest(&warm);
    wait_until("the graph is built", || warm.ann_ready(&p));
    let added = warm
        .put(put(1, None, probe.clone()))
        .expect("writes")
        .memory
        .id;
    let before = warm.ann_searches(&p);
    assert_eq!(
        nearest(&warm)[0].id,
        added,
        "found through the graph's tail"
    );
    assert!(warm.ann_ready(&p), "the copy and its graph were kept");
    assert!(warm.ann_searches(&p) > before, "the graph answered");
    expire();
}

/// After a restart, a query filtered by a user loads that user's rows only: the first recall
/// does not wait for the whole partition (a million rows take seconds).
#[test]
fn a_user_filtered_query_loads_only_that_users_rows() {
    use muisti_core::{Filter, Namespace, Partition, Put, TextQuery};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    let p = Partition::of(Namespace::default_ns());
    let puts: Vec<Put> = (0..1000)
        .map(|i| {
            let mut put = Put::new(p.clone(), None, format!("note {i} about the river"));
            put.owner.user_id = Some(format!("u{}", i % 20));
            put
        })
        .collect();
    SqliteStore::open(&path)
        .expect("opens")
        .put_many(puts)
        .expect("writes");
    let restarted = SqliteStore::open(&path)
        .expect("opens")
        .with_background_loads(false);
    let search = |user: Option<&str>| {
        restarted
            .text_search(&TextQuery {
                partition: p.clone(),
                query: "river".into(),
                filter: Filter {
                    user_id: user.map(str::to_owned),
                    ..Filter::default()
                },
                limit: 100,
            })
            .expect("searches")
    };
    assert_eq!(search(Some("u3")).len(), 50);
    let one_user = restarted.cache_bytes();
    assert_eq!(search(None).len(), 100);
    let all = restarted.cache_bytes();
    assert!(
        one_user > 0 && one_user * 10 < all,
        "one user's copy {one_user} bytes, the partition's {all}"
    );
    // With the partition's copy loaded, a user's query reads it (nothing else is loaded).
    assert_eq!(search(Some("u4")).len(), 50);
    assert_eq!(restarted.cache_bytes(), all);

    // By default the first one-user load also loads the whole partition in the background,
    // which then answers (the same) and replaces the one-user copies.
    let warmed = SqliteStore::open(&path).expect("opens");
    let query = TextQuery {
        partition: p.clone(),
        query: "river".into(),
        filter: Filter {
            user_id: Some("u3".into()),
            ..Filter::default()
        },
        limit: 100,
    };
    let first = warmed.text_search(&query).expect("searches");
    wait_until("the partition is loaded", || warmed.partition_loaded(&p));
    assert_eq!(warmed.text_search(&query).expect("searches"), first);
    assert_eq!(warmed.cache_bytes(), all, "only the whole copy is kept");
}

/// What the store holds in memory is told by part: a user's copy holds its rows, its
/// vectors (at least a byte a dimension each) and its terms, no graph below the threshold,
/// and the parts add up to the copies' bytes; records read are counted within their budget.
#[test]
fn cache_memory_tells_the_copies_parts_apart() {
    use muisti_core::{Filter, Namespace, Partition, Put, TextQuery};
    const DIM: usize = 64;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    let p = Partition::of(Namespace::default_ns());
    let puts: Vec<Put> = (0..200)
        .map(|i| {
            let mut put = Put::new(p.clone(), None, format!("note {i} about the river bank"));
            put.owner.user_id = Some("u1".into());
            put.embedding_model = Some("m".into());
            put.embedding = Some((0..DIM).map(|d| ((i * 7 + d) % 13) as f32 - 6.0).collect());
            put
        })
        .collect();
    SqliteStore::open(&path)
        .expect("opens")
        .put_many(puts)
        .expect("writes");
    let store = SqliteStore::open(&path)
        .expect("opens")
        .with_background_loads(false);
    assert_eq!(store.cache_memory().copies.rows, 0, "nothing loaded yet");
    let hits = store
        .text_search(&TextQuery {
            partition: p.clone(),
            query: "river".into(),
            filter: Filter {
                user_id: Some("u1".into()),
                ..Filter::default()
            },
            limit: 10,
        })
        .expect("searches");
    let ids: Vec<_> = hits.iter().map(|h| h.id).collect();
    store
        .get_many_shared(&p.tenant, &ids)
        .expect("reads the hits");
    let m = store.cache_memory();
    assert!(m.copies.rows > 200 * 16, "{m:?}");
    assert!(m.copies.vectors >= 200 * DIM, "{m:?}");
    assert!(m.copies.text > 0, "{m:?}");
    assert_eq!(m.graphs, 0, "{m:?}");
    assert_eq!(
        m.copies.rows + m.copies.vectors + m.copies.text,
        store.cache_bytes(),
        "{m:?}"
    );
    assert!(m.records > 0 && m.records <= m.records_budget, "{m:?}");
    assert_eq!(m.budget, store.cache_budget());
}

/// Copies loaded while this process writes miss nothing: each load records what commits
/// after its snapshot (writes, owner changes, access counts) and applies it before use, so
/// every user's copy, loaded in the middle of the writes, answers as a fresh load does.
#[test]
fn copies_loaded_during_writes_miss_nothing() {
    loaded_during_writes(false);
}

/// The same with the whole partition loaded in the background meanwhile.
#[test]
fn a_background_load_during_writes_misses_nothing() {
    loaded_during_writes(true);
}

fn loaded_during_writes(background: bool) {
    use muisti_core::{
        Filter, Locator, Namespace, Partition, Patch, Put, TextQuery, Timestamp, UpdateRequest,
    };
    use std::sync::atomic::{AtomicBool, Ordering};
    const USERS: u32 = 120;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    let p = Partition::of(Namespace::default_ns());
    let store = SqliteStore::open(&path)
        .expect("opens")
        .with_background_loads(background);
    let put = |i: u32| {
        let mut put = Put::new(
            p.clone(),
            None,
            format!("river stone {} lamp {}", i % 13, i % 7),
        );
        put.owner.user_id = Some(format!("u{}", i % USERS));
        put
    };
    let mut ids: Vec<_> = store
        .put_many((0..1200).map(put).collect())
        .expect("writes")
        .into_iter()
        .map(|w| w.memory.id)
        .collect();
    let query = |s: &SqliteStore, u: u32| {
        let found = s
            .text_search(&TextQuery {
                partition: p.clone(),
                query: "river lamp 3".into(),
                filter: Filter {
                    user_id: Some(format!("u{u}")),
                    ..Filter::default()
                },
                limit: 30,
            })
            .expect("searches");
        let ids: Vec<_> = found.iter().map(|x| x.id).collect();
        let fields = s.rank_fields(&p, &ids).expect("fields");
        (found, fields)
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut i = 5000u32;
            while !done.load(Ordering::Relaxed) {
                i += 1;
                match i % 3 {
                    0 => ids.push(store.put(put(i)).expect("writes").memory.id),
                    1 => {
                        let id = ids[(i as usize * 7) % ids.len()];
                        let patch = Patch {
                            content: Some(format!("river lamp {}", i % 5).into()),
                            user_id: Some(Some(format!("u{}", i % USERS))),
                            ..Patch::default()
                        };
                        let at = Locator::Id {
                            tenant: p.tenant.clone(),
                            id,
                        };
                        store
                            .update(&UpdateRequest::new(at, patch))
                            .expect("updates");
                    }
                    _ => {
                        let some: Vec<_> = ids.iter().step_by(37).copied().collect();
                        store
                            .touch(&p.tenant, &some, Timestamp::from_millis(1))
                            .expect("touches");
                    }
                }
            }
        });
        for u in 0..USERS {
            query(&store, u);
        }
        if background {
            wait_until("the partition is loaded", || store.partition_loaded(&p));
        }
        done.store(true, Ordering::Relaxed);
        writer.join().expect("writer");
    });
    let cold = SqliteStore::open(&path).expect("opens");
    for u in 0..USERS {
        let (a, fa) = query(&store, u);
        let (b, fb) = query(&cold, u);
        assert_eq!(
            a.iter().map(|x| x.id).collect::<Vec<_>>(),
            b.iter().map(|x| x.id).collect::<Vec<_>>(),
            "user {u}"
        );
        assert_eq!(fa, fb, "user {u}: rank fields");
    }
}

/// `cache_mb` sets the cache budget; a value that is not a whole number of MiB in range is
/// refused with the parameter's name.
#[test]
fn the_cache_budget_comes_from_the_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    let url = |q: &str| {
        muisti_store::StoreUrl::parse(&format!("sqlite://{}?{q}", path.display())).expect("url")
    };
    let store = SqliteStore::open_url(&url("cache_mb=64")).expect("opens");
    assert_eq!(store.cache_budget(), 64 << 20);
    assert_eq!(
        SqliteStore::open_url(&url("synchronous=full"))
            .expect("opens")
            .cache_budget(),
        2 << 30,
        "the default"
    );
    for bad in ["0", "-1", "1.5", "lots", "16777217"] {
        let err = SqliteStore::open_url(&url(&format!("cache_mb={bad}")))
            .err()
            .expect("refused");
        assert!(err.to_string().contains("cache_mb"), "{bad}: {err}");
    }
}

/// With a budget too small for any copy, nothing is kept and the rescoring fields come from
/// the records: the same as a store that keeps its copy says, access counts included.
#[test]
fn rank_fields_without_a_kept_copy_come_from_the_records() {
    use muisti_core::{Filter, Namespace, Partition, Put, TextQuery, Timestamp};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    let p = Partition::of(Namespace::default_ns());
    let kept = SqliteStore::open(&path).expect("opens");
    let ids = put_ids(
        &kept,
        (0..30)
            .map(|i| {
                let mut put = Put::new(p.clone(), None, format!("river note {i}"));
                put.importance = Some((i % 10) as f32 / 10.0);
                put
            })
            .collect(),
    );
    kept.touch(&p.tenant, &ids[..5], Timestamp::from_millis(1))
        .expect("touches");
    let none_kept = SqliteStore::open(&path)
        .expect("opens")
        .with_cache_budget(1)
        .with_background_loads(false);
    let query = TextQuery {
        partition: p.clone(),
        query: "river".into(),
        filter: Filter::default(),
        limit: 30,
    };
    for s in [&kept, &none_kept] {
        assert_eq!(s.text_search(&query).expect("searches").len(), 30);
    }
    assert_eq!(none_kept.cache_bytes(), 0, "nothing kept");
    let fields = none_kept.rank_fields(&p, &ids).expect("fields");
    assert_eq!(fields.len(), ids.len());
    assert_eq!(fields, kept.rank_fields(&p, &ids).expect("fields"));
    assert_eq!(fields[0].access_count, 1);
}

/// The secondary indexes of `memories` in the file at `path`, by name.
fn secondary_indexes(path: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("opens");
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories' \
             AND sql IS NOT NULL ORDER BY name",
        )
        .expect("prepares");
    stmt.query_map([], |r| r.get(0))
        .expect("reads")
        .collect::<rusqlite::Result<_>>()
        .expect("reads")
}

#[test]
fn a_bulk_load_sets_the_indexes_aside_and_builds_them_again() {
    use muisti_core::{Key, Namespace, Partition, Put};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("muisti.db");
    let s = SqliteStore::open(&path).expect("opens");
    let all = secondary_indexes(&path);
    assert!(all.len() >= 6, "{all:?}");
    let p = Partition::of(Namespace::default_ns());
    let puts = |from: usize, to: usize| -> Vec<Put> {
        (from..to)
            .map(|i| {
                let key = Key::new(format!("k{i}")).expect("valid");
                Put::new(p.clone(), Some(key), format!("fact number {i}"))
            })
            .collect()
    };
    let n = s
        .bulk_load(&mut || {
            assert_eq!(secondary_indexes(&path), Vec::<String>::new());
            let n = s.put_many(puts(0, 100))?.len() as u64;
            // A handle opened meanwhile (as after a crash, when the load never ended)
            // builds them again.
            drop(SqliteStore::open(&path)?);
            assert_eq!(secondary_indexes(&path), all);
            Ok(n)
        })
        .expect("loads");
    assert_eq!(n, 100);
    assert_eq!(secondary_indexes(&path), all);
    let pending: i64 = rusqlite::Connection::open(&path)
        .expect("opens")
        .query_row("SELECT count(*) FROM deferred_indexes", [], |r| r.get(0))
        .expect("reads");
    assert_eq!(pending, 0);
    // A load cut short by an error builds them again too.
    let err = s
        .bulk_load(&mut || {
            assert_eq!(secondary_indexes(&path), Vec::<String>::new());
            Err(muisti_core::Error::invalid("load", "stopped"))
        })
        .expect_err("fails");
    assert_eq!(err.kind(), muisti_core::ErrorKind::InvalidInput);
    assert_eq!(secondary_indexes(&path), all);
    // A store the load would not fill keeps its indexes: rebuilding them would cost a sort
    // of every row already there.
    for from in (100..10_100).step_by(1_000) {
        s.put_many(puts(from, from + 1_000)).expect("writes");
    }
    s.bulk_load(&mut || {
        assert_eq!(secondary_indexes(&path), all);
        Ok(0)
    })
    .expect("loads");
}

/// Records read once are kept decoded (recall reads the same ones again and again): what a
/// read returns stays what the database holds through this handle's accesses, deletes and
/// updates, another handle's writes, and expiry.
#[test]
fn decoded_records_stay_what_the_database_holds() {
    use muisti_core::{
        Key, Locator, ManualClock, MemoryId, Namespace, Partition, Patch, Put, Tenant, Timestamp,
        Ttl, UpdateRequest,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
    let store = SqliteStore::open(&path)
        .expect("opens")
        .with_clock(clock.clone());
    let other = SqliteStore::open(&path)
        .expect("opens")
        .with_clock(clock.clone());
    let p = Partition::of(Namespace::default_ns());
    let tenant = p.tenant.clone();
    let ids = put_ids(
        &store,
        (0..4)
            .map(|i| {
                let mut put = Put::new(
                    p.clone(),
                    Some(Key::new(format!("k{i}")).expect("key")),
                    format!("note {i}"),
                );
                if i == 3 {
                    put.ttl = Some(Ttl::new(std::time::Duration::from_secs(60)).expect("ttl"));
                }
                put
            })
            .collect(),
    );
    // What a handle that keeps nothing decoded reads.
    let truth = |ids: &[MemoryId]| {
        SqliteStore::open(&path)
            .expect("opens")
            .with_clock(clock.clone())
            .with_cache_budget(0)
            .get_many(&tenant, ids)
            .expect("reads")
    };
    let read = |ids: &[MemoryId]| store.get_many(&tenant, ids).expect("reads");
    assert_eq!(read(&ids).len(), 4);
    assert_eq!(
        read(&ids),
        truth(&ids),
        "read twice, the second time decoded"
    );
    // Accesses are counted on the decoded records as in the database.
    store
        .touch(&tenant, &ids[..2], Timestamp::from_millis(1_000_500))
        .expect("touches");
    let after = read(&ids);
    assert_eq!(after[0].access_count, 1);
    assert_eq!(
        after[0].last_accessed_at,
        Some(Timestamp::from_millis(1_000_500))
    );
    assert_eq!(after, truth(&ids), "after accesses");
    // This handle's update and delete.
    let update = |s: &SqliteStore, id: MemoryId, text: &str| {
        let patch = Patch {
            content: Some(text.into()),
            ..Patch::default()
        };
        s.update(&UpdateRequest::new(
            Locator::Id {
                tenant: tenant.clone(),
                id,
            },
            patch,
        ))
        .expect("updates");
    };
    update(&store, ids[0], "note zero, changed here");
    assert!(
        store
            .delete(&Locator::Id {
                tenant: tenant.clone(),
                id: ids[1],
            })
            .expect("deletes")
    );
    let after = read(&ids);
    assert_eq!(after.len(), 3, "the deleted one is gone");
    assert_eq!(after[0].content, "note zero, changed here");
    assert_eq!(after, truth(&ids), "after this handle's writes");
    // Another handle's (another process's) update.
    update(&other, ids[2], "note two, changed elsewhere");
    let after = read(&ids);
    assert_eq!(after[1].content, "note two, changed elsewhere");
    assert_eq!(after, truth(&ids), "after another handle's write");
    // By id and by key alike.
    let by_id = store
        .get(&Locator::Id {
            tenant: tenant.clone(),
            id: ids[2],
        })
        .expect("reads");
    assert_eq!(by_id.as_ref(), after.get(1));
    // Expiry: a decoded record past its time is gone.
    assert!(read(&ids).iter().any(|m| m.id == ids[3]));
    clock.advance(std::time::Duration::from_secs(61));
    assert!(!read(&ids).iter().any(|m| m.id == ids[3]), "expired");
    assert_eq!(read(&ids), truth(&ids), "after expiry");
    // A record of another tenant is not found by its id.
    let stranger = Tenant::new("someone-else").expect("tenant");
    assert!(store.get_many(&stranger, &ids).expect("reads").is_empty());
}

/// Writes `puts` in one batch; the ids, in order.
fn put_ids(store: &SqliteStore, puts: Vec<muisti_core::Put>) -> Vec<muisti_core::MemoryId> {
    store
        .put_many(puts)
        .expect("writes")
        .into_iter()
        .map(|w| w.memory.id)
        .collect()
}

/// A user's row (`user_copies`): the count of the user's records and of the parts kept.
fn kept_copy(path: &std::path::Path, user: &str) -> Option<(i64, usize)> {
    use rusqlite::OptionalExtension;
    let records: Option<i64> = rusqlite::Connection::open(path)
        .expect("opens")
        .query_row(
            "SELECT records FROM user_copies WHERE user_id = ?1",
            [user],
            |r| r.get(0),
        )
        .optional()
        .expect("reads");
    records.map(|n| (n, kept_parts(path, user).len()))
}

/// A user's kept parts (`user_copy_parts`), in record order.
fn kept_parts(path: &std::path::Path, user: &str) -> Vec<Vec<u8>> {
    rusqlite::Connection::open(path)
        .expect("opens")
        .prepare("SELECT part FROM user_copy_parts WHERE user_id = ?1 ORDER BY record")
        .and_then(|mut s| {
            s.query_map([user], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<Vec<u8>>>>()
        })
        .expect("reads")
}

/// The store keeps each user's copy as it writes the user's records (a part each) and
/// the next process's first load reads it, answering exactly as the rows do (accesses
/// counted since included); a write adds or replaces its record's part, a delete takes it,
/// an access leaves it. A change made by other means than the store leaves its record
/// without a part, so the rows are read (and the parts kept again); the user's last record
/// takes the user's row with it.
#[test]
fn a_users_copy_is_kept_with_the_writes_and_read_back() {
    use muisti_core::{
        Filter, Key, Locator, Namespace, Partition, Put, Tenant, TextQuery, Timestamp, VectorQuery,
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("m.db");
    let p = Partition::of(Namespace::default_ns());
    let open = || {
        SqliteStore::open(&path)
            .expect("opens")
            .with_background_loads(false)
    };
    let puts: Vec<Put> = (0..40)
        .map(|i| {
            let mut put = Put::new(p.clone(), None, format!("note {i} about the river bank"));
            put.owner.user_id = Some(format!("u{}", i % 2));
            put.owner.session_id = (i % 3 == 0).then(|| "s1".to_owned());
            put.tags = vec![format!("t{}", i % 4)];
            put.metadata.insert("n".into(), serde_json::json!(i));
            put.importance = Some((i % 10) as f32 / 10.0);
            put.context = (i % 5 == 0).then(|| "by the water".to_owned());
            put.embedding = Some((0..8).map(|d| ((i * 7 + d) % 11) as f32 - 5.0).collect());
            put.embedding_model = Some("test-8".into());
            put
        })
        .collect();
    let ids = put_ids(&open(), puts);
    let text = |user: &str, tag: Option<&str>| TextQuery {
        partition: p.clone(),
        query: "river water".into(),
        filter: Filter {
            user_id: Some(user.to_owned()),
            tags: tag.map(|t| vec![t.to_owned()]).unwrap_or_default(),
            ..Filter::default()
        },
        limit: 40,
    };
    let vector = VectorQuery {
        partition: p.clone(),
        vector: (0..8).map(|d| d as f32 - 3.0).collect(),
        filter: Filter {
            user_id: Some("u0".into()),
            ..Filter::default()
        },
        limit: 40,
    };
    assert_eq!(
        kept_copy(&path, "u0"),
        Some((20, 20)),
        "kept with the writes"
    );
    let raw = rusqlite::Connection::open(&path).expect("opens");
    raw.execute_batch("DELETE FROM user_copy_parts")
        .expect("parts set aside");

    // From the rows, kept; an access leaves the parts.
    let first = open();
    let by_rows = (
        first.text_search(&text("u0", None)).expect("searches"),
        first.vector_search(&vector).expect("searches"),
        first
            .text_search(&text("u0", Some("t2")))
            .expect("searches"),
    );
    assert_eq!(by_rows.0.len(), 20);
    assert_eq!(kept_copy(&path, "u0"), Some((20, 20)), "kept by the load");
    assert_eq!(
        kept_copy(&path, "u1"),
        Some((20, 0)),
        "only what was loaded"
    );
    first
        .touch(&Tenant::default(), &ids[..3], Timestamp::from_millis(5))
        .expect("touches");
    assert_eq!(kept_copy(&path, "u0"), Some((20, 20)), "still kept");
    let fields = first.rank_fields(&p, &ids).expect("fields");
    drop(first);

    // Read back: the same answers and the same rescoring fields, accesses included.
    let second = open();
    let by_copy = (
        second.text_search(&text("u0", None)).expect("searches"),
        second.vector_search(&vector).expect("searches"),
        second
            .text_search(&text("u0", Some("t2")))
            .expect("searches"),
    );
    assert_eq!(by_copy, by_rows);
    let user0: Vec<_> = ids.iter().step_by(2).copied().collect();
    let expect: Vec<_> = fields
        .iter()
        .filter(|f| user0.contains(&f.id))
        .cloned()
        .collect();
    assert_eq!(second.rank_fields(&p, &user0).expect("fields"), expect);
    assert_eq!(expect[0].access_count, 1, "{expect:?}");

    // A write adds its part, a rewrite at a key replaces it, a delete takes it; each seen
    // by the next process's load from the parts.
    let keyed = |text: &str| {
        let mut put = Put::new(p.clone(), Some(Key::new("boat").expect("key")), text);
        put.owner.user_id = Some("u0".into());
        put
    };
    let mut put = Put::new(p.clone(), None, "a new river note");
    put.owner.user_id = Some("u0".into());
    let new = put_ids(&second, vec![put, keyed("a river boat named Kestrel")])[0];
    put_ids(&second, vec![keyed("a river boat named Osprey")]);
    assert!(
        second
            .delete(&Locator::Id {
                tenant: Tenant::default(),
                id: ids[0],
            })
            .expect("deletes")
    );
    assert_eq!(kept_copy(&path, "u0"), Some((21, 21)));
    drop(second);
    let third = open();
    let found = |store: &SqliteStore, query: &str| -> Vec<_> {
        store
            .text_search(&TextQuery {
                query: query.into(),
                ..text("u0", None)
            })
            .expect("searches")
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    let hits = found(&third, "river water");
    assert!(hits.contains(&new) && !hits.contains(&ids[0]), "{hits:?}");
    assert_eq!(found(&third, "osprey").len(), 1);
    assert!(found(&third, "kestrel").is_empty(), "the replaced part");
    drop(third);

    // A change behind the store's back takes its record's part: the rows are read, and
    // the parts kept again.
    raw.execute_batch("UPDATE memories SET tags = '[\"behind\"]' WHERE user_id = 'u0'")
        .expect("changes");
    assert_eq!(kept_copy(&path, "u0"), Some((21, 0)));
    assert_eq!(
        open()
            .text_search(&text("u0", Some("behind")))
            .expect("searches")
            .len(),
        21,
        "answered from the rows"
    );
    assert_eq!(kept_copy(&path, "u0"), Some((21, 21)));
    // The parts are what the next load reads: with the trigger dropped, a change is not
    // seen.
    raw.execute_batch(
        "DROP TRIGGER user_copy_update; \
         UPDATE memories SET tags = '[\"unseen\"]' WHERE user_id = 'u0';",
    )
    .expect("changes");
    assert!(
        open()
            .text_search(&text("u0", Some("unseen")))
            .expect("searches")
            .is_empty(),
        "answered from the kept copy"
    );

    // The user's last record takes the user's row (and the user's name) with it.
    let all = open();
    for id in ids.iter().skip(1).step_by(2) {
        all.delete(&Locator::Id {
            tenant: Tenant::default(),
            id: *id,
        })
        .expect("deletes");
    }
    assert_eq!(
        kept_copy(&path, "u1"),
        None,
        "no row for a user with no records"
    );
}

/// A file of schema 6 or 7 gains a row for each of its users with the count of the user's
/// records (version 7's copies go), so their first loads keep their parts.
#[test]
fn a_version_6_or_7_database_gets_a_row_for_each_user() {
    use muisti_core::{Filter, Namespace, Partition, Put, TextQuery};
    for version in [6, 7] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("m.db");
        let p = Partition::of(Namespace::default_ns());
        let puts = ["a note about the river", "a second note"].map(|text| {
            let mut put = Put::new(p.clone(), None, text);
            put.owner.user_id = Some("u".into());
            put
        });
        put_ids(&SqliteStore::open(&path).expect("opens"), puts.into());
        let conn = rusqlite::Connection::open(&path).expect("opens");
        conn.execute_batch(
            "DROP TRIGGER user_copy_insert; DROP TRIGGER user_copy_update; \
             DROP TRIGGER user_copy_moved; DROP TRIGGER user_copy_delete; \
             DROP TABLE user_copies; DROP TABLE user_copy_parts; PRAGMA user_version = 6;",
        )
        .expect("downgrades");
        if version == 7 {
            conn.execute_batch(include_str!("../../src/schema_v7.sql"))
                .and_then(|()| conn.execute_batch("PRAGMA user_version = 7"))
                .expect("version 7");
        }
        drop(conn);
        let s = SqliteStore::open(&path)
            .expect("migrates")
            .with_background_loads(false);
        assert_eq!(kept_copy(&path, "u"), Some((2, 0)), "a row, no copy yet");
        let hits = s
            .text_search(&TextQuery {
                partition: p,
                query: "river".into(),
                filter: Filter {
                    user_id: Some("u".into()),
                    ..Filter::default()
                },
                limit: 5,
            })
            .expect("searches");
        assert_eq!(hits.len(), 1, "from version {version}");
        assert_eq!(kept_copy(&path, "u"), Some((2, 2)), "kept");
    }
}

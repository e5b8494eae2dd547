//! pgvector HNSW indexes, one per vector dimension, built on demand.
//!
//! A vector column without a fixed dimension cannot be indexed whole, so each dimension gets
//! a partial expression index: `USING hnsw ((embedding::vector(d)) vector_ip_ops) WHERE
//! dims = d`, which searches written as `embedding::vector(d) <#> $v::vector(d)` with
//! `dims = d` can use. Building one at 100,000 vectors takes about 20 s on two cores, and an
//! index makes every later insert of that dimension slower, so it is built only once the
//! table holds `threshold` vectors of the dimension (as the SQLite store builds its graph),
//! by `CREATE INDEX CONCURRENTLY` in a background thread (writes go on), under an advisory
//! lock so that one server of many builds it. Until it is valid, searches scan exactly;
//! afterwards the planner chooses between the index (with pgvector's iterative scans, so
//! filtered searches still find enough rows) and an exact scan of a small filtered set.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::pool::{Cached, Pool};

/// The largest dimension pgvector's HNSW index takes for `vector`.
pub(crate) const MAX_INDEXED_DIMS: usize = 2000;
/// How long a dimension's state is trusted before the catalog is asked again (another
/// server may have built or dropped the index).
const RECHECK: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A valid index exists.
    Ready,
    /// This process is building it.
    Building,
    /// None (or not valid) when last looked at, and enough vectors to build one.
    Absent,
    /// None, and fewer vectors of the dimension than the threshold.
    Small,
}

/// What this process knows of each dimension's index.
pub(crate) struct Indexes {
    pool: Arc<Pool>,
    schema: String,
    /// Vectors of one dimension from which an index is built; 0: never.
    threshold: usize,
    known: Mutex<HashMap<usize, (State, Instant)>>,
}

impl Indexes {
    pub(crate) fn new(pool: Arc<Pool>, schema: String, threshold: usize) -> Arc<Self> {
        Arc::new(Self {
            pool,
            schema,
            threshold,
            known: Mutex::new(HashMap::new()),
        })
    }

    fn name(dims: usize) -> String {
        format!("memories_hnsw_{dims}")
    }

    fn set(&self, dims: usize, state: State) {
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dims, (state, Instant::now()));
    }

    /// Whether a valid index of `dims` exists; starts building one when the table has
    /// reached the threshold. Never fails a search: catalog errors are logged.
    pub(crate) fn ensure(self: &Arc<Self>, dims: usize) {
        if self.threshold == 0 || dims == 0 || dims > MAX_INDEXED_DIMS {
            return;
        }
        let cached = self
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&dims)
            .copied();
        match cached {
            Some((State::Building, _)) => return,
            Some((_, at)) if at.elapsed() < RECHECK => return,
            _ => {}
        }
        match self.look(dims) {
            Ok(State::Absent) => {
                self.set(dims, State::Building);
                let me = Arc::clone(self);
                std::thread::spawn(move || {
                    let state = match me.build(dims) {
                        Ok(true) => State::Ready,
                        Ok(false) => State::Absent,
                        Err(e) => {
                            tracing::warn!(dims, error = %e, "building the HNSW index failed");
                            State::Absent
                        }
                    };
                    me.set(dims, state);
                });
            }
            Ok(state) => self.set(dims, state),
            Err(e) => {
                tracing::warn!(dims, error = %e, "looking up the HNSW index failed");
                self.set(dims, State::Absent);
            }
        }
    }

    /// Whether a valid index of `dims` exists now (asks the catalog).
    /// Whether the index of `dims` was ready when last looked at (no statement).
    pub(crate) fn cached_ready(&self, dims: usize) -> bool {
        matches!(
            self.known
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&dims),
            Some((State::Ready, _))
        )
    }

    pub(crate) fn ready(&self, dims: usize) -> muisti_core::Result<bool> {
        Ok(self.look(dims)? == State::Ready)
    }

    /// The index's state in the catalog (`Small` while the table holds fewer than
    /// `threshold` vectors of this dimension: nothing to build yet).
    fn look(&self, dims: usize) -> muisti_core::Result<State> {
        let mut conn = self.pool.get()?;
        let valid =
            validity(&mut *conn, &self.schema, &Self::name(dims)).map_err(|e| self.pool.err(&e))?;
        match valid {
            Some(true) => Ok(State::Ready),
            // An invalid index (a build interrupted) is rebuilt by `build`.
            Some(false) => Ok(State::Absent),
            None => {
                // A count bounded by the threshold: cheap on a large table.
                let n: i64 = conn
                    .query_one(
                        "SELECT count(*) FROM (SELECT 1 FROM memories WHERE dims = $1 LIMIT $2) t",
                        &[&(dims as i32), &(self.threshold as i64)],
                    )
                    .map_err(|e| self.pool.err(&e))?
                    .get(0);
                Ok(if (n as usize) < self.threshold {
                    State::Small
                } else {
                    State::Absent
                })
            }
        }
    }

    /// Builds the index (dropping an invalid one first) unless another process holds the
    /// build lock; `true` if a valid index exists afterwards.
    fn build(&self, dims: usize) -> muisti_core::Result<bool> {
        let mut conn = self.pool.get()?;
        let err = |e: postgres::Error| self.pool.err(&e);
        let key = format!("muisti hnsw {} {dims}", self.schema);
        let locked: bool = conn
            .query_one("SELECT pg_try_advisory_lock(hashtext($1))", &[&key])
            .map_err(err)?
            .get(0);
        if !locked {
            return Ok(false);
        }
        let name = Self::name(dims);
        let started = Instant::now();
        let result = conn
            .batch_execute("SET maintenance_work_mem = '256MB'")
            .and_then(|()| {
                if validity(&mut *conn, &self.schema, &name)? == Some(false) {
                    conn.batch_execute(&format!(
                        "DROP INDEX CONCURRENTLY IF EXISTS {}.{name}",
                        self.schema
                    ))?;
                }
                conn.batch_execute(&format!(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories USING hnsw \
                     ((embedding::vector({dims})) vector_ip_ops) WHERE dims = {dims}"
                ))?;
                // (CONCURRENTLY cannot share a message with another statement.)
                conn.batch_execute("RESET maintenance_work_mem")
            });
        let unlocked = conn.query_one("SELECT pg_advisory_unlock(hashtext($1))", &[&key]);
        result.map_err(err)?;
        unlocked.map_err(err)?;
        tracing::info!(
            dims,
            secs = started.elapsed().as_secs_f64(),
            "HNSW index built"
        );
        Ok(true)
    }
}

/// Whether the index `name` in `schema` is valid (`None`: there is none).
fn validity(
    conn: &mut impl Cached,
    schema: &str,
    name: &str,
) -> std::result::Result<Option<bool>, postgres::Error> {
    Ok(conn
        .query_opt(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = $2",
            &[&schema, &name],
        )?
        .map(|r| r.get(0)))
}

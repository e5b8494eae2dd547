//! A small blocking connection pool: at most `size` connections, reused, replaced when
//! closed, each with the store's `search_path` and its own cache of prepared statements
//! (a statement given as text would cost a second round trip and a parse on every call).

use std::{
    collections::HashMap,
    ops::{Deref, DerefMut},
    sync::{Condvar, Mutex, MutexGuard},
    time::Duration,
};

use muisti_core::{Error, Result};
use postgres::{Client, Config, GenericClient, Row, Statement, types::ToSql};

use crate::tls::Connector;

/// The most statements one connection keeps prepared (the store's statements differ only
/// by which filter fields are set, so a few dozen are in use).
const MAX_STATEMENTS: usize = 512;

/// Prepared statements of one connection, by their text.
#[derive(Default)]
pub(crate) struct Statements(HashMap<String, Statement>);

impl Statements {
    /// The prepared form of `sql` on `client`'s connection, prepared on first use.
    fn get(
        &mut self,
        client: &mut impl GenericClient,
        sql: &str,
    ) -> std::result::Result<Statement, postgres::Error> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = client.prepare(sql)?;
        if self.0.len() >= MAX_STATEMENTS {
            self.0.clear();
        }
        self.0.insert(sql.to_owned(), s.clone());
        Ok(s)
    }
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A connection and its prepared statements.
pub(crate) struct Session {
    client: Client,
    statements: Statements,
}

/// A transaction on a [`Session`], whose statements it prepares once.
pub(crate) struct Tx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut Statements,
}

/// The statements a session and a transaction run, prepared once per connection: the one
/// definition of each, for both.
pub(crate) trait Cached {
    /// The driver's client underneath.
    type Client: GenericClient;

    /// The client and its connection's statements.
    fn parts(&mut self) -> (&mut Self::Client, &mut Statements);

    fn query(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> std::result::Result<Vec<Row>, postgres::Error> {
        let (client, statements) = self.parts();
        let s = statements.get(client, sql)?;
        client.query(&s, params)
    }

    fn query_opt(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> std::result::Result<Option<Row>, postgres::Error> {
        let (client, statements) = self.parts();
        let s = statements.get(client, sql)?;
        client.query_opt(&s, params)
    }

    fn query_one(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> std::result::Result<Row, postgres::Error> {
        let (client, statements) = self.parts();
        let s = statements.get(client, sql)?;
        client.query_one(&s, params)
    }

    fn execute(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> std::result::Result<u64, postgres::Error> {
        let (client, statements) = self.parts();
        let s = statements.get(client, sql)?;
        client.execute(&s, params)
    }

    /// Statements without parameters, not prepared (DDL, migrations).
    fn batch_execute(&mut self, sql: &str) -> std::result::Result<(), postgres::Error> {
        self.parts().0.batch_execute(sql)
    }
}

impl Cached for Session {
    type Client = Client;
    fn parts(&mut self) -> (&mut Client, &mut Statements) {
        (&mut self.client, &mut self.statements)
    }
}

impl<'a> Cached for Tx<'a> {
    type Client = postgres::Transaction<'a>;
    fn parts(&mut self) -> (&mut postgres::Transaction<'a>, &mut Statements) {
        (&mut self.tx, self.statements)
    }
}

impl Session {
    /// Starts a transaction.
    pub(crate) fn transaction(&mut self) -> std::result::Result<Tx<'_>, postgres::Error> {
        Ok(Tx {
            tx: self.client.transaction()?,
            statements: &mut self.statements,
        })
    }
}

impl Tx<'_> {
    /// Commits.
    pub(crate) fn commit(self) -> std::result::Result<(), postgres::Error> {
        self.tx.commit()
    }
}

/// How long a caller waits for a free connection before the store is reported unavailable.
const WAIT: Duration = Duration::from_secs(30);

struct State {
    idle: Vec<Session>,
    open: usize,
}

pub(crate) struct Pool {
    config: Config,
    connector: Connector,
    /// `SET search_path ...` run on each new connection (the store's schema first).
    setup: String,
    /// The server's address without a password, for errors.
    pub(crate) target: String,
    size: usize,
    state: Mutex<State>,
    freed: Condvar,
}

impl Pool {
    pub(crate) fn new(
        config: Config,
        connector: Connector,
        setup: String,
        target: String,
        size: usize,
    ) -> Self {
        Self {
            config,
            connector,
            setup,
            target,
            size: size.max(1),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The error of a failed connection or statement: a lost or refused connection is
    /// [`Error::Unavailable`] (naming the server), a statement the database refused is
    /// [`Error::Backend`] with its SQLSTATE.
    pub(crate) fn err(&self, e: &postgres::Error) -> Error {
        match e.as_db_error() {
            Some(db) => Error::backend(
                "postgres",
                format!("{} ({})", db.message(), db.code().code()),
            ),
            None => {
                // The driver's text is general ("error performing TLS handshake"): the
                // causes under it say what went wrong.
                let mut reason = e.to_string();
                let mut cause = std::error::Error::source(e);
                while let Some(c) = cause {
                    reason = format!("{reason}: {c}");
                    cause = c.source();
                }
                Error::Unavailable {
                    target: self.target.clone(),
                    reason,
                }
            }
        }
    }

    fn connect(&self) -> Result<Session> {
        let mut client = self
            .connector
            .connect(&self.config)
            .map_err(|e| self.err(&e))?;
        client
            .batch_execute(&self.setup)
            .map_err(|e| self.err(&e))?;
        Ok(Session {
            client,
            statements: Statements::default(),
        })
    }

    /// A connection: an idle one, a new one while fewer than `size` are open, else the
    /// next one given back.
    pub(crate) fn get(&self) -> Result<Conn<'_>> {
        let mut state = self.lock();
        loop {
            while let Some(client) = state.idle.pop() {
                if !client.client.is_closed() {
                    return Ok(Conn {
                        pool: self,
                        client: Some(client),
                    });
                }
                state.open -= 1;
            }
            if state.open < self.size {
                state.open += 1;
                drop(state);
                return match self.connect() {
                    Ok(client) => Ok(Conn {
                        pool: self,
                        client: Some(client),
                    }),
                    Err(e) => {
                        self.lock().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let (next, timeout) = self
                .freed
                .wait_timeout(state, WAIT)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
            if timeout.timed_out() && state.idle.is_empty() && state.open >= self.size {
                return Err(Error::Unavailable {
                    target: self.target.clone(),
                    reason: format!(
                        "all {} connections of the pool stayed busy for {} s",
                        self.size,
                        WAIT.as_secs()
                    ),
                });
            }
        }
    }
}

impl Drop for Pool {
    /// Closes the idle connections on a thread of its own: closing one blocks on the
    /// driver's runtime, which panics on a thread that drives another runtime (a server
    /// dropping its engine at shutdown did, and aborted).
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.lock().idle);
        if !idle.is_empty() {
            let _ = std::thread::spawn(move || drop(idle)).join();
        }
    }
}

/// A pooled connection, given back when dropped (closed ones are let go).
pub(crate) struct Conn<'a> {
    pool: &'a Pool,
    client: Option<Session>,
}

impl Deref for Conn<'_> {
    type Target = Session;
    fn deref(&self) -> &Session {
        self.client.as_ref().expect("present until dropped")
    }
}

impl DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Session {
        self.client.as_mut().expect("present until dropped")
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let mut state = self.pool.lock();
            if client.client.is_closed() {
                state.open -= 1;
            } else {
                state.idle.push(client);
            }
            drop(state);
            self.pool.freed.notify_one();
        }
    }
}

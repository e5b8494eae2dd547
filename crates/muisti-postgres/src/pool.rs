//! A small blocking connection pool: at most `size` connections, reused, replaced when
//! closed, each with the store's `search_path`.

use std::{
    ops::{Deref, DerefMut},
    sync::{Condvar, Mutex, MutexGuard},
    time::Duration,
};

use muisti_core::{Error, Result};
use postgres::{Client, Config, NoTls};

/// How long a caller waits for a free connection before the store is reported unavailable.
const WAIT: Duration = Duration::from_secs(30);

struct State {
    idle: Vec<Client>,
    open: usize,
}

pub(crate) struct Pool {
    config: Config,
    /// `SET search_path ...` run on each new connection (the store's schema first).
    setup: String,
    /// The server's address without a password, for errors.
    pub(crate) target: String,
    size: usize,
    state: Mutex<State>,
    freed: Condvar,
}

impl Pool {
    pub(crate) fn new(config: Config, setup: String, target: String, size: usize) -> Self {
        Self {
            config,
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
            None => Error::Unavailable {
                target: self.target.clone(),
                reason: e.to_string(),
            },
        }
    }

    fn connect(&self) -> Result<Client> {
        let mut client = self.config.connect(NoTls).map_err(|e| self.err(&e))?;
        client
            .batch_execute(&self.setup)
            .map_err(|e| self.err(&e))?;
        Ok(client)
    }

    /// A connection: an idle one, a new one while fewer than `size` are open, else the
    /// next one given back.
    pub(crate) fn get(&self) -> Result<Conn<'_>> {
        let mut state = self.lock();
        loop {
            while let Some(client) = state.idle.pop() {
                if !client.is_closed() {
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

/// A pooled connection, given back when dropped (closed ones are let go).
pub(crate) struct Conn<'a> {
    pool: &'a Pool,
    client: Option<Client>,
}

impl Deref for Conn<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("present until dropped")
    }
}

impl DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("present until dropped")
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let mut state = self.pool.lock();
            if client.is_closed() {
                state.open -= 1;
            } else {
                state.idle.push(client);
            }
            drop(state);
            self.pool.freed.notify_one();
        }
    }
}

//! A whole record as it is moved between stores: what an export holds and an import writes
//! back, every field kept.

use crate::{
    Error, Limits, Memory, Result, Timestamp,
    memory::{check_record, check_vector},
};

/// A stored record with its vector, written back as it is by
/// [`Store::import`](crate::Store::import): id, key, timestamps, version, access statistics
/// and state included.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The record, every field.
    pub memory: Memory,
    /// Its vector, made by `memory.embedding_model`; `None` stores it without one.
    pub vector: Option<Vec<f32>>,
}

impl Record {
    /// A record without a vector.
    pub fn new(memory: Memory) -> Self {
        Self {
            memory,
            vector: None,
        }
    }

    /// The rules a record meets before a store writes it: the field rules and the size
    /// limit of a write ([`Put::validate`](crate::Put::validate)'s), a vector only with the
    /// model that made it, a version of at least 1, and a key of its own or its id.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        let m = &self.memory;
        if let Some(v) = &self.vector {
            if m.embedding_model.is_none() {
                return Err(Error::invalid(
                    "embedding",
                    "a vector needs the id of the model that made it (embedding_model)",
                ));
            }
            check_vector(v)?;
        }
        if m.version == 0 {
            return Err(Error::invalid("version", "must be at least 1"));
        }
        if m.updated_at < m.created_at {
            return Err(Error::conflicting("updated_at", "it is before created_at"));
        }
        check_record(m, limits)
    }

    /// Validates every record of a batch; the first failure is returned and nothing should
    /// be written.
    pub fn validate_all(records: &[Record], limits: &Limits) -> Result<()> {
        records.iter().try_for_each(|r| r.validate(limits))
    }

    /// What a store's import writes of a batch: every record validated first (the first
    /// failure is returned and nothing should be written), then those already expired at
    /// `now` left out. Every backend's [`Store::import`](crate::Store::import) starts here.
    pub fn admit(records: Vec<Record>, limits: &Limits, now: Timestamp) -> Result<Vec<Record>> {
        Self::validate_all(&records, limits)?;
        Ok(records
            .into_iter()
            .filter(|r| !r.memory.is_expired(now))
            .collect())
    }
}

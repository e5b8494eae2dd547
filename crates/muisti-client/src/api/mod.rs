//! The wire types of the HTTP API: what `muisti serve` accepts and returns under `/v1`.
//!
//! These are the contract; they are plain data (strings, numbers, JSON values) so a client
//! needs nothing of the engine. Timestamps are RFC 3339 strings, ids are ULIDs.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, de::DeserializeOwned, de::Error as _};
use serde_json::{Map, Value};

mod admin;
mod analytics;
mod chat;
mod conversations;
mod declarative;
mod facts;
mod graph;
mod kv;
mod lifecycle;
mod memories;

pub use admin::*;
pub use analytics::*;
pub use chat::*;
pub use conversations::*;
pub use declarative::*;
pub use facts::*;
pub use graph::*;
pub use kv::*;
pub use lifecycle::*;
pub use memories::*;

/// A struct read only from a JSON object: serde would also fill one from an array, by
/// position, which no client means.
fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(v: Value) -> Result<T, D::Error> {
    if !v.is_object() {
        return Err(D::Error::custom("expected a JSON object"));
    }
    T::deserialize(v).map_err(D::Error::custom)
}

/// [`object`], or nothing for `null`.
fn optional_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => object::<D, T>(v).map(Some),
    }
}

/// A list of [`object`]s.
fn objects<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Vec::<Value>::deserialize(d)?
        .into_iter()
        .map(object::<D, T>)
        .collect()
}

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

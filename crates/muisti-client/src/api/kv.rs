//! The key-value face.

use super::*;

/// A value to store at a key (`PUT /v1/kv/{namespace}/{key}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct KvValue {
    /// Any JSON value.
    pub value: Value,
    /// Expire after this many seconds; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
}

/// The value at a key: what `GET` and `PUT` of a key answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KvEntry {
    /// The id of the record that holds it (a memory id).
    pub id: String,
    /// The key.
    pub key: String,
    /// The value.
    pub value: Value,
    /// When it expires, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// One page of the live entries of a namespace (`GET /v1/kv/{namespace}`), oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KvEntries {
    /// By key.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub entries: BTreeMap<String, Value>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl KvEntries {
    /// Every entry of a namespace: `page(cursor)` fetches one page (the first with `None`),
    /// and each page's `next_cursor` is followed to the last.
    pub fn collect<E>(
        mut page: impl FnMut(Option<String>) -> Result<KvEntries, E>,
    ) -> Result<KvEntries, E> {
        let mut all = page(None)?;
        while let Some(cursor) = all.next_cursor.take() {
            let next = page(Some(cursor))?;
            all.entries.extend(next.entries);
            all.next_cursor = next.next_cursor;
        }
        Ok(all)
    }
}

/// The query of `GET /v1/kv/{namespace}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct KvPageParams {
    /// Page size (default 1,000, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

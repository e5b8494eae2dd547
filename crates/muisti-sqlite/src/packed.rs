//! A user's copy as the store keeps it (`user_copy_parts`, schema version 8): what a load
//! reads of each of the user's rows, packed, with each vector as the copy holds it
//! (quantised). The store keeps one part per record ([`part`]), written with the record;
//! reading the parts back gives the load the same fields the rows would, so both go through
//! one conversion into the copy.
//!
//! Layout (little-endian): a version byte, the row count (`u32`), then per row its rowid,
//! the fields of [`Fields`] in order (strings as a `u32` length and UTF-8 bytes, optional
//! values behind a presence byte) and its vector (a presence byte, then the scale and the
//! length-prefixed `i8` values).

/// The layout's version: a copy of another is read as missing and built again.
const VERSION: u8 = 1;

/// One row's fields as a load reads them, before they become a cached row.
pub(crate) struct Fields<'a> {
    pub(crate) rowid: i64,
    pub(crate) id: &'a str,
    /// Not packed: a packed copy is one user's.
    pub(crate) user_id: Option<&'a str>,
    pub(crate) agent_id: Option<&'a str>,
    pub(crate) session_id: Option<&'a str>,
    pub(crate) category: &'a str,
    pub(crate) scope: &'a str,
    pub(crate) created_at: i64,
    pub(crate) expires_at: Option<i64>,
    pub(crate) tags: &'a str,
    pub(crate) metadata: &'a str,
    pub(crate) content_hash: &'a str,
    pub(crate) updated_at: i64,
    pub(crate) importance: f64,
    /// The record's own count, without the accesses counted since it was written.
    pub(crate) stored_accesses: i64,
    pub(crate) time: i64,
    pub(crate) terms: &'a str,
    pub(crate) context_terms: Option<&'a str>,
}

/// A packed row's vector as the copy holds it: its `i8` values' bytes and its scale.
pub(crate) type Quantized<'a> = (&'a [u8], f32);

/// Packs rows one at a time.
pub(crate) struct Writer {
    out: Vec<u8>,
    rows: u32,
}

/// One record's part: a copy of one row.
pub(crate) fn part(f: &Fields<'_>, vector: Option<(&[i8], f32)>) -> Vec<u8> {
    let mut w = Writer::with_capacity(
        // The fixed fields, length prefixes and presence bytes take under 160.
        160 + f.id.len()
            + f.agent_id.map_or(0, str::len)
            + f.session_id.map_or(0, str::len)
            + f.category.len()
            + f.scope.len()
            + f.tags.len()
            + f.metadata.len()
            + f.content_hash.len()
            + f.terms.len()
            + f.context_terms.map_or(0, str::len)
            + vector.map_or(0, |(q, _)| q.len()),
    );
    w.row(f, vector);
    w.finish()
}

impl Writer {
    /// A copy of no rows yet, its bytes allocated for about `bytes`.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        let mut out = Vec::with_capacity(bytes);
        out.push(VERSION);
        out.extend_from_slice(&0u32.to_le_bytes());
        Self { out, rows: 0 }
    }

    pub(crate) fn row(&mut self, f: &Fields<'_>, vector: Option<(&[i8], f32)>) {
        self.rows += 1;
        self.i64(f.rowid);
        self.str(f.id);
        self.opt_str(f.agent_id);
        self.opt_str(f.session_id);
        self.str(f.category);
        self.str(f.scope);
        self.i64(f.created_at);
        self.opt_i64(f.expires_at);
        self.str(f.tags);
        self.str(f.metadata);
        self.str(f.content_hash);
        self.i64(f.updated_at);
        self.out.extend_from_slice(&f.importance.to_le_bytes());
        self.i64(f.stored_accesses);
        self.i64(f.time);
        self.str(f.terms);
        self.opt_str(f.context_terms);
        match vector {
            None => self.out.push(0),
            Some((q, scale)) => {
                self.out.push(1);
                self.out.extend_from_slice(&scale.to_le_bytes());
                self.u32(q.len() as u32);
                self.out.extend(q.iter().map(|x| x.to_le_bytes()[0]));
            }
        }
    }

    /// The packed copy.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.out[1..5].copy_from_slice(&self.rows.to_le_bytes());
        self.out
    }

    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    fn i64(&mut self, v: i64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            None => self.out.push(0),
            Some(v) => {
                self.out.push(1);
                self.i64(v);
            }
        }
    }

    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.out.extend_from_slice(s.as_bytes());
    }

    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.out.push(0),
            Some(s) => {
                self.out.push(1);
                self.str(s);
            }
        }
    }
}

/// Reads a packed copy's rows; `None` (from [`Reader::new`] or any row) where the bytes are
/// not a copy of this layout.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    left: u32,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Option<Self> {
        let (&version, rest) = bytes.split_first()?;
        if version != VERSION {
            return None;
        }
        let mut r = Self {
            bytes: rest,
            left: 0,
        };
        r.left = r.u32()?;
        Some(r)
    }

    /// How many rows are left to read.
    pub(crate) fn len(&self) -> usize {
        self.left as usize
    }

    /// The next row and its vector, or `None` at the end or where the bytes are cut short.
    pub(crate) fn next_row(&mut self) -> Option<(Fields<'a>, Option<Quantized<'a>>)> {
        self.left = self.left.checked_sub(1)?;
        let fields = Fields {
            rowid: self.i64()?,
            id: self.str()?,
            user_id: None,
            agent_id: self.opt_str()?,
            session_id: self.opt_str()?,
            category: self.str()?,
            scope: self.str()?,
            created_at: self.i64()?,
            expires_at: self.opt_i64()?,
            tags: self.str()?,
            metadata: self.str()?,
            content_hash: self.str()?,
            updated_at: self.i64()?,
            importance: f64::from_le_bytes(self.take(8)?.try_into().ok()?),
            stored_accesses: self.i64()?,
            time: self.i64()?,
            terms: self.str()?,
            context_terms: self.opt_str()?,
        };
        let vector = match self.byte()? {
            0 => None,
            _ => {
                let scale = f32::from_le_bytes(self.take(4)?.try_into().ok()?);
                let n = self.u32()? as usize;
                Some((self.take(n)?, scale))
            }
        };
        Some((fields, vector))
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn opt_i64(&mut self) -> Option<Option<i64>> {
        match self.byte()? {
            0 => Some(None),
            _ => Some(Some(self.i64()?)),
        }
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.byte()? {
            0 => Some(None),
            _ => Some(Some(self.str()?)),
        }
    }
}

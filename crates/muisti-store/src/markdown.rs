//! The Markdown store's file format (also the `muisti export --format markdown` output): one section per memory, a small front-matter block of
//! its fields, then its text as Markdown.
//!
//! ```text
//! # default / default
//!
//! <!-- muisti-markdown/1: one section per memory. Edit the text or the fields freely;
//! keep each "## <id>" line and the "---" lines around the fields. -->
//!
//! ## 01JEXAMPLE00000000000000000
//! ---
//! category: fact
//! scope: long_term
//! user_id: ana
//! tags: ["infra"]
//! importance: 0.5
//! source: user_stated
//! created_at: 2026-12-02T06:00:00.000Z
//! updated_at: 2026-12-02T06:00:00.000Z
//! version: 1
//! ---
//!
//! Our staging database lives in Frankfurt
//! ```
//!
//! A section starts at a line `## <id>` directly followed by a line `---`; the fields end
//! at the next `---`; the text runs to the next section (blank lines around it dropped).
//! Field values are plain text, or JSON when they start with `"`, `[` or `{` (a value that
//! could be misread is written as JSON). A content line that would read as a section start
//! is written with a backslash in front (`\## ...`), removed on reading. Content that
//! cannot be a body as it is (a JSON value of a key-value entry, empty text, text with
//! leading or trailing line breaks or carriage returns) is written as a `content:` field
//! instead. Lines before the first section are free text.
//!
//! The content hash is computed from the text on reading, so a hand edit keeps
//! deduplication right; everything else is the record as stored.

use std::path::Path;

use muisti_core::{
    Category, Error, Key, Memory, MemoryId, MemoryScope, MemoryState, Owner, Partition, Result,
    Source, Timestamp, content_hash, value_text,
};
use serde_json::{Map, Value};

/// The marker line that names the format.
const MARKER: &str = "<!-- muisti-markdown/1: one section per memory. Edit the text or the fields \
                      freely;\nkeep each \"## <id>\" line and the \"---\" lines around the fields. -->";

const FENCE: &str = "---";

/// The text of one file holding `records` of partition `p` (`user`: whose file it is).
pub(crate) fn render(p: &Partition, user: Option<&str>, records: &[&Memory]) -> String {
    let mut out = String::with_capacity(256 + records.len() * 384);
    out.push_str(&heading(p, user));
    for m in records {
        out.push('\n');
        section(&mut out, m);
    }
    out
}

/// The heading of a file (or of a partition in a Markdown export): `# tenant / namespace`
/// (`/ user`), and the line that names the format.
pub fn heading(p: &Partition, user: Option<&str>) -> String {
    let mut out = format!("# {} / {}", p.tenant, p.namespace);
    if let Some(u) = user {
        out.push_str(&format!(" / {u}"));
    }
    out.push_str("\n\n");
    out.push_str(MARKER);
    out.push('\n');
    out
}

/// Appends one memory's section to `out`: `## <id>`, its fields, its text.
pub fn section(out: &mut String, m: &Memory) {
    let body = match &m.content {
        Value::String(s) if fits_body(s) => Some(s.as_str()),
        _ => None,
    };
    out.push_str(&format!("## {}\n{FENCE}\n", m.id));
    let mut field = |name: &str, value: &str| {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    };
    if let Some(key) = m.writer_key() {
        field("key", &text_value(key.as_str()));
    }
    field("category", &text_value(m.category.as_str()));
    field("scope", m.scope.as_str());
    let Owner {
        user_id,
        agent_id,
        session_id,
    } = &m.owner;
    for (name, v) in [
        ("user_id", user_id),
        ("agent_id", agent_id),
        ("session_id", session_id),
    ] {
        if let Some(v) = v {
            field(name, &text_value(v));
        }
    }
    if !m.tags.is_empty() {
        field("tags", &json(&m.tags));
    }
    field("importance", &m.importance.to_string());
    field("source", &text_value(m.source.as_str()));
    if let Some(c) = m.confidence {
        field("confidence", &c.to_string());
    }
    if m.state != MemoryState::Active {
        field("state", m.state.as_str());
    }
    if let Some(id) = m.superseded_by {
        field("superseded_by", &id.to_string());
    }
    for (name, t) in [
        ("valid_from", m.valid_from),
        ("valid_until", m.valid_until),
        ("created_at", Some(m.created_at)),
        ("updated_at", Some(m.updated_at)),
        ("last_accessed_at", m.last_accessed_at),
        ("expires_at", m.expires_at),
    ] {
        if let Some(t) = t {
            field(name, &t.to_string());
        }
    }
    if m.access_count > 0 {
        field("access_count", &m.access_count.to_string());
    }
    if let Some(model) = &m.embedding_model {
        field("embedding_model", &text_value(model));
    }
    field("version", &m.version.to_string());
    if let Some(c) = &m.context {
        field("context", &text_value(c));
    }
    if !m.metadata.is_empty() {
        field("metadata", &json(&m.metadata));
    }
    if body.is_none() {
        field("content", &json(&m.content));
    }
    out.push_str(FENCE);
    out.push('\n');
    if let Some(text) = body {
        out.push('\n');
        let lines: Vec<&str> = text.split('\n').collect();
        for (i, line) in lines.iter().enumerate() {
            if starts_section(line.trim_start_matches('\\'), lines.get(i + 1).copied()) {
                out.push('\\');
            }
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// Whether a string content can be the section's body and read back equal.
fn fits_body(s: &str) -> bool {
    !s.is_empty()
        && !s.contains('\r')
        && !s.starts_with('\n')
        && !s.ends_with('\n')
        && !s.split('\n').next().is_some_and(|l| l.trim().is_empty())
        && !s.rsplit('\n').next().is_some_and(|l| l.trim().is_empty())
}

/// A text field: as it is when it reads back as itself, else as a JSON string.
fn text_value(s: &str) -> String {
    let plain = !s.is_empty()
        && s.trim() == s
        && !s.starts_with(['"', '[', '{'])
        && !s.chars().any(char::is_control);
    if plain { s.to_owned() } else { json(&s) }
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    // Serializing plain values and maps of JSON values cannot fail.
    serde_json::to_string(v).unwrap_or_default()
}

/// Whether `line` followed by `next` starts a section.
fn starts_section(line: &str, next: Option<&str>) -> bool {
    line.starts_with("## ") && next.is_some_and(|n| n.trim_end() == FENCE)
}

/// Reads the records of a file of partition `p`; an error names the file and line.
pub(crate) fn parse(path: &Path, text: &str, p: &Partition) -> Result<Vec<Memory>> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| starts_section(lines[i], lines.get(i + 1).copied()))
        .collect();
    let mut out = Vec::with_capacity(starts.len());
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(lines.len());
        let m =
            parse_one(&lines[start..end], start, p).map_err(|(line, reason)| Error::Corrupted {
                location: format!("{}:{}", path.display(), line + 1),
                reason,
            })?;
        if let Some(dup) = out
            .iter()
            .find(|o: &&Memory| o.id == m.id || o.key == m.key)
        {
            let what = if dup.id == m.id { "id" } else { "key" };
            return Err(Error::Corrupted {
                location: format!("{}:{}", path.display(), start + 1),
                reason: format!("a second section with the {what} of {}", dup.id),
            });
        }
        out.push(m);
    }
    Ok(out)
}

type Failed = (usize, String);

/// One section: `lines[0]` is the `## <id>` line, `lines[1]` the opening fence; `first` is
/// the index of `lines[0]` in the file.
fn parse_one(lines: &[&str], first: usize, p: &Partition) -> std::result::Result<Memory, Failed> {
    let heading = lines[0].trim_start_matches("## ").trim();
    let id = MemoryId::parse(heading).map_err(|_| {
        (
            first,
            format!("{heading:?} after \"## \" is not a memory id"),
        )
    })?;
    let close = lines
        .iter()
        .enumerate()
        .skip(2)
        .find(|(_, l)| l.trim_end() == FENCE)
        .map(|(i, _)| i)
        .ok_or_else(|| {
            (
                first + 1,
                "the fields are not closed by a \"---\" line".into(),
            )
        })?;
    let mut fields = Fields::default();
    for (i, line) in lines.iter().enumerate().take(close).skip(2) {
        if line.trim().is_empty() {
            continue;
        }
        fields
            .set(line)
            .map_err(|reason| (first + i, reason.to_string()))?;
    }
    let mut body: Vec<String> = lines[close + 1..]
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let next = lines.get(close + 2 + i).copied();
            match line.strip_prefix('\\') {
                Some(rest) if starts_section(rest.trim_start_matches('\\'), next) => {
                    rest.to_owned()
                }
                _ => (*line).to_owned(),
            }
        })
        .collect();
    if body.first().is_some_and(|l| l.trim().is_empty()) {
        body.remove(0);
    }
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    let at_heading = |reason: String| (first, reason);
    let content = match (fields.content.take(), body.is_empty()) {
        (Some(v), true) => v,
        (Some(_), false) => {
            return Err(at_heading(
                "both a content field and text below the fields".into(),
            ));
        }
        (None, false) => Value::String(body.join("\n")),
        (None, true) => return Err(at_heading("no text below the fields".into())),
    };
    let created_at = fields
        .created_at
        .ok_or_else(|| at_heading("no created_at field".into()))?;
    let key = match fields.key.take() {
        Some(k) => k,
        None => Key::from_id(id),
    };
    let hash = content_hash(&value_text(&content));
    Ok(Memory {
        id,
        partition: p.clone(),
        key,
        content,
        context: fields.context,
        category: fields.category.unwrap_or_default(),
        scope: fields.scope.unwrap_or_default(),
        owner: fields.owner,
        tags: fields.tags,
        metadata: fields.metadata,
        importance: fields.importance.unwrap_or(0.5),
        source: fields.source.unwrap_or_default(),
        confidence: fields.confidence,
        content_hash: hash,
        state: fields.state.unwrap_or_default(),
        superseded_by: fields.superseded_by,
        valid_from: fields.valid_from,
        valid_until: fields.valid_until,
        created_at,
        updated_at: fields.updated_at.unwrap_or(created_at),
        last_accessed_at: fields.last_accessed_at,
        access_count: fields.access_count,
        expires_at: fields.expires_at,
        embedding_model: fields.embedding_model,
        version: fields.version.unwrap_or(1),
    })
}

/// The fields of one section as read.
#[derive(Default)]
struct Fields {
    key: Option<Key>,
    content: Option<Value>,
    context: Option<String>,
    category: Option<Category>,
    scope: Option<MemoryScope>,
    owner: Owner,
    tags: Vec<String>,
    metadata: Map<String, Value>,
    importance: Option<f32>,
    source: Option<Source>,
    confidence: Option<u8>,
    state: Option<MemoryState>,
    superseded_by: Option<MemoryId>,
    valid_from: Option<Timestamp>,
    valid_until: Option<Timestamp>,
    created_at: Option<Timestamp>,
    updated_at: Option<Timestamp>,
    last_accessed_at: Option<Timestamp>,
    access_count: u64,
    expires_at: Option<Timestamp>,
    embedding_model: Option<String>,
    version: Option<u64>,
}

impl Fields {
    /// Reads one `name: value` line.
    fn set(&mut self, line: &str) -> std::result::Result<(), String> {
        let Some((name, raw)) = line.split_once(':') else {
            return Err(format!("{line:?} is not a \"name: value\" field"));
        };
        let name = name.trim();
        let raw = raw.trim();
        let bad = |e: &dyn std::fmt::Display| format!("{name}: {e}");
        let text = || -> std::result::Result<String, String> {
            if raw.starts_with('"') {
                serde_json::from_str::<String>(raw).map_err(|e| bad(&e))
            } else {
                Ok(raw.to_owned())
            }
        };
        let time = || Timestamp::parse(raw).map_err(|e| bad(&e));
        let number = |what: &str| format!("{name}: {raw:?} is not {what}");
        match name {
            "key" => self.key = Some(Key::new(text()?).map_err(|e| bad(&e))?),
            "content" => {
                // JSON as written; plain text typed by hand is a string.
                self.content = Some(match serde_json::from_str(raw) {
                    Ok(v) => v,
                    Err(e) if raw.starts_with(['"', '[', '{']) => return Err(bad(&e)),
                    Err(_) => Value::String(raw.to_owned()),
                })
            }
            "context" => self.context = Some(text()?),
            "category" => self.category = Some(Category::parse(&text()?).map_err(|e| bad(&e))?),
            "scope" => self.scope = Some(MemoryScope::parse(raw).map_err(|e| bad(&e))?),
            "user_id" => self.owner.user_id = Some(text()?),
            "agent_id" => self.owner.agent_id = Some(text()?),
            "session_id" => self.owner.session_id = Some(text()?),
            "tags" => {
                self.tags = if raw.starts_with('[') {
                    serde_json::from_str(raw).map_err(|e| bad(&e))?
                } else {
                    raw.split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect()
                }
            }
            "metadata" => self.metadata = serde_json::from_str(raw).map_err(|e| bad(&e))?,
            "importance" => {
                self.importance = Some(raw.parse().map_err(|_| number("a number"))?);
            }
            "source" => self.source = Some(Source::parse(&text()?).map_err(|e| bad(&e))?),
            "confidence" => {
                self.confidence = Some(raw.parse().map_err(|_| number("a number 0-100"))?);
            }
            "state" => self.state = Some(MemoryState::parse(raw).map_err(|e| bad(&e))?),
            "superseded_by" => {
                self.superseded_by = Some(MemoryId::parse(raw).map_err(|e| bad(&e))?);
            }
            "valid_from" => self.valid_from = Some(time()?),
            "valid_until" => self.valid_until = Some(time()?),
            "created_at" => self.created_at = Some(time()?),
            "updated_at" => self.updated_at = Some(time()?),
            "last_accessed_at" => self.last_accessed_at = Some(time()?),
            "expires_at" => self.expires_at = Some(time()?),
            "access_count" => {
                self.access_count = raw.parse().map_err(|_| number("a count"))?;
            }
            "embedding_model" => self.embedding_model = Some(text()?),
            "version" => self.version = Some(raw.parse().map_err(|_| number("a version"))?),
            other => return Err(format!("unknown field {other:?}")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muisti_core::{Namespace, Put};
    use serde_json::json;

    fn part() -> Partition {
        Partition::of(Namespace::new("notes").expect("valid"))
    }

    fn round_trip(m: &Memory) -> Memory {
        let text = render(&m.partition, None, &[m]);
        let mut back = parse(Path::new("t.md"), &text, &m.partition).expect(&text);
        assert_eq!(back.len(), 1, "{text}");
        back.remove(0)
    }

    #[test]
    fn every_field_reads_back_equal() {
        let mut put = Put::new(part(), Some(Key::new(" odd: key").expect("valid")), "x");
        put.tags = vec!["a, b".into(), "[c]".into()];
        put.metadata = json!({"n": 1, "s": "two"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        put.context = Some("line one\nline two".into());
        put.owner.user_id = Some("\"quoted\" user".into());
        put.owner.session_id = Some("s1".into());
        put.confidence = Some(70);
        put.importance = Some(0.25);
        put.embedding_model = Some("builtin".into());
        let mut m = put.apply(None, Timestamp::from_millis(1_700_000_000_123));
        m.access_count = 3;
        m.last_accessed_at = Some(Timestamp::from_millis(1_700_000_100_000));
        m.state = MemoryState::Superseded;
        m.superseded_by = Some(MemoryId::generate());
        m.version = 4;
        for content in [
            json!("Our staging database lives in Frankfurt"),
            json!("# A title\n\n## 01JEXAMPLE0000000000000000\n---\nnot a section\n\\## escaped"),
            json!("  indented first line\nsecond"),
            json!("ends with a newline\n"),
            json!("\nstarts with one"),
            json!(""),
            json!({"theme": "dark", "n": [1, 2]}),
            json!(42),
            json!("cr\r\nlf"),
        ] {
            m.content = content;
            m.content_hash = content_hash(&value_text(&m.content));
            assert_eq!(round_trip(&m), m);
        }
    }

    #[test]
    fn a_broken_field_names_its_line() {
        let m = Put::new(part(), None, "hello").apply(None, Timestamp::from_millis(1));
        let text = render(&m.partition, None, &[&m]).replace("importance: 0.5", "importance: lots");
        let err = parse(Path::new("notes.md"), &text, &part()).expect_err("a broken field");
        let Error::Corrupted { location, reason } = err else {
            panic!("not a corruption error");
        };
        let line = text
            .lines()
            .position(|l| l.starts_with("importance"))
            .map(|i| i + 1);
        assert_eq!(Some(location), line.map(|l| format!("notes.md:{l}")));
        assert!(reason.contains("importance"), "{reason}");
    }

    #[test]
    fn a_hand_edit_changes_text_and_hash() {
        let m = Put::new(part(), None, "lives in Frankfurt").apply(None, Timestamp::from_millis(1));
        let text = render(&m.partition, None, &[&m]).replace("Frankfurt", "Reykjavik");
        let back = parse(Path::new("n.md"), &text, &part()).expect("parses");
        assert_eq!(back[0].content, json!("lives in Reykjavik"));
        assert_eq!(back[0].content_hash, content_hash("lives in Reykjavik"));
        assert_eq!(back[0].id, m.id);
    }
}

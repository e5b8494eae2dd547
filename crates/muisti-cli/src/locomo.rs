//! `muisti bench locomo`: retrieval quality and speed on LoCoMo conversations.
//!
//! One memory per dialog turn (`"<speaker>: <text>"`, plus `" [shares <caption>]"` when the
//! turn shares an image), one user per conversation, the turn id (`dia_id`) in metadata, and
//! the preceding turn of the same session as the memory's context (as an agent stores a
//! conversation). Every
//! question with evidence recalls the top 20 of its own conversation; recall@k is the share of
//! its evidence turns found in the top k.

use std::{
    collections::{BTreeMap, HashSet},
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::{Context, Result, bail};
use muisti::{Engine, Filter, Namespace, Partition, Put, RecallMode, RecallRequest};
use serde::Serialize;
use serde_json::{Value, json};

/// Options of the benchmark.
pub(crate) struct Options<'a> {
    pub data: &'a Path,
    pub engine: Engine,
    pub mode: RecallMode,
    /// Whether the engine reads memories into the graph (the run then waits for it before
    /// asking, and reports ingest with extraction).
    pub graph: bool,
    /// Write each question's ranked hits (top 50) to this file as JSON lines.
    pub dump: Option<PathBuf>,
}

struct Conversation {
    id: String,
    turns: Vec<Turn>,
    questions: Vec<Question>,
}

/// One dialog turn.
struct Turn {
    /// Its id (`D<session>:<n>`).
    dia: String,
    /// `"<speaker>: <text>"`.
    content: String,
    /// The turn before it in the same session.
    previous: Option<String>,
    /// `session_<n>`.
    session: String,
    /// When the session took place, if its date parses.
    said_at: Option<muisti::Timestamp>,
}

/// A LoCoMo session date (`"1:56 pm on 8 May, 2023"`), as UTC.
fn session_time(text: &str) -> Option<muisti::Timestamp> {
    let t = chrono::NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y").ok()?;
    Some(muisti::Timestamp::from_millis(
        t.and_utc().timestamp_millis(),
    ))
}

struct Question {
    text: String,
    evidence: Vec<String>,
    category: i64,
}

#[derive(Serialize)]
pub(crate) struct Report {
    recall_at: BTreeMap<String, f64>,
    hit_at: BTreeMap<String, f64>,
    per_category: BTreeMap<String, f64>,
    ingest_per_s: f64,
    /// Memories per second until the graph had read them all (with `--graph`).
    #[serde(skip_serializing_if = "Option::is_none")]
    ingest_with_graph_per_s: Option<f64>,
    query_p50_ms: f64,
    query_p95_ms: f64,
    peak_rss_mib: f64,
    questions: usize,
    memories: usize,
    conversations: usize,
    /// Score quantiles (p10, p50, p90, p99) of the evidence turns found in the top 20, of
    /// each question's best hit, and of the best hit of unrelated questions (another
    /// conversation's, asked of this one's memories): what a score means.
    calibration: BTreeMap<String, BTreeMap<String, f64>>,
    /// Each question's recall@10: its conversation, category and share of evidence found.
    #[serde(skip)]
    pub(crate) scores: Vec<(String, i64, f64)>,
}

const KS: [usize; 4] = [1, 5, 10, 20];

fn load(path: &Path) -> Result<Conversation> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("conversation")
        .to_owned();
    let conv = doc.get("conversation").unwrap_or(&doc);
    let mut sessions: Vec<(u32, &Vec<Value>)> = conv
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let mut turns = Vec::new();
    for (n, session) in sessions {
        let said_at = conv
            .get(format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .and_then(session_time);
        let mut previous: Option<String> = None;
        for t in session {
            let (Some(speaker), Some(dia), Some(said)) = (
                t.get("speaker").and_then(Value::as_str),
                t.get("dia_id").and_then(Value::as_str),
                t.get("text").and_then(Value::as_str),
            ) else {
                continue;
            };
            let mut content = format!("{speaker}: {said}");
            if let Some(caption) = t.get("blip_caption").and_then(Value::as_str) {
                content.push_str(&format!(" [shares {caption}]"));
            }
            turns.push(Turn {
                dia: dia.to_owned(),
                content: content.clone(),
                previous: previous.replace(content),
                session: format!("session_{n}"),
                said_at,
            });
        }
    }
    let questions = doc
        .get("qa")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|q| {
            let evidence: Vec<String> = q
                .get("evidence")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .flat_map(|e| e.split([';', ',', ' ']))
                .map(str::trim)
                .filter(|e| e.starts_with('D') && e.contains(':'))
                .map(str::to_owned)
                .collect();
            Some(Question {
                text: q.get("question")?.as_str()?.to_owned(),
                evidence,
                category: q.get("category").and_then(Value::as_i64).unwrap_or(0),
            })
        })
        .collect();
    Ok(Conversation {
        id,
        turns,
        questions,
    })
}

/// The process's peak resident set size (Linux; 0 elsewhere).
pub(crate) fn peak_rss_mib() -> f64 {
    status_mib("VmHWM:")
}

/// A size in kB from `/proc/self/status` (such as `VmRSS:`), in MiB (0 where `/proc` is
/// missing).
pub(crate) fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub(crate) fn run(opts: Options<'_>) -> Result<Report> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(opts.data)
        .with_context(|| format!("reading {}", opts.data.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no LoCoMo .json files in {}", opts.data.display());
    }
    let engine = &opts.engine;
    let ns = Namespace::new("locomo")?;
    let partition = Partition::new(engine.tenant().clone(), ns.clone());
    engine.store().flush(&partition)?;

    // Ingest every conversation.
    let mut convs = Vec::new();
    let mut memories = 0;
    let mut ingest_secs = 0.0;
    for path in &files {
        let conv = load(path)?;
        let user = format!("locomo-{}", conv.id);
        let puts: Vec<Put> = conv
            .turns
            .iter()
            .map(|t| {
                let mut p = Put::new(partition.clone(), None, t.content.as_str());
                // A turn is indexed with the turn it answers, and dated by its session.
                p.context = t.previous.clone();
                p.valid_from = t.said_at;
                p.owner.user_id = Some(user.clone());
                p.owner.session_id = Some(t.session.clone());
                p.category = muisti::Category::Conversation;
                p.metadata.insert("dia_id".into(), json!(t.dia));
                p
            })
            .collect();
        memories += puts.len();
        let start = Instant::now();
        for chunk in puts.chunks(1000) {
            engine.remember_many(chunk.to_vec())?;
        }
        ingest_secs += start.elapsed().as_secs_f64();
        convs.push(conv);
    }
    let mut ingest_with_graph_per_s = None;
    if opts.graph {
        let start = Instant::now();
        crate::bench::settle_graph(engine)?;
        let secs = ingest_secs + start.elapsed().as_secs_f64();
        ingest_with_graph_per_s = Some(memories as f64 / secs.max(f64::EPSILON));
    }

    // Ask every question with evidence.
    let mut found_at: BTreeMap<usize, f64> = KS.iter().map(|k| (*k, 0.0)).collect();
    let mut hit_at: BTreeMap<usize, f64> = KS.iter().map(|k| (*k, 0.0)).collect();
    let mut per_cat: BTreeMap<i64, (f64, usize)> = BTreeMap::new();
    let mut latencies = Vec::new();
    let mut asked = 0usize;
    let mut scores = Vec::new();
    let mut evidence_scores = Vec::new();
    let mut top_scores = Vec::new();
    let mut dump = Vec::new();
    for conv in &convs {
        let user = format!("locomo-{}", conv.id);
        for q in &conv.questions {
            if q.evidence.is_empty() {
                continue;
            }
            let req = RecallRequest {
                namespace: ns.clone(),
                query: q.text.clone(),
                limit: if opts.dump.is_some() { 50 } else { 20 },
                filter: Filter {
                    user_id: Some(user.clone()),
                    ..Filter::default()
                },
                min_score: None,
                mode: opts.mode,
                include_archived: false,
                cluster: None,
                as_of: None,
                include_superseded: false,
                include_shared: false,
                exclude_key_value: false,
            };
            let start = Instant::now();
            let hits = engine.recall(&req)?;
            latencies.push(start.elapsed().as_secs_f64() * 1000.0);
            if opts.dump.is_some() {
                let hits: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        json!({
                            "dia": h.memory.metadata.get("dia_id"),
                            "score": h.score,
                            "signals": h.signals,
                        })
                    })
                    .collect();
                dump.push(json!({
                    "conversation": conv.id,
                    "category": q.category,
                    "question": q.text,
                    "evidence": q.evidence,
                    "hits": hits,
                }));
            }
            let hits = &hits[..hits.len().min(20)];
            let ranked: Vec<&str> = hits
                .iter()
                .filter_map(|h| h.memory.metadata.get("dia_id").and_then(Value::as_str))
                .collect();
            let evidence: HashSet<&str> = q.evidence.iter().map(String::as_str).collect();
            for h in hits {
                let dia = h.memory.metadata.get("dia_id").and_then(Value::as_str);
                if dia.is_some_and(|d| evidence.contains(d)) {
                    evidence_scores.push(f64::from(h.score));
                }
            }
            if let Some(top) = hits.first() {
                top_scores.push(f64::from(top.score));
            }
            for k in KS {
                let found = ranked
                    .iter()
                    .take(k)
                    .filter(|d| evidence.contains(*d))
                    .collect::<HashSet<_>>()
                    .len();
                let share = found as f64 / evidence.len() as f64;
                *found_at.entry(k).or_default() += share;
                if found > 0 {
                    *hit_at.entry(k).or_default() += 1.0;
                }
                if k == 10 {
                    scores.push((conv.id.clone(), q.category, share));
                    let e = per_cat.entry(q.category).or_default();
                    e.0 += share;
                    e.1 += 1;
                }
            }
            asked += 1;
        }
    }
    // What a score means: the best score of another conversation's questions asked of this
    // one's memories (unrelated: other people, other events).
    let mut unrelated_scores = Vec::new();
    for (i, conv) in convs.iter().enumerate() {
        let Some(other) = convs.get((i + 1) % convs.len()).filter(|_| convs.len() > 1) else {
            break;
        };
        let user = format!("locomo-{}", conv.id);
        for q in other.questions.iter().filter(|q| !q.evidence.is_empty()) {
            let mut req = RecallRequest::new(ns.clone(), q.text.clone(), 1);
            req.filter.user_id = Some(user.clone());
            req.mode = opts.mode;
            if let Some(top) = engine.recall(&req)?.first() {
                unrelated_scores.push(f64::from(top.score));
            }
        }
    }
    engine.store().flush(&partition)?;
    if let Some(path) = &opts.dump {
        let lines: Vec<String> = dump.iter().map(Value::to_string).collect();
        std::fs::write(path, lines.join("\n") + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    latencies.sort_by(f64::total_cmp);
    let quantiles = |mut v: Vec<f64>| -> BTreeMap<String, f64> {
        v.sort_by(f64::total_cmp);
        [("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99)]
            .into_iter()
            .map(|(name, p)| (name.to_owned(), percentile(&v, p)))
            .collect()
    };
    let calibration = BTreeMap::from([
        ("evidence_hits".to_owned(), quantiles(evidence_scores)),
        ("top_hit".to_owned(), quantiles(top_scores)),
        ("top_hit_unrelated".to_owned(), quantiles(unrelated_scores)),
    ]);
    let n = asked.max(1) as f64;
    Ok(Report {
        recall_at: found_at
            .into_iter()
            .map(|(k, v)| (k.to_string(), v / n))
            .collect(),
        hit_at: hit_at
            .into_iter()
            .filter(|(k, _)| *k == 5 || *k == 10)
            .map(|(k, v)| (k.to_string(), v / n))
            .collect(),
        per_category: per_cat
            .into_iter()
            .map(|(c, (sum, count))| (c.to_string(), sum / count.max(1) as f64))
            .collect(),
        ingest_per_s: memories as f64 / ingest_secs.max(f64::EPSILON),
        ingest_with_graph_per_s,
        query_p50_ms: percentile(&latencies, 0.5),
        query_p95_ms: percentile(&latencies, 0.95),
        peak_rss_mib: peak_rss_mib(),
        questions: asked,
        memories,
        conversations: convs.len(),
        calibration,
        scores,
    })
}

impl Report {
    /// The report as lines of text.
    pub(crate) fn lines(&self) -> Vec<String> {
        let fmt = |m: &BTreeMap<String, f64>| {
            m.iter()
                .map(|(k, v)| format!("@{k} {v:.3}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        vec![
            format!(
                "{} conversations, {} memories, {} questions with evidence",
                self.conversations, self.memories, self.questions
            ),
            format!("recall  {}", fmt(&self.recall_at)),
            format!("hit     {}", fmt(&self.hit_at)),
            format!(
                "recall@10 by category  {}",
                self.per_category
                    .iter()
                    .map(|(k, v)| format!("{k}: {v:.3}"))
                    .collect::<Vec<_>>()
                    .join("  ")
            ),
            format!(
                "ingest  {:.0} memories/s (embedding included)",
                self.ingest_per_s
            ),
            format!(
                "recall latency  p50 {:.3} ms  p95 {:.3} ms (query embedding included)",
                self.query_p50_ms, self.query_p95_ms
            ),
            format!("peak RSS  {:.1} MiB", self.peak_rss_mib),
            format!(
                "scores (p10/p50/p90/p99)  {}",
                self.calibration
                    .iter()
                    .map(|(what, q)| format!(
                        "{what}: {}",
                        q.values()
                            .map(|v| format!("{v:.2}"))
                            .collect::<Vec<_>>()
                            .join("/")
                    ))
                    .collect::<Vec<_>>()
                    .join("  ")
            ),
        ]
        .into_iter()
        .chain(
            self.ingest_with_graph_per_s.map(|r| {
                format!("ingest with the graph read  {r:.0} memories/s (extraction drained)")
            }),
        )
        .collect()
    }
}

/// Recall@10 by category and overall of some questions (category `"all"`).
pub(crate) fn by_category<'a>(
    scores: impl Iterator<Item = &'a (String, i64, f64)>,
) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for (_, category, share) in scores {
        for key in [category.to_string(), "all".to_owned()] {
            let e = sums.entry(key).or_default();
            e.0 += share;
            e.1 += 1;
        }
    }
    sums.into_iter()
        .map(|(k, (sum, n))| (k, sum / n.max(1) as f64))
        .collect()
}

/// Leave-one-conversation-out choice among settings: for each conversation, the setting
/// with the best recall@10 over all questions of the others is scored on it alone. Returns
/// the held-out recall@10 by category (and `"all"`) and the setting chosen per conversation.
/// `runs` pairs a setting's label with its report; all reports are of the same
/// conversations.
pub(crate) fn leave_one_out(
    runs: &[(String, Report)],
) -> (BTreeMap<String, f64>, Vec<(String, String)>) {
    let mut conversations: Vec<&str> = runs
        .first()
        .map(|(_, r)| r.scores.iter().map(|(c, _, _)| c.as_str()).collect())
        .unwrap_or_default();
    conversations.sort_unstable();
    conversations.dedup();
    let mut held_out = Vec::new();
    let mut chosen = Vec::new();
    for conv in &conversations {
        let train = |r: &Report| {
            let (sum, n) = r
                .scores
                .iter()
                .filter(|(c, _, _)| c != conv)
                .fold((0.0, 0usize), |(s, n), (_, _, x)| (s + x, n + 1));
            sum / n.max(1) as f64
        };
        // The first of equally good settings: list the plainest first.
        let Some((label, best)) = runs
            .iter()
            .fold(None::<(&(String, Report), f64)>, |best, run| {
                let score = train(&run.1);
                match best {
                    Some((_, b)) if b >= score => best,
                    _ => Some((run, score)),
                }
            })
            .map(|(run, _)| (&run.0, &run.1))
        else {
            continue;
        };
        chosen.push(((*conv).to_owned(), label.clone()));
        held_out.extend(best.scores.iter().filter(|(c, _, _)| c == conv).cloned());
    }
    (by_category(held_out.iter()), chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(scores: &[(&str, i64, f64)]) -> Report {
        Report {
            recall_at: BTreeMap::new(),
            hit_at: BTreeMap::new(),
            per_category: BTreeMap::new(),
            ingest_per_s: 0.0,
            ingest_with_graph_per_s: None,
            query_p50_ms: 0.0,
            query_p95_ms: 0.0,
            peak_rss_mib: 0.0,
            questions: scores.len(),
            memories: 0,
            conversations: 0,
            calibration: BTreeMap::new(),
            scores: scores
                .iter()
                .map(|(c, k, x)| ((*c).to_owned(), *k, *x))
                .collect(),
        }
    }

    /// Each conversation is scored with the setting best on the others, never with the one
    /// best on itself.
    #[test]
    fn leave_one_out_chooses_on_the_other_conversations() {
        // "a" is best on conversations 1 and 2, "b" only on 3 (by far).
        let a = report(&[("1", 1, 1.0), ("2", 1, 1.0), ("3", 2, 0.0)]);
        let b = report(&[("1", 1, 0.5), ("2", 1, 0.5), ("3", 2, 1.0)]);
        let (held_out, chosen) = leave_one_out(&[("a".to_owned(), a), ("b".to_owned(), b)]);
        // Held out 1: a scores 0.5 on {2, 3}, b 0.75: b is chosen and scores 0.5 on 1.
        // Held out 2: likewise b, 0.5. Held out 3: a 1.0 on {1, 2} against b 0.5: a, 0.0.
        assert_eq!(
            chosen,
            [
                ("1".to_owned(), "b".to_owned()),
                ("2".to_owned(), "b".to_owned()),
                ("3".to_owned(), "a".to_owned())
            ]
        );
        assert!((held_out["all"] - (0.5 + 0.5 + 0.0) / 3.0).abs() < 1e-9);
        assert!((held_out["1"] - 0.5).abs() < 1e-9);
        assert!((held_out["2"] - 0.0).abs() < 1e-9);
    }

    #[test]
    fn equally_good_settings_keep_the_first() {
        let a = report(&[("1", 1, 0.5), ("2", 1, 0.5)]);
        let b = report(&[("1", 1, 0.5), ("2", 1, 0.5)]);
        let (_, chosen) = leave_one_out(&[("a".to_owned(), a), ("b".to_owned(), b)]);
        assert!(chosen.iter().all(|(_, s)| s == "a"));
    }
}

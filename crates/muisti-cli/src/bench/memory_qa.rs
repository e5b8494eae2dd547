//! `muisti bench memory-qa`: the memory a model sees, on a memory-qa set (everyday assistant
//! memories, dated, and natural questions each labelled with the memories that answer it).
//!
//! Every user's memories are written with their dates (`valid_from`); each question is
//! recalled as of its `asked` time (recall's figures: hit@1, all relevant in the top 3 and
//! 5, hit@5, MRR), and the agent's own block builder ([`muisti_agent::Agent::context`]) gives
//! the lines its prompt would carry (prompt figures: every relevant memory reached, the share
//! of injected lines that are relevant, lines per prompt, empty blocks). With `--louo`, the
//! injection rule's constants are chosen on the other users and scored on each user in turn
//! (leave one user out), beside the plain figure of the default rule.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::{Path, PathBuf},
    sync::Arc,
    time::Instant,
};

use anyhow::{Context as _, Result, bail};
use muisti::{
    Engine, Filter, MemoryId, Namespace, Put, RecallMode, RecallRequest, Timestamp, Written,
};
use muisti_agent::{Agent, Injection};
use serde::{Deserialize, Serialize};

/// One line of the data file.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Row {
    Memory {
        user: String,
        id: String,
        text: String,
        date: String,
    },
    Question {
        user: String,
        text: String,
        relevant: Vec<String>,
        kind: String,
        asked: String,
    },
}

struct Question {
    user: String,
    text: String,
    relevant: Vec<String>,
    kind: String,
    asked: Timestamp,
}

/// What one question scored.
#[derive(Clone, Debug, Default)]
struct Outcome {
    /// The rank (0 is first) of the first relevant memory in recall's top 10.
    first: Option<usize>,
    all3: bool,
    all5: bool,
    /// The prompt's lines: how many, how many relevant, and whether every relevant memory
    /// was among them.
    lines: usize,
    good: usize,
    reached: bool,
    /// With `--graph-facts`: the graph's lines among `lines`, those stated by a relevant
    /// memory, and whether every relevant memory reached the prompt as itself or as a fact
    /// it states.
    graph_lines: usize,
    graph_good: usize,
    reached_with_graph: bool,
    /// Of recall's top 10: hits scoring at least `RELEVANT_SCORE` that are relevant, that
    /// are not, and relevant memories scoring below it (or not returned).
    matched_relevant: usize,
    matched_other: usize,
    missed_relevant: usize,
}

/// The figures of a set of questions.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Figures {
    n: usize,
    #[serde(rename = "hit@1")]
    hit1: f64,
    #[serde(rename = "all@3")]
    all3: f64,
    #[serde(rename = "hit@5")]
    hit5: f64,
    #[serde(rename = "all@5")]
    all5: f64,
    mrr: f64,
    prompt_reached: f64,
    prompt_precision: f64,
    lines_per_prompt: f64,
    no_block: f64,
    /// With `--graph-facts`: the graph's lines per prompt, the share of them a relevant
    /// memory states, and every relevant memory reached as itself or as a fact it states.
    #[serde(skip_serializing_if = "Option::is_none")]
    graph: Option<GraphFigures>,
    /// "score ≥ RELEVANT_SCORE" as a test of relevance over recall's top 10: the share of
    /// the hits it calls a match that are relevant, and the share of relevant memories it
    /// calls a match.
    score_precision: f64,
    score_recall: f64,
}

/// The graph's share of the prompt (see [`Figures::graph`]).
#[derive(Clone, Debug, Default, Serialize)]
struct GraphFigures {
    lines_per_prompt: f64,
    precision: f64,
    reached: f64,
}

impl Figures {
    fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Self {
        Self::of_run(outcomes, false)
    }

    fn of_run<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>, graph: bool) -> Self {
        let mut f = Figures::default();
        let (mut lines, mut good) = (0, 0);
        let (mut hit, mut other, mut missed) = (0, 0, 0);
        let mut g = GraphFigures::default();
        let (mut graph_lines, mut graph_good) = (0, 0);
        for o in outcomes {
            graph_lines += o.graph_lines;
            graph_good += o.graph_good;
            g.reached += f64::from(o.reached_with_graph);
            hit += o.matched_relevant;
            other += o.matched_other;
            missed += o.missed_relevant;
            f.n += 1;
            f.hit1 += f64::from(o.first == Some(0));
            f.hit5 += f64::from(o.first.is_some_and(|r| r < 5));
            f.all3 += f64::from(o.all3);
            f.all5 += f64::from(o.all5);
            f.mrr += o.first.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
            f.prompt_reached += f64::from(o.reached);
            f.no_block += f64::from(o.lines == 0);
            lines += o.lines;
            good += o.good;
        }
        let n = f.n.max(1) as f64;
        for v in [
            &mut f.hit1,
            &mut f.hit5,
            &mut f.all3,
            &mut f.all5,
            &mut f.mrr,
            &mut f.prompt_reached,
            &mut f.no_block,
        ] {
            *v /= n;
        }
        f.prompt_precision = if lines == 0 {
            0.0
        } else {
            good as f64 / lines as f64
        };
        f.lines_per_prompt = lines as f64 / n;
        if graph {
            g.lines_per_prompt = graph_lines as f64 / n;
            g.reached /= n;
            g.precision = if graph_lines == 0 {
                0.0
            } else {
                graph_good as f64 / graph_lines as f64
            };
            f.graph = Some(g);
        }
        let share = |a: usize, b: usize| {
            if a + b == 0 {
                0.0
            } else {
                a as f64 / (a + b) as f64
            }
        };
        f.score_precision = share(hit, other);
        f.score_recall = share(hit, missed);
        f
    }

    fn line(&self, label: &str) -> String {
        let graph = self.graph.as_ref().map_or_else(String::new, |g| {
            format!(
                " | graph: lines {:.2} precision {:.3} reached with it {:.3}",
                g.lines_per_prompt, g.precision, g.reached
            )
        });
        format!(
            "{label:<10} n={:3} hit@1 {:.3} all@3 {:.3} hit@5 {:.3} all@5 {:.3} mrr {:.3} | prompt: reached {:.3} precision {:.3} lines {:.1} empty {:.3} | score>=RELEVANT: precision {:.3} recall {:.3}{graph}",
            self.n,
            self.hit1,
            self.all3,
            self.hit5,
            self.all5,
            self.mrr,
            self.prompt_reached,
            self.prompt_precision,
            self.lines_per_prompt,
            self.no_block,
            self.score_precision,
            self.score_recall
        )
    }
}

/// The report of a run.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// Per kind, and `all`.
    figures: BTreeMap<String, Figures>,
    /// Recall's p50 over the questions, in milliseconds.
    recall_p50_ms: f64,
    /// With `--louo`: the prompt's figures with the injection rule chosen on the other
    /// users, per kind and `all`, and the rule chosen for each user.
    #[serde(skip_serializing_if = "Option::is_none")]
    leave_one_user_out: Option<LeaveOneOut>,
    /// The memories writing marked superseded, as `[older, newer]` pairs of the data's ids.
    superseded: Vec<[String; 2]>,
}

#[derive(Debug, Serialize)]
struct LeaveOneOut {
    figures: BTreeMap<String, Figures>,
    chosen: BTreeMap<String, String>,
}

/// The candidates `--louo` chooses the injection rule among: floors and shares of the best.
const FLOORS: [f32; 10] = [0.0, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4];
const SHARES: [f32; 7] = [0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];

/// The data file: `DIR/memory-qa-dev.jsonl`, or the first `.jsonl` of `DIR`, or `DIR` itself
/// when it is a file.
fn data_file(data: &Path) -> Result<PathBuf> {
    if data.is_file() {
        return Ok(data.to_path_buf());
    }
    let dev = data.join("memory-qa-dev.jsonl");
    if dev.is_file() {
        return Ok(dev);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(data)
        .with_context(|| format!("reading {}", data.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .with_context(|| format!("no .jsonl file in {}", data.display()))
}

/// An injection rule written `FLOOR,SHARE`.
pub(crate) fn parse_injection(s: &str) -> Result<Injection> {
    let (floor, share) = s
        .split_once(',')
        .context("--injection: give FLOOR,SHARE (for example 0.05,0.4)")?;
    let rule = Injection {
        floor: floor
            .trim()
            .parse()
            .context("--injection: FLOOR is a number")?,
        share: share
            .trim()
            .parse()
            .context("--injection: SHARE is a number")?,
    };
    rule.validate()
        .map_err(|e| anyhow::anyhow!("--injection: {e}"))?;
    Ok(rule)
}

/// A day of the data as a time: noon UTC (the acceptance harness's convention).
fn noon(day: &str) -> Result<Timestamp> {
    Timestamp::parse(&format!("{day}T12:00:00Z")).map_err(|e| anyhow::anyhow!("date {day}: {e}"))
}

/// The agent reads the block only: no model is asked.
struct NoModel;

impl muisti_agent::Provider for NoModel {
    fn name(&self) -> &'static str {
        "openai"
    }
    fn model(&self) -> &str {
        "none"
    }
    fn chat(
        &self,
        _: &muisti_agent::ChatRequest,
    ) -> muisti_agent::Result<muisti_agent::ChatResponse> {
        Err(muisti_agent::AgentError::InvalidInput {
            field: "provider",
            reason: "the bench asks no model".into(),
        })
    }
    fn chat_stream(
        &self,
        request: &muisti_agent::ChatRequest,
        _: &mut dyn FnMut(&str),
    ) -> muisti_agent::Result<muisti_agent::ChatResponse> {
        self.chat(request)
    }
}

/// How a memory-qa run recalls and what it reports beyond its figures.
pub(crate) struct Run {
    /// The recall's mode.
    pub(crate) mode: RecallMode,
    /// The block's injection rule.
    pub(crate) rule: Injection,
    /// Whether the injection rule is also chosen leaving one user out.
    pub(crate) louo: bool,
    /// Where each question's ranked hits go (JSON lines), if anywhere.
    pub(crate) dump: Option<PathBuf>,
    /// With `Some(n)`: the memories are read into the graph offline (recall then weighs
    /// the graph's evidence as its configuration says) and the block carries up to `n` of
    /// the graph's facts about what the question names.
    pub(crate) graph_facts: Option<usize>,
    /// Whether each question is asked with a typing slip in its longest word ([`misspelt`]).
    pub(crate) typos: bool,
}

/// `question` with a typing slip in its longest word of at least six letters a to z (the
/// first such word of that length): its two middle letters swapped, or, where they are the
/// same letter, the one after them dropped. What a user in a hurry types; a question with no
/// such word is asked as it is.
pub(crate) fn misspelt(question: &str) -> String {
    let longest = question
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 6)
        .fold(None::<&str>, |best, w| match best {
            Some(b) if b.len() >= w.len() => Some(b),
            _ => Some(w),
        });
    let Some(word) = longest else {
        return question.to_owned();
    };
    let mut b = word.as_bytes().to_vec();
    let mid = b.len() / 2;
    if b[mid - 1] != b[mid] {
        b.swap(mid - 1, mid);
    } else {
        b.remove(mid + 1);
    }
    let slipped = String::from_utf8(b).unwrap_or_else(|_| word.to_owned());
    question.replacen(word, &slipped, 1)
}

/// How one question's block is built and judged.
struct Judge<'a> {
    engine: &'a Engine,
    text_of: &'a HashMap<String, String>,
    data_id: &'a HashMap<MemoryId, String>,
    graph_facts: Option<usize>,
}

/// Runs the set in `data` on a fresh store (`store`'s URL, else a temporary SQLite file).
pub(crate) fn memory_qa(
    data: &Path,
    store: Option<&str>,
    models: super::Models,
    config: muisti::RecallConfig,
    run: Run,
) -> Result<Report> {
    let Run {
        mode,
        rule,
        louo,
        dump,
        graph_facts,
        typos,
    } = run;
    let file = data_file(data)?;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let mut memories: Vec<(String, String, String, Timestamp)> = Vec::new();
    let mut questions = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match serde_json::from_str::<Row>(line)
            .with_context(|| format!("{} line {}", file.display(), i + 1))?
        {
            Row::Memory {
                user,
                id,
                text,
                date,
            } => memories.push((user, id, text, noon(&date)?)),
            Row::Question {
                user,
                text,
                relevant,
                kind,
                asked,
            } => questions.push(Question {
                user,
                text: if typos { misspelt(&text) } else { text },
                relevant,
                kind,
                asked: noon(&asked)?,
            }),
        }
    }
    if questions.is_empty() {
        bail!("{}: no questions", file.display());
    }
    let dir = tempfile::tempdir().context("temporary directory")?;
    let url = match store {
        Some(u) => u.to_owned(),
        None => format!("sqlite://{}", dir.path().join("memory-qa.db").display()),
    };
    // Accesses are not counted: a recall would change the next one's scores, and every
    // rule of `--louo` must see the same memories.
    let extraction = match graph_facts {
        Some(_) => muisti::graph::GraphExtraction::Offline,
        None => muisti::graph::GraphExtraction::Off,
    };
    let engine = Engine::builder(muisti::open_store(&url)?)
        .graph_extraction(extraction)
        .embedder(models.embedder)
        .reranker(models.reranker)
        .recall_config(muisti::RecallConfig {
            track_access: false,
            ..config
        })
        .build()?;
    let ns = Namespace::default_ns();
    // Each user's memories in one batch, dated; the data's ids by the store's.
    let mut data_id: HashMap<MemoryId, String> = HashMap::new();
    let mut text_of: HashMap<String, String> = HashMap::new();
    let mut by_user: BTreeMap<&str, Vec<&(String, String, String, Timestamp)>> = BTreeMap::new();
    for m in &memories {
        by_user.entry(m.0.as_str()).or_default().push(m);
        text_of.insert(m.1.clone(), m.2.clone());
    }
    for (user, ms) in &by_user {
        let puts = ms
            .iter()
            .map(|(_, _, text, at)| {
                let mut put = Put::new(engine.partition(&ns), None, text.as_str());
                put.owner.user_id = Some((*user).to_owned());
                put.valid_from = Some(*at);
                put
            })
            .collect();
        let written: Vec<Written> = engine.remember_many(puts)?;
        for (m, w) in ms.iter().zip(written) {
            data_id.insert(w.memory.id, m.1.clone());
        }
    }
    if graph_facts.is_some() {
        crate::bench::settle_graph(&engine)?;
    }
    let mut superseded = Vec::new();
    let mut list = muisti::ListQuery::all(engine.partition(&ns));
    loop {
        let page = engine.list_in_state(list.clone(), muisti::MemoryState::Superseded)?;
        let id = |i: &MemoryId| data_id.get(i).cloned().unwrap_or_else(|| "?".into());
        for m in &page.items {
            superseded.push([
                id(&m.id),
                m.superseded_by.as_ref().map_or_else(String::new, id),
            ]);
        }
        match page.next {
            Some(next) => list.after = Some(next),
            None => break,
        }
    }
    superseded.sort();
    let judge = Judge {
        engine: &engine,
        text_of: &text_of,
        data_id: &data_id,
        graph_facts,
    };
    // Recall's figures, and the block with the default rule.
    let mut outcomes = Vec::with_capacity(questions.len());
    let mut took = Vec::with_capacity(questions.len());
    let mut dumped = String::new();
    for q in &questions {
        let mut req = RecallRequest::new(ns.clone(), q.text.as_str(), 10);
        req.filter = Filter {
            user_id: Some(q.user.clone()),
            ..Filter::default()
        };
        req.mode = mode;
        req.as_of = Some(q.asked);
        let start = Instant::now();
        let hits = engine.recall(&req)?;
        took.push(start.elapsed().as_secs_f64() * 1e3);
        let ranked: Vec<&str> = hits
            .iter()
            .map(|h| data_id.get(&h.memory.id).map_or("?", String::as_str))
            .collect();
        let relevant: HashSet<&str> = q.relevant.iter().map(String::as_str).collect();
        if dump.is_some() {
            let hits: Vec<_> = hits
                .iter()
                .zip(&ranked)
                .map(|(h, id)| {
                    serde_json::json!({"id": id, "score": h.score, "signals": h.signals,
                        "text": h.memory.text()})
                })
                .collect();
            let line = serde_json::json!({"user": q.user, "kind": q.kind, "question": q.text,
                "relevant": q.relevant, "hits": hits});
            dumped.push_str(&line.to_string());
            dumped.push('\n');
        }

        let within = |k: usize| {
            relevant
                .iter()
                .all(|r| ranked.iter().take(k).any(|x| x == r))
        };
        let matched = |h: &muisti::RecallHit| h.score >= muisti::RELEVANT_SCORE;
        let is_relevant = |h: &muisti::RecallHit| {
            data_id
                .get(&h.memory.id)
                .is_some_and(|d| relevant.contains(d.as_str()))
        };
        let matched_relevant = hits.iter().filter(|h| matched(h) && is_relevant(h)).count();
        let mut o = Outcome {
            first: ranked.iter().position(|r| relevant.contains(r)),
            all3: within(3),
            all5: within(5),
            matched_relevant,
            matched_other: hits
                .iter()
                .filter(|h| matched(h) && !is_relevant(h))
                .count(),
            missed_relevant: relevant.len() - matched_relevant,
            ..Outcome::default()
        };
        judge.prompt(q, rule, &mut o)?;
        outcomes.push(o);
    }
    if let Some(path) = &dump {
        std::fs::write(path, dumped).with_context(|| format!("writing {}", path.display()))?;
    }
    took.sort_by(f64::total_cmp);
    let recall_p50_ms = took[took.len() / 2];
    let figures = by_kind(&questions, &outcomes, graph_facts.is_some());
    let leave_one_user_out = if louo {
        Some(leave_one_user_out(&judge, &questions, &outcomes)?)
    } else {
        None
    };
    Ok(Report {
        figures,
        recall_p50_ms,
        leave_one_user_out,
        superseded,
    })
}

impl Judge<'_> {
    /// The agent's block for `q` under `rule`, as its prompt would carry it: its lines,
    /// how many are relevant, and whether every relevant memory reached it (with the
    /// graph's facts: also which of its lines a relevant memory states).
    fn prompt(&self, q: &Question, rule: Injection, o: &mut Outcome) -> Result<()> {
        let agent = Agent::builder()
            .memory(self.engine.clone())
            .provider(Arc::new(NoModel))
            .recall_filter(Filter {
                user_id: Some(q.user.clone()),
                ..Filter::default()
            })
            .as_of(Some(q.asked))
            .injection(rule)
            .graph_context(self.graph_facts.unwrap_or(0))
            .store_messages(false)
            .build()?;
        let block = agent.context(&q.text)?;
        let lines: Vec<&str> = block.text.lines().filter(|l| l.starts_with("- ")).collect();
        let relevant: Vec<(&str, &str)> = q
            .relevant
            .iter()
            .filter_map(|r| self.text_of.get(r).map(|t| (r.as_str(), t.as_str())))
            .collect();
        o.lines = lines.len();
        o.good = lines
            .iter()
            .filter(|l| relevant.iter().any(|(_, t)| l.contains(t)))
            .count();
        o.reached = relevant
            .iter()
            .all(|(_, t)| lines.iter().any(|l| l.contains(t)));
        let Some(n) = self.graph_facts.filter(|n| *n > 0) else {
            o.reached_with_graph = o.reached;
            return Ok(());
        };
        // The graph's lines are the block's entries keyed by a fact's id; the agent asked
        // the graph for these same facts.
        let facts = self
            .engine
            .graph()
            .context(Some(q.user.as_str()), &q.text, n)?;
        let mut stated: HashSet<&str> = HashSet::new();
        for key in &block.keys {
            let Some(fact) = facts.iter().find(|f| f.id.to_string() == *key) else {
                continue;
            };
            o.graph_lines += 1;
            let by: Vec<&str> = fact
                .memory_ids
                .iter()
                .filter_map(|id| self.data_id.get(id).map(String::as_str))
                .filter(|d| q.relevant.iter().any(|r| r == d))
                .collect();
            o.graph_good += usize::from(!by.is_empty());
            stated.extend(by);
        }
        o.reached_with_graph = relevant
            .iter()
            .all(|(r, t)| stated.contains(r) || lines.iter().any(|l| l.contains(t)));
        Ok(())
    }
}

fn by_kind(questions: &[Question], outcomes: &[Outcome], graph: bool) -> BTreeMap<String, Figures> {
    let mut kinds: BTreeMap<String, Vec<&Outcome>> = BTreeMap::new();
    for (q, o) in questions.iter().zip(outcomes) {
        kinds.entry(q.kind.clone()).or_default().push(o);
        kinds.entry("all".to_owned()).or_default().push(o);
    }
    kinds
        .into_iter()
        .map(|(k, os)| (k, Figures::of_run(os, graph)))
        .collect()
}

/// What the choice of a rule maximises on the users it is chosen on: every relevant memory
/// reached, plus half the share of lines that are relevant. A relevant memory missing from
/// the prompt loses the answer, an irrelevant line only adds noise; weighed equally, a rule
/// that injects almost nothing wins (its few lines are exact lexical matches).
fn objective(f: &Figures) -> f64 {
    f.prompt_reached + 0.5 * f.prompt_precision
}

/// For each user, the rule best on the others (by [`objective`]; the first of the grid on
/// ties) scored on that user's questions; recall's own figures are the plain run's.
fn leave_one_user_out(
    judge: &Judge<'_>,
    questions: &[Question],
    plain: &[Outcome],
) -> Result<LeaveOneOut> {
    let rules: Vec<Injection> = FLOORS
        .iter()
        .flat_map(|&floor| SHARES.iter().map(move |&share| Injection { floor, share }))
        .collect();
    // Every rule's prompt on every question (recall's figures carried from the plain run).
    let mut runs: Vec<Vec<Outcome>> = Vec::with_capacity(rules.len());
    for rule in &rules {
        let mut outcomes = plain.to_vec();
        for (q, o) in questions.iter().zip(outcomes.iter_mut()) {
            judge.prompt(q, *rule, o)?;
        }
        runs.push(outcomes);
    }
    let users: Vec<&str> = {
        let mut u: Vec<&str> = questions.iter().map(|q| q.user.as_str()).collect();
        u.dedup();
        u
    };
    let mut held = plain.to_vec();
    let mut chosen = BTreeMap::new();
    for user in users {
        let others = |run: &[Outcome]| {
            Figures::of(
                questions
                    .iter()
                    .zip(run)
                    .filter(|(q, _)| q.user != user)
                    .map(|(_, o)| o),
            )
        };
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        for (i, run) in runs.iter().enumerate() {
            let s = objective(&others(run));
            if s > best_score + 1e-12 {
                best = i;
                best_score = s;
            }
        }
        for (i, q) in questions.iter().enumerate() {
            if q.user == user {
                held[i] = runs[best][i].clone();
            }
        }
        let r = rules[best];
        chosen.insert(
            user.to_owned(),
            format!("floor {} share {}", r.floor, r.share),
        );
    }
    Ok(LeaveOneOut {
        figures: by_kind(questions, &held, judge.graph_facts.is_some()),
        chosen,
    })
}

impl Report {
    /// The report as lines of text.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let order = |k: &&String| (k.as_str() == "all", (*k).clone());
        let mut kinds: Vec<&String> = self.figures.keys().collect();
        kinds.sort_by_key(order);
        for k in kinds {
            out.push(self.figures[k].line(k));
        }
        out.push(format!("recall p50 {:.3} ms", self.recall_p50_ms));
        out.push(format!(
            "superseded on writing: {} ({})",
            self.superseded.len(),
            self.superseded
                .iter()
                .map(|[old, new]| format!("{old} → {new}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(l) = &self.leave_one_user_out {
            out.push("leave-one-user-out (the injection rule chosen on the other users):".into());
            let mut kinds: Vec<&String> = l.figures.keys().collect();
            kinds.sort_by_key(order);
            for k in kinds {
                out.push(format!("  {}", l.figures[k].line(k)));
            }
            out.push(format!(
                "  chosen: {}",
                l.chosen
                    .iter()
                    .map(|(u, r)| format!("{u} → {r}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_question_is_misspelt_in_its_longest_word() {
        assert_eq!(
            super::misspelt("Where does my sister live these days?"),
            "Where does my sitser live these days?"
        );
        assert_eq!(super::misspelt("Who is Bob?"), "Who is Bob?");
        assert_eq!(super::misspelt("a committee"), "a comimttee");
        assert_eq!(super::misspelt("the bottle"), "the botte");
    }

    use super::*;

    fn outcome(first: Option<usize>, lines: usize, good: usize, reached: bool) -> Outcome {
        Outcome {
            first,
            all3: first.is_some_and(|r| r < 3),
            all5: first.is_some_and(|r| r < 5),
            lines,
            good,
            reached,
            ..Outcome::default()
        }
    }

    #[test]
    fn figures_count_ranks_lines_and_reach() {
        let f = Figures::of(&[
            outcome(Some(0), 2, 1, true),
            outcome(Some(3), 3, 0, false),
            outcome(None, 0, 0, false),
        ]);
        assert_eq!(f.n, 3);
        assert!((f.hit1 - 1.0 / 3.0).abs() < 1e-9);
        assert!((f.hit5 - 2.0 / 3.0).abs() < 1e-9);
        assert!((f.mrr - (1.0 + 0.25) / 3.0).abs() < 1e-9);
        assert!((f.prompt_reached - 1.0 / 3.0).abs() < 1e-9);
        assert!((f.prompt_precision - 1.0 / 5.0).abs() < 1e-9);
        assert!((f.lines_per_prompt - 5.0 / 3.0).abs() < 1e-9);
        assert!((f.no_block - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn a_question_is_read_with_its_kind_and_time() {
        let row: Row = serde_json::from_str(
            r#"{"type":"question","user":"d01","id":"d01-q05","text":"What's my occupation now?","relevant":["d01-m28"],"kind":"update","asked":"2025-11-04"}"#,
        )
        .expect("a question");
        let Row::Question { kind, asked, .. } = row else {
            panic!("not a question");
        };
        assert_eq!(kind, "update");
        assert_eq!(
            noon(&asked).expect("a day"),
            Timestamp::parse("2025-11-04T12:00:00Z").expect("a time")
        );
    }

    /// `--dump` writes one line per question: its kind, its relevant ids and the ranked
    /// hits by the data's ids, with their texts and signals.
    #[test]
    fn a_dump_has_each_questions_ranked_hits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let rows = [
            r#"{"type": "memory", "user": "u1", "id": "u1-m1", "text": "I keep bees on the roof", "date": "2024-05-01"}"#,
            r#"{"type": "memory", "user": "u1", "id": "u1-m2", "text": "My sister lives in Oslo", "date": "2024-05-02"}"#,
            r#"{"type": "question", "user": "u1", "id": "u1-q1", "text": "Where does my sister live?", "relevant": ["u1-m2"], "kind": "lexical", "asked": "2024-06-01"}"#,
        ];
        std::fs::write(dir.path().join("memory-qa-dev.jsonl"), rows.join("\n")).expect("data");
        let dump = dir.path().join("dump.jsonl");
        let models = super::super::Models {
            embedder: None,
            reranker: None,
        };
        let report = memory_qa(
            dir.path(),
            None,
            models,
            muisti::RecallConfig::default(),
            Run {
                mode: RecallMode::Hybrid,
                rule: Injection::default(),
                louo: false,
                dump: Some(dump.clone()),
                graph_facts: None,
                typos: false,
            },
        )
        .expect("bench");
        assert_eq!(report.figures["all"].n, 1);
        let text = std::fs::read_to_string(&dump).expect("dump");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert_eq!(lines[0]["kind"], "lexical");
        assert_eq!(lines[0]["relevant"][0], "u1-m2");
        assert_eq!(lines[0]["hits"][0]["id"], "u1-m2", "{text}");
        assert_eq!(lines[0]["hits"][0]["text"], "My sister lives in Oslo");
        assert!(lines[0]["hits"][0]["signals"].is_object(), "{text}");
    }

    /// With `--graph-facts`, the memories are read into the graph and the block carries
    /// the graph's facts about what a question names, judged by the memories stating them.
    #[test]
    fn graph_facts_reach_the_block_and_are_judged_by_their_memories() {
        let dir = tempfile::tempdir().expect("temp dir");
        let rows = [
            r#"{"type": "memory", "user": "u1", "id": "u1-m1", "text": "I keep bees on the roof", "date": "2024-05-01"}"#,
            r#"{"type": "memory", "user": "u1", "id": "u1-m2", "text": "My sister Nina works at Equinor", "date": "2024-05-02"}"#,
            r#"{"type": "question", "user": "u1", "id": "u1-q1", "text": "Could Nina get me a tour of her office?", "relevant": ["u1-m2"], "kind": "inference", "asked": "2024-06-01"}"#,
        ];
        std::fs::write(dir.path().join("memory-qa-dev.jsonl"), rows.join("\n")).expect("data");
        let run = |graph_facts| {
            memory_qa(
                dir.path(),
                None,
                super::super::Models {
                    embedder: None,
                    reranker: None,
                },
                muisti::RecallConfig::default(),
                Run {
                    mode: RecallMode::Hybrid,
                    rule: Injection::default(),
                    louo: false,
                    dump: None,
                    graph_facts,
                    typos: false,
                },
            )
            .expect("bench")
        };
        let plain = run(None);
        assert!(plain.figures["all"].graph.is_none());
        let report = run(Some(3));
        let graph = report.figures["all"].graph.as_ref().expect("graph figures");
        assert!(graph.lines_per_prompt >= 1.0, "{graph:?}");
        assert!((graph.precision - 1.0).abs() < 1e-9, "{graph:?}");
        assert!(
            report.figures["all"].lines_per_prompt > plain.figures["all"].lines_per_prompt,
            "the graph's lines are the block's lines"
        );
    }
}

//! `muisti bench locomo --grid`: recall settings tried side by side on LoCoMo.

use super::*;

/// What one LoCoMo run varies: the recall settings a choice is made among.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct LocomoSetting {
    pub(super) fusion: muisti::Fusion,
    pub(super) candidates: usize,
    pub(super) mode: muisti::RecallMode,
    /// The graph's weight in relevance (0: the graph is not read).
    pub(super) graph: f32,
    /// The temporal strategy's weight (0: off).
    pub(super) temporal: f32,
    /// How many days after a period a memory still speaks of it.
    pub(super) temporal_after_days: u32,
    /// Whether memories' own time expressions count.
    pub(super) temporal_text: bool,
    /// Neighbourhood evidence's weight (0: off).
    pub(super) neighbours: f32,
    /// Word-level matching's weight (0: off).
    pub(super) words: f32,
    /// Word-level matching's cosine floor.
    pub(super) words_floor: f32,
    /// How many of the best candidates word-level matching scores.
    pub(super) words_pool: usize,
    /// With a reranker: its weight and the share of a question its words must cover for
    /// recall's order to stand (`None`: no reranker).
    pub(super) rerank: Option<(f32, f32)>,
}

impl LocomoSetting {
    pub(super) fn label(&self) -> String {
        let fusion = match self.fusion {
            muisti::Fusion::Rrf { k } => format!("rrf:{k}"),
            muisti::Fusion::Weighted { lexical } => format!("weighted:{lexical}"),
            muisti::Fusion::Absolute { lexical } => format!("absolute:{lexical}"),
        };
        let mode = serde_json::to_value(self.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut strategies = String::new();
        if self.temporal > 0.0 {
            strategies.push_str(&format!(
                " temporal={} temporal_after={}",
                self.temporal, self.temporal_after_days
            ));
            if self.temporal_text {
                strategies.push_str(" temporal_text=1");
            }
        }
        if self.neighbours > 0.0 {
            strategies.push_str(&format!(" neighbours={}", self.neighbours));
        }
        if self.words > 0.0 {
            strategies.push_str(&format!(
                " words={} words_floor={} words_pool={}",
                self.words, self.words_floor, self.words_pool
            ));
        }
        if let Some((w, trust)) = self.rerank {
            strategies.push_str(&format!(" rerank={w} rerank_trust={trust}"));
        }
        format!(
            "fusion={fusion} candidates={} mode={mode} graph={}{strategies}",
            self.candidates, self.graph
        )
    }

    /// Every combination of the grid's values, this setting where a dimension is not given.
    pub(super) fn grid(&self, spec: &str) -> Result<Vec<LocomoSetting>> {
        let mut settings = vec![self.clone()];
        for dimension in spec.split(';').map(str::trim).filter(|d| !d.is_empty()) {
            let Some((name, values)) = dimension.split_once('=') else {
                anyhow::bail!("--loco-grid: {dimension:?} is not NAME=V1,V2,...");
            };
            let values: Vec<&str> = values.split(',').map(str::trim).collect();
            if values.iter().any(|v| v.is_empty()) {
                anyhow::bail!("--loco-grid: {name} has an empty value");
            }
            let mut next = Vec::new();
            for s in &settings {
                for v in &values {
                    let mut t = s.clone();
                    match name.trim() {
                        "fusion" => t.fusion = parse_fusion(v)?,
                        "candidates" => {
                            t.candidates = v.parse().with_context(|| format!("candidates {v:?}"))?
                        }
                        "mode" => t.mode = v.parse()?,
                        "graph" => t.graph = grid_weight("graph", v)?,
                        "temporal" => t.temporal = grid_weight("temporal", v)?,
                        "temporal_after" => {
                            t.temporal_after_days = v
                                .parse()
                                .with_context(|| format!("temporal_after {v:?} (days)"))?
                        }
                        "temporal_text" => {
                            t.temporal_text = match *v {
                                "0" => false,
                                "1" => true,
                                _ => anyhow::bail!("--loco-grid: temporal_text is 0 or 1"),
                            }
                        }
                        "neighbours" => t.neighbours = grid_weight("neighbours", v)?,
                        "words" => t.words = grid_weight("words", v)?,
                        "words_floor" => {
                            t.words_floor = grid_weight("words_floor", v)?;
                            if t.words_floor >= 1.0 {
                                anyhow::bail!("--loco-grid: words_floor is below 1");
                            }
                        }
                        "words_pool" => {
                            t.words_pool = v.parse().with_context(|| format!("words_pool {v:?}"))?
                        }
                        "rerank" | "rerank_trust" => {
                            let Some((w, trust)) = t.rerank.as_mut() else {
                                anyhow::bail!("--loco-grid: {name} needs --reranker");
                            };
                            let v = grid_weight(name, v)?;
                            if name == "rerank" { *w = v } else { *trust = v }
                        }
                        other => anyhow::bail!(
                            "--loco-grid: {other:?} is not fusion, candidates, mode, graph, \
                             temporal, temporal_after, temporal_text, neighbours, words, \
                             words_floor, words_pool, rerank or rerank_trust"
                        ),
                    }
                    next.push(t);
                }
            }
            settings = next;
        }
        // The plain setting first (preferred on ties), each setting once.
        let mut out = vec![self.clone()];
        for s in settings {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        Ok(out)
    }
}

/// `rrf`, `rrf:K`, `weighted:W` or `absolute:W`: the one spelling of a fusion on the command
/// line.
pub(super) fn parse_fusion(spec: &str) -> Result<muisti::Fusion> {
    Ok(match spec.split_once(':') {
        Some(("rrf", k)) => muisti::Fusion::Rrf { k: k.parse()? },
        None if spec == "rrf" => muisti::Fusion::Rrf { k: 60.0 },
        Some(("weighted", w)) => muisti::Fusion::Weighted {
            lexical: w.parse()?,
        },
        Some(("absolute", w)) => muisti::Fusion::Absolute {
            lexical: w.parse()?,
        },
        _ => anyhow::bail!("fusion {spec:?} is not rrf[:K], weighted:W or absolute:W"),
    })
}

/// A strategy's weight in a `--loco-grid` value: a number, 0 or more.
pub(super) fn grid_weight(name: &str, v: &str) -> Result<f32> {
    let w: f32 = v.parse().with_context(|| format!("{name} weight {v:?}"))?;
    if !w.is_finite() || w < 0.0 {
        anyhow::bail!("--loco-grid: a {name} weight is 0 or more");
    }
    Ok(w)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn locomo(
    data: &std::path::Path,
    store: Option<&str>,
    models: super::Models,
    config: muisti::RecallConfig,
    plain: LocomoSetting,
    grid: Option<&str>,
    dump: Option<&std::path::Path>,
    json: bool,
) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary directory")?;
    let run = |setting: &LocomoSetting, file: &str| -> Result<crate::locomo::Report> {
        let url = match store {
            Some(u) => u.to_owned(),
            None => format!("sqlite://{}", dir.path().join(file).display()),
        };
        let mut config = config.clone();
        config.fusion = setting.fusion;
        config.candidates = setting.candidates;
        config.graph = setting.graph;
        config.temporal = setting.temporal;
        config.temporal_after =
            std::time::Duration::from_secs(u64::from(setting.temporal_after_days) * 86_400);
        config.temporal_text = setting.temporal_text;
        config.neighbours = setting.neighbours;
        config.words = setting.words;
        config.words_floor = setting.words_floor;
        config.words_pool = setting.words_pool;
        if let Some((w, trust)) = setting.rerank {
            config.rerank = w;
            config.rerank_trust = trust;
        }
        let graph = setting.graph > 0.0;
        let extraction = if graph {
            muisti::graph::GraphExtraction::Offline
        } else {
            muisti::graph::GraphExtraction::Off
        };
        let engine = muisti::Engine::builder(muisti::open_store(&url)?)
            .embedder(models.embedder.clone())
            .reranker(models.reranker.clone())
            .recall_config(config)
            .graph_extraction(extraction)
            .build()?;
        crate::locomo::run(crate::locomo::Options {
            data,
            engine,
            mode: setting.mode,
            graph,
            dump: dump.map(std::path::Path::to_path_buf),
        })
    };
    let Some(grid) = grid else {
        let report = run(&plain, "locomo.db")?;
        return super::print_report(&report, &report.lines(), json);
    };
    let settings = plain.grid(grid)?;
    if store.is_some() && settings.iter().any(|s| s.graph > 0.0) {
        anyhow::bail!(
            "a graph weight runs on a fresh SQLite file: leave out --store (a store's graph \
             would carry over from one run to the next)"
        );
    }
    let mut runs = Vec::new();
    for (i, setting) in settings.iter().enumerate() {
        let report = run(setting, &format!("locomo-{i}.db"))?;
        runs.push((setting.label(), report));
    }
    let (held_out, chosen) = crate::locomo::leave_one_out(&runs);
    let plain_r10 = crate::locomo::by_category(runs[0].1.scores.iter());
    let fmt = |m: &std::collections::BTreeMap<String, f64>| {
        m.iter()
            .map(|(k, v)| format!("{k}: {v:.3}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    if json {
        let per_setting: Vec<serde_json::Value> = runs
            .iter()
            .map(|(label, r)| serde_json::json!({"setting": label, "report": r, "recall_at_10": crate::locomo::by_category(r.scores.iter())}))
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": per_setting,
                "plain": {"setting": runs[0].0, "recall_at_10": plain_r10},
                "leave_one_conversation_out": {"recall_at_10": held_out, "chosen": chosen},
            }))?
        )?;
        return Ok(());
    }
    for (label, r) in &runs {
        outln!(
            "{label}: recall@10  {}",
            fmt(&crate::locomo::by_category(r.scores.iter()))
        )?;
        outln!("  {}", r.lines()[4..].join("\n  "))?;
    }
    outln!("plain ({}): recall@10  {}", runs[0].0, fmt(&plain_r10))?;
    outln!(
        "leave-one-conversation-out (chosen on the other four among {} settings): recall@10  {}",
        runs.len(),
        fmt(&held_out)
    )?;
    outln!(
        "  chosen: {}",
        chosen
            .iter()
            .map(|(c, s)| format!("{c} → {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    Ok(())
}

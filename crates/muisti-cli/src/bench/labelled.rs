//! The labelled corpora's benches: near duplicates, conflicts, fact and graph extraction.

use super::*;

/// A labelled corpus (JSON lines) from `path`; `what` names it in errors.
pub(super) fn read_labelled<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    what: &str,
) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    muisti_lang::labelled::parse_jsonl(&text)
        .with_context(|| format!("{} is not a corpus of {what}", path.display()))
}

/// The cosine of two texts' vectors, if there is an embedder and it answers.
pub(super) fn pair_cosine(
    embedder: Option<&std::sync::Arc<dyn muisti::Embedder>>,
    a: &str,
    b: &str,
) -> Option<f32> {
    let v = embedder?.embed(&[a, b]).ok()?;
    Some(muisti::text::cosine(v.first()?, v.get(1)?))
}

/// `muisti bench duplicates`: the near-duplicate rule's figures.
pub(super) fn duplicates(
    data: &std::path::Path,
    embedder: Option<std::sync::Arc<dyn muisti::Embedder>>,
    errors: bool,
    json: bool,
) -> Result<()> {
    use muisti_lang::conflict::LabelledDuplicate;
    let pairs: Vec<LabelledDuplicate> = read_labelled(data, "labelled pairs")?;
    let cosines: Vec<Option<f32>> = pairs
        .iter()
        .map(|p| pair_cosine(embedder.as_ref(), &p.a, &p.b))
        .collect();
    let all: Vec<&LabelledDuplicate> = pairs.iter().collect();
    let rows: Vec<(f32, muisti_lang::conflict::DuplicateScores)> =
        muisti_lang::conflict::DUPLICATE_THRESHOLDS
            .iter()
            .map(|t| {
                (
                    *t,
                    muisti_lang::conflict::score_duplicates(&all, &cosines, *t),
                )
            })
            .collect();
    let (held_out, chosen) = muisti_lang::conflict::cross_validate_duplicates(&pairs, &cosines, 5);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pairs": pairs.len(),
                "by_threshold": rows.iter().map(|(t, s)| serde_json::json!({"threshold": t, "scores": s, "precision": s.precision(), "recall": s.recall()})).collect::<Vec<_>>(),
                "cross_validated": {"scores": held_out, "precision": held_out.precision(), "recall": held_out.recall(), "thresholds": chosen},
            }))?
        )?;
        return Ok(());
    }
    outln!("{} labelled pairs from {}", pairs.len(), data.display())?;
    for (t, s) in &rows {
        outln!(
            "cosine >= {t:.2}: precision {:.3} ({} of {}), recall {:.3} (of {})",
            s.precision(),
            s.right,
            s.right + s.wrong,
            s.recall(),
            s.duplicates
        )?;
    }
    outln!(
        "5-fold cross-validated (threshold chosen on four folds: {:?}): precision {:.3}, recall {:.3}",
        chosen,
        held_out.precision(),
        held_out.recall()
    )?;
    if errors {
        for (p, c) in pairs.iter().zip(&cosines) {
            let t = chosen[(p.id % 5) as usize];
            let judged = muisti_lang::conflict::near_duplicates(&p.a, &p.b, *c, t);
            if judged != p.duplicate {
                outln!(
                    "{:>4} labelled {:<5} cosine {:.2}: {:?} | {:?}",
                    p.id,
                    p.duplicate,
                    c.unwrap_or(f32::NAN),
                    p.a,
                    p.b
                )?;
            }
        }
    }
    Ok(())
}

/// `muisti bench extract`: the offline fact extractor on each split of the corpus.
pub(super) fn fact_extract(data: &std::path::Path, misses: bool, json: bool) -> Result<()> {
    use muisti::facts::OfflineExtractor;
    use muisti_bench::facts as eval;
    let corpus: Vec<eval::LabelledConversation> = read_labelled(data, "labelled conversations")?;
    let mut all = serde_json::Map::new();
    for split in ["tune", "test"] {
        let part: Vec<eval::LabelledConversation> = corpus
            .iter()
            .filter(|c| c.split == split)
            .cloned()
            .collect();
        let engine = |_: &eval::LabelledConversation| {
            muisti::Engine::builder(muisti::open_store("mem://")?).build()
        };
        let s = eval::evaluate(
            &part,
            &engine,
            &|_| std::sync::Arc::new(OfflineExtractor),
            None,
        )?;
        if !json {
            outln!(
                "{split}: {} conversations; facts precision {:.3} ({} of {} extracted), recall {:.3} (of {} labelled); dates {:.3} ({} of {}); decisions {:.3} ({} of {}) {:?}",
                s.conversations,
                s.precision(),
                s.right,
                s.found,
                s.recall(),
                s.facts,
                s.date_accuracy(),
                s.dated_right,
                s.dated,
                s.decision_accuracy(),
                s.decisions_right,
                s.decisions,
                s.by_event
            )?;
            if misses {
                for m in &s.misses {
                    outln!("  {m}")?;
                }
            }
        }
        all.insert(
            split.to_owned(),
            serde_json::json!({"scores": s, "precision": s.precision(), "recall": s.recall(),
                "date_accuracy": s.date_accuracy(), "decision_accuracy": s.decision_accuracy()}),
        );
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
    }
    Ok(())
}

pub(super) fn graph_extract(
    data: &[std::path::PathBuf],
    names: &[std::path::PathBuf],
    misses: bool,
    json: bool,
) -> Result<()> {
    use muisti_lang::relations as extract;
    let mut extraction = Vec::new();
    for path in data {
        let corpus: Vec<extract::LabelledConversation> =
            read_labelled(path, "labelled conversations")?;
        let s = extract::evaluate(&corpus, extract::offline);
        if !json {
            outln!(
                "{} ({} conversations): facts precision {:.3} ({} of {} extracted), recall {:.3} (of {} labelled); entities precision {:.3} ({} of {}), recall {:.3} (of {})",
                path.display(),
                corpus.len(),
                s.fact_precision(),
                s.facts_right,
                s.facts_found,
                s.fact_recall(),
                s.facts,
                s.entity_precision(),
                s.entities_right,
                s.entities_found,
                s.entity_recall(),
                s.entities
            )?;
            if misses {
                for m in &s.misses {
                    outln!("  {m}")?;
                }
            }
        }
        extraction.push(serde_json::json!({
            "data": path.display().to_string(),
            "conversations": corpus.len(),
            "fact_precision": s.fact_precision(),
            "fact_recall": s.fact_recall(),
            "entity_precision": s.entity_precision(),
            "entity_recall": s.entity_recall(),
            "scores": s,
        }));
    }
    let mut resolution = Vec::new();
    for path in names {
        let named: Vec<muisti_bench::resolution::LabelledNames> =
            read_labelled(path, "labelled names")?;
        let engine = muisti::Engine::builder(muisti::open_store("mem://")?)
            .graph_extraction(muisti::graph::GraphExtraction::Offline)
            .build()?;
        let r = muisti_bench::resolution::evaluate_resolution(&engine, &named)?;
        if !json {
            outln!(
                "resolution, {} ({} conversations): precision {:.3} ({} of {} pairs joined), recall {:.3} (of {} labelled pairs); {} of {} names found",
                path.display(),
                named.len(),
                r.precision(),
                r.pairs_right,
                r.pairs_joined,
                r.recall(),
                r.same_pairs,
                r.names_found,
                r.names
            )?;
        }
        resolution.push(serde_json::json!({
            "data": path.display().to_string(),
            "conversations": named.len(),
            "scores": r,
            "precision": r.precision(),
            "recall": r.recall(),
        }));
    }
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"extraction": extraction, "resolution": resolution})
            )?
        )?;
    }
    Ok(())
}

/// `muisti bench conflicts`: the detector's figures on a labelled corpus.
pub(super) fn conflicts(
    data: &std::path::Path,
    embedder: Option<std::sync::Arc<dyn muisti::Embedder>>,
    errors: bool,
    json: bool,
) -> Result<()> {
    use muisti_lang::conflict as detect;
    let pairs: Vec<detect::LabelledPair> = read_labelled(data, "labelled pairs")?;
    let cosine = |a: &str, b: &str| pair_cosine(embedder.as_ref(), a, b);
    let without = detect::evaluate(&pairs, |_, _| None);
    let with = embedder.as_ref().map(|_| detect::evaluate(&pairs, cosine));
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pairs": pairs.len(),
                "without_embedder": without,
                "with_embedder": with,
                "embedder": embedder.as_ref().map(|e| e.id().to_owned()),
            }))?
        )?;
        return Ok(());
    }
    outln!("{} labelled pairs from {}", pairs.len(), data.display())?;
    outln!(
        "signals                        split  pairs  precision  recall  superseded (wrong)  possible  to a judge (+/-)"
    )?;
    let mut rows = vec![("rules only", without)];
    if let (Some(e), Some(with)) = (&embedder, with) {
        rows.push((e.id(), with));
    }
    for (name, e) in rows {
        for (split, s) in &e {
            outln!(
                "{name:<30} {split:<6} {:>5}  {:>9.3}  {:>6.3}  {:>10} ({:>3})  {:>8}  {:>6}/{:<6}",
                s.total,
                s.precision(),
                s.recall(),
                s.true_positives + s.false_positives,
                s.false_positives,
                s.possible,
                s.positives_to_judge,
                s.negatives_to_judge
            )?;
        }
    }
    if errors {
        for p in &pairs {
            let j = detect::judge(&p.existing, &p.new, cosine(&p.existing, &p.new));
            let wrong = match j.verdict {
                detect::Verdict::Supersede => !p.supersede,
                _ => p.supersede,
            };
            if wrong {
                outln!(
                    "{:>5} {:<5} {} | {:?} -> {:?} (slot {:?}, objects {}, cosine {:.2}, veto {:?})",
                    p.id,
                    p.split,
                    if p.supersede { "missed" } else { "WRONG " },
                    p.existing,
                    p.new,
                    j.shared_slot,
                    j.shared_objects,
                    j.cosine.unwrap_or(f32::NAN),
                    j.veto
                )?;
            }
        }
    }
    Ok(())
}

//! Memory from conversations: extraction requests and their reports.

use super::*;

/// The engine's request for a conversation to remember: the one reading of its fields on
/// every face (REST, MCP, the CLI in both modes).
pub fn add_request(req: api::ExtractRequest) -> Result<muisti::facts::AddRequest> {
    let messages = req
        .messages
        .into_iter()
        .map(|m| {
            Ok(muisti::facts::ChatMessage {
                role: m.role,
                content: m.content,
                name: m.name,
                created_at: timestamp("created_at", m.created_at.as_deref())?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let add = muisti::facts::AddRequest {
        namespace: namespace(req.namespace.as_deref())?,
        user_id: req.user_id,
        agent_id: req.agent_id,
        session_id: req.session_id,
        messages,
        infer: req.infer.unwrap_or(true),
    };
    add.validate()?;
    if req.background == Some(true) && !add.infer {
        return Err(Error::conflicting(
            "background",
            "background extraction reads facts: it needs infer true",
        ));
    }
    Ok(add)
}

/// Remembers a conversation ([`muisti::Engine::add_messages`]).
pub fn extract(engine: &Engine, req: api::ExtractRequest) -> Result<api::ExtractResponse> {
    Ok(extract_out(&engine.add_messages(&add_request(req)?)?))
}

/// What an extraction did, on the wire.
pub fn extract_out(r: &muisti::facts::AddReport) -> api::ExtractResponse {
    api::ExtractResponse {
        results: r
            .results
            .iter()
            .map(|x| api::ExtractResult {
                id: x.id.to_string(),
                memory: x.memory.clone(),
                event: x.event.as_str().to_owned(),
                previous_memory: x.previous_memory.clone(),
                previous_id: x.previous_id.map(|id| id.to_string()),
                kind: x.kind.to_string(),
                speaker: x.speaker.clone(),
                source: x.source.to_string(),
                confidence: x.confidence,
                at: x.at.map(|t| t.to_string()),
            })
            .collect(),
        skipped: r
            .skipped
            .iter()
            .map(|s| api::ExtractSkipped {
                message: s.message,
                text: s.text.clone(),
                reason: s.reason.as_str().to_owned(),
            })
            .collect(),
        extractor: r.extractor.clone(),
        usage: api::ModelUsage {
            calls: r.usage.calls,
            input_tokens: r.usage.input_tokens,
            output_tokens: r.usage.output_tokens,
        },
    }
}

/// Counts an extraction's model use and decisions in the metrics.
pub fn count_extraction(metrics: &crate::metrics::Metrics, done: &api::ExtractResponse) {
    metrics.model_usage(
        "extract",
        u64::from(done.usage.calls),
        done.usage.input_tokens,
        done.usage.output_tokens,
    );
    metrics.facts(done.results.iter().map(|r| r.event.as_str()));
}

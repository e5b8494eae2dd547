//! Durable runs: a message's model loop saved after each step, listed, resumed and finished.

use super::*;

impl Agent {
    /// A saved durable run.
    pub fn run(&self, id: &str) -> Result<Run> {
        let id = MemoryId::parse(id.trim())?.to_string();
        let not_found = || AgentError::NotFound {
            what: "run",
            id: id.clone(),
        };
        let memory = self.inner.memory.as_ref().ok_or_else(not_found)?;
        let value = memory
            .kv()
            .get(&ns(RUNS_NAMESPACE)?, &id)?
            .ok_or_else(not_found)?;
        serde_json::from_value(value).map_err(|e| corrupted(RUNS_NAMESPACE, &id, e))
    }

    /// Durable runs that have not completed (interrupted or failed), newest first: what
    /// [`Agent::resume`] can continue.
    pub fn unfinished_runs(&self) -> Result<Vec<Run>> {
        let Some(memory) = &self.inner.memory else {
            return Ok(Vec::new());
        };
        let mut runs = Vec::new();
        for (id, value) in memory.kv().all(&ns(RUNS_NAMESPACE)?)? {
            let run: Run =
                serde_json::from_value(value).map_err(|e| corrupted(RUNS_NAMESPACE, &id, e))?;
            if run.status != RunStatus::Completed {
                runs.push(run);
            }
        }
        runs.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(runs)
    }

    /// Resumes an interrupted durable run from its last saved step (tools already run are
    /// not run again). A completed run returns its saved reply. When the run belongs to a
    /// conversation, the conversation gets the message and the reply.
    pub fn resume(&self, run_id: &str) -> Result<Reply> {
        self.finish_run(run_id, None)
    }

    /// [`Agent::resume`] with the answer streamed to `on_text` (a completed run's saved
    /// reply is returned without being streamed).
    pub fn resume_stream(&self, run_id: &str, mut on_text: impl FnMut(&str)) -> Result<Reply> {
        self.finish_run(run_id, Some(&mut on_text))
    }

    pub(super) fn finish_run(&self, run_id: &str, on_text: OnText) -> Result<Reply> {
        let mut run = self.run(run_id)?;
        if run.status == RunStatus::Completed {
            return Ok(reply_of(&run, FinishReason::Stop));
        }
        let reply = self.drive(&mut run, on_text)?;
        if let Some(id) = run.conversation_id.clone() {
            let conv = match self.conversation_by_id(&id) {
                Ok(conv) => conv,
                // The run was the conversation's first exchange.
                Err(AgentError::NotFound { .. }) => new_conversation(id),
                Err(e) => return Err(e),
            };
            self.append_exchange(&conv, &run.message, &reply.text)?;
        }
        Ok(reply)
    }

    /// Calls the model until it answers without tool calls, running the tools it asks for
    /// and saving the run after each step.
    pub(super) fn drive(&self, run: &mut Run, mut on_text: OnText) -> Result<Reply> {
        let inner = &*self.inner;
        let mut req = ChatRequest {
            system: inner.system.clone(),
            messages: Vec::new(),
            tools: inner
                .tools
                .iter()
                .map(|t| t.spec().clone())
                .chain(
                    self.notes_offered(run.conversation_id.as_deref())
                        .then(notes::spec),
                )
                .collect(),
            max_tokens: inner.max_tokens,
            temperature: inner.temperature,
            json_schema: None,
        };
        // Each drive (a first run or a resume) gets `max_steps` model calls.
        let limit = run.steps + inner.max_steps;
        loop {
            if run.steps >= limit {
                let e = AgentError::StepLimit {
                    steps: inner.max_steps,
                };
                return Err(self.fail(run, e));
            }
            req.messages.clone_from(&run.messages);
            let answer = match on_text.as_deref_mut() {
                Some(f) => inner.provider.chat_stream(&req, f),
                None => inner.provider.chat(&req),
            };
            let answer = match answer {
                Ok(a) => a,
                Err(e) => return Err(self.fail(run, e)),
            };
            run.usage += answer.usage;
            if answer.tool_calls.is_empty() {
                run.status = RunStatus::Completed;
                run.reply = Some(answer.text);
                run.error = None;
                self.save_run(run)?;
                return Ok(reply_of(run, answer.finish));
            }
            let mut said = Message::assistant(answer.text);
            said.tool_calls.clone_from(&answer.tool_calls);
            run.messages.push(said);
            for call in answer.tool_calls {
                let result = self.call_tool(&call, run.conversation_id.as_deref());
                run.messages.push(Message::tool(call.id.clone(), result));
                run.tool_calls.push(call);
            }
            run.steps += 1;
            self.save_run(run)?;
        }
    }

    /// Records a failure in the run (when durable) and returns the error.
    pub(super) fn fail(&self, run: &mut Run, e: AgentError) -> AgentError {
        run.status = RunStatus::Failed;
        run.error = Some(format!("{}: {e}", e.kind()));
        if let Err(save) = self.save_run(run) {
            warn!(kind = %save.kind(), error = %save, "could not save the failed run");
        }
        e
    }

    pub(super) fn save_run(&self, run: &mut Run) -> Result<()> {
        let Some(memory) = self
            .inner
            .memory
            .as_ref()
            .filter(|_| self.inner.durable_runs)
        else {
            return Ok(());
        };
        run.updated_at = Timestamp::now();
        let value =
            serde_json::to_value(&*run).map_err(|e| corrupted(RUNS_NAMESPACE, &run.id, e))?;
        // A completed run is kept for a while so that resuming it again returns its reply.
        let ttl = (run.status == RunStatus::Completed).then_some(self.inner.run_retention);
        memory.kv().set(&ns(RUNS_NAMESPACE)?, &run.id, value, ttl)?;
        Ok(())
    }
}

fn reply_of(run: &Run, finish: FinishReason) -> Reply {
    Reply {
        text: run.reply.clone().unwrap_or_default(),
        recalled: run.recalled.clone(),
        tool_calls: run.tool_calls.clone(),
        usage: run.usage,
        finish,
        run_id: Some(run.id.clone()),
    }
}

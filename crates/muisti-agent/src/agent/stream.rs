//! Streaming: the pieces of an answer as an iterator, the reply at the end.

use super::*;

/// The pieces of a streamed answer, produced on a background thread. Iterate for the
/// text; then [`TokenStream::finish`] for the whole reply or the error.
pub struct TokenStream {
    rx: mpsc::Receiver<String>,
    handle: Option<JoinHandle<Result<Reply>>>,
}

impl TokenStream {
    pub(super) fn spawn(
        work: impl FnOnce(mpsc::Sender<String>) -> Result<Reply> + Send + 'static,
    ) -> Self {
        let (tx, rx) = mpsc::channel();
        let handle = thread::spawn(move || work(tx));
        Self {
            rx,
            handle: Some(handle),
        }
    }

    /// Waits for the end of the answer: the reply, or why it failed.
    pub fn finish(mut self) -> Result<Reply> {
        while self.rx.recv().is_ok() {}
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(AgentError::Provider {
                provider: "agent",
                status: None,
                reason: "the streaming thread stopped unexpectedly".into(),
            }),
        }
    }
}

impl Iterator for TokenStream {
    type Item = String;
    fn next(&mut self) -> Option<String> {
        self.rx.recv().ok()
    }
}

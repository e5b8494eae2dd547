//! Embedders: text to vectors, for muisti's semantic recall.
//!
//! * [`Embedder`]: the trait (batch embedding, dimensions, a model id stored with every
//!   vector so that a store knows what indexed it).
//! * [`StaticEmbedder`]: a model2vec-style static model: tokens looked up in a table and
//!   averaged. [`StaticEmbedder::builtin`] is compiled into the binary: distilled from
//!   all-MiniLM-L6-v2 (256 dimensions, float16, see `model/NOTICE`), it works offline with
//!   nothing to download, at microseconds per sentence.
//! * [`HttpEmbedder`]: any OpenAI-compatible `/embeddings` service (OpenAI, Ollama, vLLM,
//!   LM Studio), batched, with retries and back-off on 429 and 5xx.
//!
//! ```
//! use muisti_embed::{Embedder, StaticEmbedder};
//!
//! let e = StaticEmbedder::builtin()?;
//! let v = e.embed(&["I moved to Lisbon in March"])?;
//! assert_eq!(v[0].len(), e.dimensions());
//! # Ok::<(), muisti_embed::EmbedError>(())
//! ```

mod http;
mod retry;
pub mod safetensors;
mod static_model;
mod wordpiece;

pub use http::{HttpConfig, HttpEmbedder};
pub use retry::{Attempt, Backoff, retry, retry_after};
pub use static_model::{BUILTIN_ID, StaticEmbedder, WordMatcher};
pub use wordpiece::WordPiece;

/// Why embedding failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The model files are missing or malformed.
    #[error("embedding model: {0}")]
    Model(String),
    /// An embedding service failed or answered something unusable.
    #[error("embedding service {endpoint}: {reason}")]
    Service {
        /// The endpoint, without credentials.
        endpoint: String,
        /// What went wrong.
        reason: String,
        /// Whether retrying later may succeed.
        retryable: bool,
    },
}

/// Turns texts into vectors of a fixed size.
pub trait Embedder: Send + Sync {
    /// A stable id of the model (and its settings) that makes the vectors: stored with each
    /// vector, so that vectors from different models are never compared.
    fn id(&self) -> &str;

    /// The length of every vector.
    fn dimensions(&self) -> usize;

    /// One unit-length vector per text, in order. An empty text gives a zero vector.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Matching `query`'s words by meaning, token by token ([`WordMatcher`]), if the model
    /// has a vector for each token (a static model does; `None` otherwise, the default).
    /// Words for which `skip` (given the word in lower case) is true do not count, in the
    /// query or in the texts scored; cosines at or below `floor` count nothing.
    fn word_matcher(
        &self,
        _query: &str,
        _skip: fn(&str) -> bool,
        _floor: f32,
    ) -> Option<WordMatcher<'_>> {
        None
    }

    /// Called with memories' texts as they are written, with the `skip` recall will pass to
    /// [`Embedder::word_matcher`]: an embedder that matches words reads their words now, off
    /// the recall path (the static model remembers them; nothing, the default, otherwise).
    fn prepare_words(&self, _texts: &[&str], _skip: fn(&str) -> bool) {}

    /// Embeds one text.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed(&[text])?
            .pop()
            .ok_or_else(|| EmbedError::Model("the embedder returned no vector".into()))
    }
}

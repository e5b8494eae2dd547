//! muisti's evaluations of the engine on the labelled corpora under
//! `crates/muisti-lang/tests/data`, over the engine's public API only, so they are apart
//! from the library: the tests and `muisti bench` run them. (The English rules' own
//! evaluations, which need no engine, are `muisti_lang`'s.)
//!
//! * [`facts`]: an extractor on labelled conversations (facts found, their times, and the
//!   decision each led to against the conversation's prior memory);
//! * [`resolution`]: entity resolution on labelled names.

pub mod facts;
pub mod resolution;

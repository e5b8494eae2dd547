//! muisti's English rules, apart from the engine: what a person's words say, read with no
//! model. The engine keeps the traits (a fact extractor, a conflict judge, a graph
//! extractor) and offline implementations that call these rules; a model may stand in for
//! any of them.
//!
//! * [`time`]: the one reader of time expressions ("last week", "in June 2024", "on March
//!   3"), as periods against a reference time and as the date a statement names;
//! * [`conflict`]: whether a new statement supersedes an old one of the same person, and
//!   whether two memories are near duplicates;
//! * [`facts`]: the facts a message states ("I moved to Berlin last month" → "I live in
//!   Berlin", dated);
//! * [`relations`]: entities and relations between them in a memory's text;
//! * [`labelled`]: the one reader of the labelled corpora under `tests/data` that measure
//!   these rules.
//!
//! Every rule is a pure function of its text (and a reference time): nothing here reads a
//! store, a clock or the network.

pub mod conflict;
pub mod facts;
pub mod labelled;
pub mod relations;
pub mod time;

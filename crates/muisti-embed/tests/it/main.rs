//! Embedder tests: the built-in model against model2vec's own vectors, and the HTTP embedder
//! against a scripted server on loopback.

mod builtin;
mod http;

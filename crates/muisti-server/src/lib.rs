//! muisti over the network: `muisti serve`.
//!
//! - [`rest`]: the JSON REST API under `/v1` (the paths are a contract) and its OpenAPI 3.1
//!   document, generated from the handlers ([`openapi_document`]).
//! - [`mcp`]: the MCP tools, over stdio ([`mcp::serve_stdio`]) or streamable HTTP at `/mcp`.
//! - [`keys`]: API keys bound to tenants, stored hashed in the store's system tenant.
//! - [`app`]: the router, the middleware and [`Server`] with graceful shutdown.
//! - [`config`]: settings from a TOML file, the environment and flags.
//!
//! The tenant of every request comes from its credential and nothing else: handlers confine
//! the engine to it with [`muisti::Engine::with_tenant`], and the store addresses every read,
//! write, search and delete by that tenant.

pub mod app;
pub mod browser;
pub mod chat;
pub mod config;
mod conn;
pub mod error;
pub mod extract;
pub mod keys;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod ops;
pub mod proxy;
pub mod rest;
mod slots;
pub mod ui;

pub use app::{AppState, ServeError, Server, router, shutdown_signal};
pub use config::{ChatConfig, ConfigError, ConfigLayer, ServerConfig};
pub use error::ApiError;
pub use keys::{Caller, KeyRing};
pub use openapi::openapi_document;

//! What may lift a candidate beyond the retrievers' fusion, one strategy a file. Each adds
//! its part to [`super::fuse::Fused`] (recorded in the candidate's [`super::Signals`]) and
//! makes relevance again by the fusion's rule ([`super::fuse::normalise`]); each reads the
//! store only through the recall's [`super::Context`].

pub(super) mod graph;
pub(super) mod neighbours;
pub(super) mod successors;
pub(super) mod temporal;
pub(crate) mod words;

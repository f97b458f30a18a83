//! What a tool contract is, without any I/O: a definition's canonical hash, the
//! surface a server lists (tools, prompts, resources), what a change between two
//! definitions means (`classify`), and whether call arguments fit an input schema
//! (`validate`). Uses only [`crate::base`].

pub mod classify;
pub mod hash;
pub mod surface;
pub mod validate;

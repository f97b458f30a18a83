//! The bottom layer: the vocabulary and plumbing every other layer shares and none
//! owns. The action a change sets, calendar arithmetic, safe file reading and
//! writing, the JSON reader and writer, showing server text safely, what the MCP
//! protocol itself defines, secret redaction, and HTTP basics. Knows nothing of
//! servers, locks or verdicts.

pub mod action;
pub mod clock;
pub mod files;
pub mod json;
pub mod net;
pub mod protocol;
pub mod secrets;
pub mod text;

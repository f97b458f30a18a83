//! What the MCP protocol itself defines that several parts of mcp-lock read: the
//! versions it speaks (the client, the authorization probe) and the HTTP headers
//! mirrored from a request (the client, and the classifier, for which a parameter
//! that reaches a header is authority).

pub mod headers;

/// Every protocol version mcp-lock speaks, oldest first. A lock pins one of these.
pub const PROTOCOL_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The newest handshake-era protocol version mcp-lock asks for.
pub const LEGACY_VERSION: &str = "2025-11-25";
/// The modern protocol version mcp-lock asks for.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Whether a protocol version belongs to the modern era (no handshake; per-request
/// `_meta`). Versions are dates, so they compare as strings.
pub fn is_modern(version: &str) -> bool {
    version >= MODERN_VERSION
}

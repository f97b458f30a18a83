//! The "tool definition hash, version 1" recipe: per-definition hash, set hash and
//! instructions hash, interoperable with the published test vectors.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::json::{CanonError, Json, JsonStr};

/// Lowercase hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(digest.len() * 2);
    for byte in digest {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

/// SHA-256 of the definition's RFC 8785 canonical form: the whole object as sent.
pub fn definition_hash(definition: &Json) -> Result<String, CanonError> {
    thread_local! {
        /// The canonical form is written into the same buffer each time: a listing's
        /// thousands of definitions then cost no allocation for it after the first.
        static BUFFER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.try_borrow_mut().ok();
        match buffer.as_deref_mut() {
            Some(out) => {
                out.clear();
                definition.canonical_into(out)?;
                let hash = sha256_hex(out.as_bytes());
                if out.capacity() > 1 << 20 {
                    // One huge definition does not keep its megabytes for the rest.
                    *out = String::new();
                }
                Ok(hash)
            }
            None => Ok(sha256_hex(definition.canonical()?.as_bytes())),
        }
    })
}

/// SHA-256 of the `instructions` string as received.
pub fn instructions_hash(instructions: &str) -> String {
    sha256_hex(instructions.as_bytes())
}

/// The set hash over `name:hash` lines, sorted by name (UTF-16 order) then hash,
/// joined by "\n" with no trailing newline.
pub fn set_hash<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut lines: Vec<(JsonStr, &str)> = entries
        .into_iter()
        .map(|(name, hash)| (JsonStr::from(name), hash))
        .collect();
    lines.sort();
    let joined = lines
        .iter()
        .map(|(name, hash)| format!("{}:{hash}", name.to_string_lossy()))
        .collect::<Vec<_>>()
        .join("\n");
    sha256_hex(joined.as_bytes())
}

/// One definition of a listing with what the recipe makes of it.
#[derive(Debug, Clone)]
pub struct HashedTool {
    /// The definition exactly as sent, shared with the reports and the lock that
    /// hold it too (a definition can be megabytes).
    pub definition: Arc<Json>,
    /// Its key (`name`, or the member [`HashedTool::keyed`] names), when that is a
    /// string of valid Unicode.
    pub name: Option<String>,
    /// Its hash, or why it has none.
    pub hash: Result<String, CanonError>,
}

impl HashedTool {
    pub fn new(definition: Json) -> Self {
        HashedTool::shared(Arc::new(definition))
    }

    /// A definition identified by another member than `name` (a resource template's
    /// `uriTemplate`, a resource's `uri`), which becomes its `name` here.
    pub fn keyed(definition: Json, key: &str) -> Self {
        HashedTool::shared_keyed(Arc::new(definition), key)
    }

    /// [`HashedTool::new`] for a definition held elsewhere too.
    pub fn shared(definition: Arc<Json>) -> Self {
        HashedTool::shared_keyed(definition, "name")
    }

    /// [`HashedTool::keyed`] for a definition held elsewhere too.
    pub fn shared_keyed(definition: Arc<Json>, key: &str) -> Self {
        let name = definition.get(key).and_then(Json::as_str);
        let hash = definition_hash(&definition);
        HashedTool {
            definition,
            name,
            hash,
        }
    }
}

/// Why a listing has no set hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetHashError {
    #[error("definition #{index} has no string name")]
    NoName { index: usize },
    #[error("definition {name:?} has no canonical form: {reason}")]
    Unhashable { name: String, reason: CanonError },
}

/// The set hash of a whole listing, or why it has none.
pub fn listing_set_hash(tools: &[HashedTool]) -> Result<String, SetHashError> {
    let mut entries = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.name.as_deref().ok_or(SetHashError::NoName { index })?;
        let hash = tool
            .hash
            .as_deref()
            .map_err(|reason| SetHashError::Unhashable {
                name: name.to_string(),
                reason: reason.clone(),
            })?;
        entries.push((name, hash));
    }
    Ok(set_hash(entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_set_hashes_the_empty_string() {
        assert_eq!(
            set_hash([]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn set_hash_ignores_listing_order() {
        assert_eq!(
            set_hash([("b", "1"), ("a", "2")]),
            set_hash([("a", "2"), ("b", "1")])
        );
    }
}

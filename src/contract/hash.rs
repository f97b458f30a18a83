//! The "tool definition hash, version 1" recipe: per-definition hash, set hash and
//! instructions hash, interoperable with the published test vectors.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::base::json::{CanonError, Json, Listed, Sink, cmp_utf16, stream_listing};

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
    let mut out = HashSink::default();
    definition.canonical_into(&mut out)?;
    Ok(out.finish())
}

/// Canonical text fed to SHA-256 as it is written, through a small buffer: the
/// hasher is fastest on large slices, and the text (megabytes for a large definition)
/// is never held whole.
struct HashSink {
    hasher: Sha256,
    /// Never grown past [`HashSink::BUFFER`]; left uninitialised until written (a
    /// zeroed array would cost a memset and copies per definition).
    buffer: Vec<u8>,
}

impl HashSink {
    const BUFFER: usize = 4096;

    fn finish(mut self) -> String {
        self.hasher.update(&self.buffer);
        hex(&self.hasher.finalize())
    }

    /// The hash of what was put, leaving the sink empty for the next text.
    fn finish_reset(&mut self) -> String {
        self.hasher.update(&self.buffer);
        self.buffer.clear();
        hex(&self.hasher.finalize_reset())
    }

    /// Drops what was put.
    fn reset(&mut self) {
        self.buffer.clear();
        self.hasher.reset();
    }
}

impl Default for HashSink {
    fn default() -> Self {
        HashSink {
            hasher: Sha256::new(),
            buffer: Vec::with_capacity(HashSink::BUFFER),
        }
    }
}

impl Sink for HashSink {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        if self.buffer.len() + bytes.len() > Self::BUFFER {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
            if bytes.len() > Self::BUFFER / 2 {
                self.hasher.update(bytes);
                return;
            }
        }
        self.buffer.extend_from_slice(bytes);
    }
}

/// SHA-256 of the `instructions` string as received.
pub fn instructions_hash(instructions: &str) -> String {
    sha256_hex(instructions.as_bytes())
}

/// The set hash over `name:hash` lines, sorted by name (UTF-16 order) then hash,
/// joined by "\n" with no trailing newline.
pub fn set_hash<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut lines: Vec<(&str, &str)> = entries.into_iter().collect();
    lines.sort_unstable_by(|a, b| cmp_utf16(a.0, b.0).then_with(|| a.1.cmp(b.1)));
    let mut out = HashSink::default();
    for (i, (name, hash)) in lines.into_iter().enumerate() {
        if i > 0 {
            out.put(b"\n");
        }
        out.put(name.as_bytes());
        out.put(b":");
        out.put(hash.as_bytes());
    }
    out.finish()
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

/// A definition's key and hash without the definition: what `mcp-lock hash` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolHash {
    /// As [`HashedTool::name`].
    pub name: Option<String>,
    /// As [`HashedTool::hash`].
    pub hash: Result<String, CanonError>,
}

impl From<&HashedTool> for ToolHash {
    fn from(tool: &HashedTool) -> Self {
        ToolHash {
            name: tool.name.clone(),
            hash: tool.hash.clone(),
        }
    }
}

/// The [`ToolHash`] of each definition of a listing's text (a bare array, a
/// tools/list result, or a JSON-RPC answer holding one), the same as
/// [`HashedTool::new`] gives for each definition [`Json::parse`] reads, but read and
/// hashed one definition at a time without building any. `None` when the text is not
/// plainly such a listing (see [`stream_listing`]): read it with [`Json::parse`].
pub fn hash_listing_text(text: &[u8]) -> Option<(Listed, Vec<ToolHash>)> {
    let mut found: [(Listed, Vec<ToolHash>); 3] = [
        (Listed::Array, Vec::new()),
        (Listed::Tools, Vec::new()),
        (Listed::ResultTools, Vec::new()),
    ];
    let mut sink = HashSink::default();
    let listed = stream_listing(text, |listed, definition| {
        let hash = match definition.canonical_into(&mut sink) {
            Ok(()) => Ok(sink.finish_reset()),
            Err(e) => {
                sink.reset();
                Err(e)
            }
        };
        let name = definition.name();
        if let Some((_, hashes)) = found.iter_mut().find(|(l, _)| *l == listed) {
            hashes.push(ToolHash { name, hash });
        }
    })?;
    let (_, hashes) = found.into_iter().find(|(l, _)| *l == listed)?;
    Some((listed, hashes))
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
    set_hash_of(tools.iter().map(|tool| (&tool.name, &tool.hash)))
}

/// [`listing_set_hash`] of the names and hashes alone.
pub fn tool_hashes_set_hash<'a>(
    tools: impl IntoIterator<Item = &'a ToolHash>,
) -> Result<String, SetHashError> {
    set_hash_of(tools.into_iter().map(|tool| (&tool.name, &tool.hash)))
}

fn set_hash_of<'a>(
    tools: impl Iterator<Item = (&'a Option<String>, &'a Result<String, CanonError>)>,
) -> Result<String, SetHashError> {
    let mut entries = Vec::with_capacity(tools.size_hint().0);
    for (index, (name, hash)) in tools.enumerate() {
        let name = name.as_deref().ok_or(SetHashError::NoName { index })?;
        let hash = hash.as_deref().map_err(|reason| SetHashError::Unhashable {
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
    fn set_hash_sorts_names_by_utf16_units() {
        // U+1F600 is 0xD83D 0xDE00 in UTF-16, before U+FF61; in UTF-8 it is after.
        assert_eq!(
            set_hash([("\u{FF61}", "1"), ("\u{1F600}", "2")]),
            sha256_hex("\u{1F600}:2\n\u{FF61}:1".as_bytes())
        );
    }

    #[test]
    fn streamed_hash_of_a_large_definition_equals_the_hash_of_its_text() {
        let big = "x".repeat(4 * HashSink::BUFFER);
        let mut text = String::from("{");
        for i in 0..50 {
            text.push_str(&format!("\"k{i:02}\":\"{}\",", &big[..i * 330]));
        }
        text.push_str("\"z\":1}");
        let value = Json::parse(&text).unwrap();
        assert_eq!(
            definition_hash(&value).unwrap(),
            sha256_hex(value.canonical().unwrap().as_bytes())
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

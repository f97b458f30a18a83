//! Registry documents (npm packuments, PyPI simple pages) kept in the user's cache
//! and asked for again with conditional requests: a document the registry says is
//! unchanged (304) is read from the cache, not downloaded again.
//!
//! One file per URL and `Accept`, under `$XDG_CACHE_HOME/mcp-lock/registry` (else
//! `~/.cache/mcp-lock/registry`), never in a project; written whole or not at all;
//! the folder is kept under [`MAX_TOTAL`]. A file that does not read as an entry for
//! its URL is ignored (and the document fetched whole). A validator is kept only
//! when it is safe to revalidate with: an `ETag`, or a `Last-Modified` strictly older
//! than the answer's `Date` (a document changed again within the same second would
//! otherwise look unchanged).

use std::path::{Path, PathBuf};

/// The first line of an entry.
const HEADER: &str = "mcp-lock registry cache 1";

/// The most the cache folder holds; past it, the least recently written entries go.
pub const MAX_TOTAL: u64 = 256 * 1024 * 1024;

/// A cached document and what to revalidate it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub body: String,
}

/// The cache folder: `$XDG_CACHE_HOME/mcp-lock/registry`, else
/// `$HOME/.cache/mcp-lock/registry`; `None` with neither set (nothing is cached).
pub fn root() -> Option<PathBuf> {
    super::closure::cache::cache_root()
        .and_then(|closures| closures.parent().map(|p| p.join("registry")))
}

fn file_for(root: &Path, url: &str, accept: &str) -> PathBuf {
    let key = crate::contract::hash::sha256_hex(format!("{url}\n{accept}").as_bytes());
    root.join(&key[..40])
}

/// The cached entry for `url` asked with `accept`, if one reads whole.
pub fn read(url: &str, accept: &str, limit: usize) -> Option<Entry> {
    let path = file_for(&root()?, url, accept);
    let bytes = crate::base::files::read_regular(&path, (limit + 64 * 1024) as u64).ok()?;
    parse(&String::from_utf8(bytes).ok()?, url, accept)
}

fn parse(text: &str, url: &str, accept: &str) -> Option<Entry> {
    let (head, body) = text.split_once("\n\n")?;
    let mut lines = head.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let mut entry = Entry {
        etag: None,
        last_modified: None,
        body: body.to_string(),
    };
    let (mut seen_url, mut seen_accept) = (false, false);
    for line in lines {
        let (key, value) = line.split_once(": ")?;
        match key {
            "url" => seen_url = value == url,
            "accept" => seen_accept = value == accept,
            "etag" => entry.etag = Some(value.to_string()),
            "last-modified" => entry.last_modified = Some(value.to_string()),
            _ => return None,
        }
    }
    (seen_url && seen_accept && (entry.etag.is_some() || entry.last_modified.is_some()))
        .then_some(entry)
}

/// The validators worth keeping from an answer's headers (see the module's note).
pub fn validators(headers: &reqwest::header::HeaderMap) -> (Option<String>, Option<String>) {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty() && !v.contains('\n'))
            .map(str::to_string)
    };
    let etag = text(reqwest::header::ETAG);
    let date = text(reqwest::header::DATE);
    let last_modified = text(reqwest::header::LAST_MODIFIED).filter(|lm| {
        // Dates in one format compare by the moment they name only through parsing;
        // unequal is enough here: a server never dates a document after its answer.
        date.as_ref().is_some_and(|date| date != lm)
    });
    (etag, last_modified)
}

/// Keeps `body` for `url` asked with `accept`, with its validators. Best effort: a
/// cache that cannot be written costs only a download next time.
pub fn write(url: &str, accept: &str, etag: Option<&str>, last_modified: Option<&str>, body: &str) {
    if etag.is_none() && last_modified.is_none() {
        return;
    }
    let Some(root) = root() else { return };
    if crate::base::files::create_dir_within(&root, &root, 0o700).is_err() {
        return;
    }
    let mut text = format!("{HEADER}\nurl: {url}\naccept: {accept}\n");
    if let Some(etag) = etag {
        text.push_str(&format!("etag: {etag}\n"));
    }
    if let Some(lm) = last_modified {
        text.push_str(&format!("last-modified: {lm}\n"));
    }
    text.push('\n');
    text.push_str(body);
    if url.contains('\n') || accept.contains('\n') {
        return;
    }
    let path = file_for(&root, url, accept);
    if crate::base::files::replace(&path, &root, text.as_bytes(), 0o600).is_ok() {
        trim_once(&root);
    }
}

/// Removes the least recently written entries while the folder holds more than
/// [`MAX_TOTAL`], once per process (a verify writes many entries; one look is enough).
fn trim_once(root: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| trim(root, MAX_TOTAL));
}

fn trim(root: &Path, max: u64) {
    let Ok(dir) = std::fs::read_dir(root) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| {
                (
                    meta.modified().unwrap_or(std::time::UNIX_EPOCH),
                    meta.len(),
                    e.path(),
                )
            })
        })
        .collect();
    let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
    if total <= max {
        return;
    }
    files.sort();
    for (_, len, path) in files {
        if total <= max / 4 * 3 {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_only_for_its_own_url_and_accept() {
        let text = format!(
            "{HEADER}\nurl: http://r/a\naccept: application/json\netag: \"x\"\n\n{{\"a\":1}}\n\nmore"
        );
        let entry = parse(&text, "http://r/a", "application/json").unwrap();
        assert_eq!(entry.etag.as_deref(), Some("\"x\""));
        assert_eq!(entry.body, "{\"a\":1}\n\nmore");
        assert!(parse(&text, "http://r/b", "application/json").is_none());
        assert!(parse(&text, "http://r/a", "text/html").is_none());
        let no_validator = format!("{HEADER}\nurl: http://r/a\naccept: a\n\nbody");
        assert!(parse(&no_validator, "http://r/a", "a").is_none());
    }

    #[test]
    fn a_last_modified_in_the_second_of_the_answer_is_not_kept() {
        use reqwest::header::{DATE, HeaderMap, HeaderValue, LAST_MODIFIED};
        let mut headers = HeaderMap::new();
        let now = "Sat, 05 Dec 2026 03:00:00 GMT";
        headers.insert(DATE, HeaderValue::from_static(now));
        headers.insert(LAST_MODIFIED, HeaderValue::from_static(now));
        assert_eq!(validators(&headers), (None, None));
        headers.insert(
            LAST_MODIFIED,
            HeaderValue::from_static("Sat, 05 Dec 2026 02:59:58 GMT"),
        );
        assert_eq!(
            validators(&headers).1.as_deref(),
            Some("Sat, 05 Dec 2026 02:59:58 GMT")
        );
    }

    #[test]
    fn trimming_removes_the_oldest_entries_first() {
        let dir = tempfile::tempdir().unwrap();
        for (i, name) in ["old", "mid", "new"].iter().enumerate() {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![b'x'; 100]).unwrap();
            let when =
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(1000 * (i as u64 + 1));
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        trim(dir.path(), 250);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["new"]);
    }
}

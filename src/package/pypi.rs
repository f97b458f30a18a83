//! PyPI: which index the user's uv or pip would ask, and the files it lists for a
//! project (the simple repository API: PEP 691 JSON or PEP 503 HTML).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::http_get;

/// The documented default index of pip and uv, used only when no configuration names
/// one.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple/";

/// The index a launcher installs from: uv reads `UV_DEFAULT_INDEX`, then
/// `UV_INDEX_URL`; pipx (pip) reads `PIP_INDEX_URL`. Then the default.
pub fn index_for(launcher: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let keys: &[&str] = if launcher.starts_with("pipx") {
        &["PIP_INDEX_URL"]
    } else {
        &["UV_DEFAULT_INDEX", "UV_INDEX_URL"]
    };
    keys.iter()
        .find_map(|k| env(k).filter(|v| !v.is_empty()))
        .map(|mut url| {
            if !url.ends_with('/') {
                url.push('/');
            }
            url
        })
        .unwrap_or_else(|| DEFAULT_INDEX.to_string())
}

/// PEP 503 normalized name: lowercase, runs of `-`, `_`, `.` as one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
            continue;
        }
        if dash && !out.is_empty() {
            out.push('-');
        }
        dash = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// One distribution file the index lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    pub filename: String,
    pub version: String,
    /// `None`: the index gave no sha256 for it.
    pub sha256: Option<String>,
}

/// Every file the index lists for a project, with the version its name carries.
pub async fn fetch(index: &str, name: &str) -> Result<Vec<IndexFile>, String> {
    let url = format!("{index}{}/", normalize(name));
    let body = http_get(&url, "application/vnd.pypi.simple.v1+json, text/html;q=0.2").await?;
    parse_project_page(&body, name)
        .map_err(|e| format!("the index at {index} answered for {name} with {e}"))
}

/// Reads a simple-API project page: JSON (PEP 691) when it parses as such, else the
/// HTML anchors of PEP 503 with their `#sha256=` fragments.
pub fn parse_project_page(body: &str, name: &str) -> Result<Vec<IndexFile>, String> {
    let trimmed = body.trim_start();
    let listed: Vec<(String, Option<String>)> = if trimmed.starts_with('{') {
        let value: serde_json::Value =
            serde_json::from_str(body).map_err(|e| format!("JSON that does not parse ({e})"))?;
        let files = value
            .get("files")
            .and_then(|f| f.as_array())
            .ok_or("a JSON document without `files` (not a simple API page)")?;
        files
            .iter()
            .filter_map(|f| {
                let filename = f.get("filename")?.as_str()?.to_string();
                let sha = f
                    .pointer("/hashes/sha256")
                    .and_then(|h| h.as_str())
                    .map(String::from);
                Some((filename, sha))
            })
            .collect()
    } else if trimmed.to_ascii_lowercase().starts_with("<!doctype html") || trimmed.starts_with('<')
    {
        html_anchors(body)
    } else {
        return Err("something that is neither JSON nor HTML".into());
    };
    let mut out = Vec::new();
    for (filename, sha256) in listed {
        if let Some(version) = version_of(&filename, name) {
            if let Some(sha) = &sha256
                && !super::is_sha256_hex(sha)
            {
                return Err(format!("a sha256 for {filename} that is not 64 hex digits"));
            }
            out.push(IndexFile {
                filename,
                version,
                sha256,
            });
        }
    }
    Ok(out)
}

/// `(filename, sha256)` of each `<a href="…#sha256=…">filename</a>`.
fn html_anchors(body: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<a ") {
        rest = &rest[start..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        let Some(end) = rest.find("</a>") else { break };
        let text = rest[close + 1..end].trim().to_string();
        let sha = tag
            .find("#sha256=")
            .map(|i| {
                tag[i + 8..]
                    .chars()
                    .take_while(|c| c.is_ascii_hexdigit())
                    .collect::<String>()
            })
            .filter(|s| !s.is_empty());
        out.push((text, sha));
        rest = &rest[end + 4..];
    }
    out
}

/// The version in a wheel's or sdist's file name, when the file is of project `name`.
pub fn version_of(filename: &str, name: &str) -> Option<String> {
    let want = normalize(name);
    if let Some(stem) = filename.strip_suffix(".whl") {
        let mut parts = stem.split('-');
        let (n, v) = (parts.next()?, parts.next()?);
        return (normalize(n) == want).then(|| v.to_string());
    }
    let stem = [".tar.gz", ".zip", ".tar.bz2", ".tgz"]
        .iter()
        .find_map(|ext| filename.strip_suffix(ext))?;
    let (n, v) = stem.rsplit_once('-')?;
    (normalize(n) == want).then(|| v.to_string())
}

/// The files of one version, by file name.
pub fn files_of(files: &[IndexFile], version: &str) -> BTreeMap<String, Option<String>> {
    files
        .iter()
        .filter(|f| same_version(&f.version, version))
        .map(|f| (f.filename.clone(), f.sha256.clone()))
        .collect()
}

/// The newest final release (pre-releases only when there is nothing else), as uv and
/// pip pick with no specifier.
pub fn newest(files: &[IndexFile]) -> Option<String> {
    let versions: Vec<&str> = files.iter().map(|f| f.version.as_str()).collect();
    let finals: Vec<&str> = versions.iter().copied().filter(|v| !is_pre(v)).collect();
    let pool = if finals.is_empty() { versions } else { finals };
    pool.into_iter()
        .max_by(|a, b| compare(a, b))
        .map(String::from)
}

fn is_pre(v: &str) -> bool {
    let v = v.to_ascii_lowercase();
    ["a", "b", "rc", "dev", "alpha", "beta", "pre", "c"]
        .iter()
        .any(|m| {
            v.split(|c: char| c.is_ascii_digit() || c == '.')
                .any(|p| p == *m)
        })
}

/// Whether two version strings name one release (`1.0` and `1.0.0` do).
pub fn same_version(a: &str, b: &str) -> bool {
    compare(a, b) == Ordering::Equal
}

/// A PEP 440 ordering good enough for final releases: numeric release segments
/// compared as numbers, trailing zeros ignored; anything after them compared as text,
/// a bare release ranking above its pre-releases.
pub fn compare(a: &str, b: &str) -> Ordering {
    fn split(v: &str) -> (Vec<u64>, String) {
        let v = v.trim_start_matches(['v', 'V']);
        let end = v
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(v.len());
        let mut nums: Vec<u64> = v[..end]
            .split('.')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(u64::MAX))
            .collect();
        while nums.last() == Some(&0) {
            nums.pop();
        }
        (nums, v[end..].to_ascii_lowercase())
    }
    let (na, ra) = split(a);
    let (nb, rb) = split(b);
    na.cmp(&nb)
        .then_with(|| match (ra.is_empty(), rb.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => ra.cmp(&rb),
        })
}

/// Whether a spec is one exact version (`1.2`, `2026.10.19`).
pub fn exact_version(spec: &str) -> Option<&str> {
    let spec = spec.strip_prefix("==").unwrap_or(spec).trim();
    (spec.chars().next().is_some_and(|c| c.is_ascii_digit()) && !spec.contains(['*', ',', ' ']))
        .then_some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn index_follows_the_launchers_own_settings() {
        let env = |k: &str| match k {
            "UV_INDEX_URL" => Some("http://127.0.0.1:1/simple".to_string()),
            "PIP_INDEX_URL" => Some("http://127.0.0.1:2/simple/".to_string()),
            _ => None,
        };
        assert_eq!(index_for("uvx", &env), "http://127.0.0.1:1/simple/");
        assert_eq!(index_for("pipx run", &env), "http://127.0.0.1:2/simple/");
        assert_eq!(index_for("uvx", &|_| None), DEFAULT_INDEX);
    }

    #[test]
    fn pep503_html_with_sha256_fragments() {
        let html = format!(
            r#"<!DOCTYPE html><html><body><h1>Links for tiny-py</h1>
            <a href="/packages/tiny_py-1.0.0-py3-none-any.whl#sha256={SHA_A}">tiny_py-1.0.0-py3-none-any.whl</a><br>
            <a href="/packages/tiny_py-1.0.1.tar.gz">tiny_py-1.0.1.tar.gz</a>
            <a href="/packages/other-9.tar.gz">other-9.tar.gz</a></body></html>"#
        );
        let files = parse_project_page(&html, "Tiny.Py").unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].version, "1.0.0");
        assert_eq!(files[0].sha256.as_deref(), Some(SHA_A));
        assert_eq!(files[1].sha256, None);
        assert_eq!(newest(&files).as_deref(), Some("1.0.1"));
    }

    #[test]
    fn pep691_json() {
        let json = format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"tiny-py","files":[
              {{"filename":"tiny_py-1.0.0-py3-none-any.whl","url":"x","hashes":{{"sha256":"{SHA_A}"}}}},
              {{"filename":"tiny_py-1.1rc1-py3-none-any.whl","url":"y","hashes":{{}}}}]}}"#
        );
        let files = parse_project_page(&json, "tiny-py").unwrap();
        assert_eq!(files_of(&files, "1.0").len(), 1);
        assert_eq!(newest(&files).as_deref(), Some("1.0.0"));
    }

    #[test]
    fn garbage_answers_are_errors() {
        assert!(parse_project_page("not an index", "x").is_err());
        assert!(parse_project_page("{\"files\": 3}", "x").is_err());
        assert!(parse_project_page("{broken", "x").is_err());
        let bad = r#"<a href="/x-1.tar.gz#sha256=abc">x-1.tar.gz</a>"#;
        assert!(parse_project_page(bad, "x").unwrap_err().contains("64 hex"));
    }

    #[test]
    fn versions_order_numerically() {
        assert_eq!(compare("1.10", "1.9"), Ordering::Greater);
        assert_eq!(compare("1.0", "1.0.0"), Ordering::Equal);
        assert_eq!(compare("2.0rc1", "2.0"), Ordering::Less);
        assert_eq!(normalize("Mcp__Server.Git"), "mcp-server-git");
        assert_eq!(
            version_of("mcp_server_git-2026.10.19.tar.gz", "mcp-server-git").as_deref(),
            Some("2026.10.19")
        );
        assert_eq!(exact_version("==1.2"), Some("1.2"));
        assert_eq!(exact_version(">=1.2"), None);
    }
}

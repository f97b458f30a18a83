//! PyPI: which index the user's uv or pip would ask, and the files it lists for a
//! project (the simple repository API: PEP 691 JSON or PEP 503 HTML).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::Fetcher;

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
    /// When it was uploaded, as the index wrote it (PEP 700 `upload-time`, JSON only).
    pub upload_time: Option<String>,
    /// Yanked (PEP 592): the reason given, `Some("")` when none was.
    pub yanked: Option<String>,
    /// Where the file is, absolute (resolved against the project page), without its
    /// `#sha256=` fragment; `None` when the page gave no usable link.
    pub url: Option<String>,
}

/// Every file the index lists for a project, with the version its name carries.
pub async fn fetch(index: &str, name: &str, get: &Fetcher) -> Result<Vec<IndexFile>, String> {
    let url = format!("{index}{}/", normalize(name));
    let body = get
        .get(&url, "application/vnd.pypi.simple.v1+json, text/html;q=0.2")
        .await?;
    let mut files = parse_project_page(&body, name)
        .map_err(|e| format!("the index at {index} answered for {name} with {e}"))?;
    let page = url::Url::parse(&url).ok();
    for f in &mut files {
        f.url = match (&page, f.url.take()) {
            (Some(page), Some(href)) => page.join(&href).ok().map(|mut u| {
                u.set_fragment(None);
                u.to_string()
            }),
            _ => None,
        };
    }
    Ok(files)
}

/// Reads a simple-API project page: JSON (PEP 691) when it parses as such, else the
/// HTML anchors of PEP 503 with their `#sha256=` fragments.
pub fn parse_project_page(body: &str, name: &str) -> Result<Vec<IndexFile>, String> {
    let trimmed = body.trim_start();
    let listed: Vec<Listed> = if trimmed.starts_with('{') {
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
                let sha256 = f
                    .pointer("/hashes/sha256")
                    .and_then(|h| h.as_str())
                    .map(String::from);
                let url = f.get("url").and_then(|u| u.as_str()).map(String::from);
                let upload_time = f
                    .get("upload-time")
                    .and_then(|t| t.as_str())
                    .map(String::from);
                // PEP 691: `yanked` is false, true, or the reason (which yanks too).
                let yanked = match f.get("yanked") {
                    Some(serde_json::Value::Bool(true)) => Some(String::new()),
                    Some(serde_json::Value::String(reason)) => Some(reason.clone()),
                    _ => None,
                };
                Some(Listed {
                    filename,
                    sha256,
                    upload_time,
                    yanked,
                    url,
                })
            })
            .collect()
    } else if trimmed.to_ascii_lowercase().starts_with("<!doctype html") || trimmed.starts_with('<')
    {
        html_anchors(body)
    } else {
        return Err("something that is neither JSON nor HTML".into());
    };
    let mut out = Vec::new();
    for Listed {
        filename,
        sha256,
        upload_time,
        yanked,
        url,
    } in listed
    {
        if let Some(written) = version_of(&filename, name) {
            // What is pinned here is what the guard puts after `==`: only a version.
            let Some(version) = Version::parse(&written) else {
                return Err(format!(
                    "a file {filename:?} whose version {written:?} is not a PEP 440 version; refusing to pin or launch it"
                ));
            };
            let version = version.to_string();
            if let Some(sha) = &sha256
                && !super::is_sha256_hex(sha)
            {
                return Err(format!("a sha256 for {filename} that is not 64 hex digits"));
            }
            out.push(IndexFile {
                filename,
                version,
                sha256,
                upload_time,
                yanked,
                url,
            });
        }
    }
    Ok(out)
}

/// A file as a project page lists it, before its version is read.
struct Listed {
    filename: String,
    sha256: Option<String>,
    upload_time: Option<String>,
    yanked: Option<String>,
    url: Option<String>,
}

/// Each `<a href="…#sha256=…" data-yanked="…">filename</a>`: its file name, sha256
/// and whether it is yanked (PEP 592; an HTML page gives no upload time).
fn html_anchors(body: &str) -> Vec<Listed> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<a ") {
        rest = &rest[start..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        let Some(end) = rest.find("</a>") else { break };
        let text = rest[close + 1..end].trim().to_string();
        let sha256 = tag
            .find("#sha256=")
            .map(|i| {
                tag[i + 8..]
                    .chars()
                    .take_while(|c| c.is_ascii_hexdigit())
                    .collect::<String>()
            })
            .filter(|s| !s.is_empty());
        out.push(Listed {
            filename: text,
            sha256,
            upload_time: None,
            yanked: attribute(tag, "data-yanked").map(|v| unescape_html(&v)),
            url: attribute(tag, "href").map(|v| unescape_html(&v)),
        });
        rest = &rest[end + 4..];
    }
    out
}

/// The value of an attribute of a start tag: `Some("")` when it is given without
/// one (`<a data-yanked href=…>`), `None` when absent.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let before = lower[..at].chars().next_back();
        if !before.is_some_and(char::is_whitespace) {
            continue;
        }
        let rest = &tag[from..];
        let after = rest.trim_start();
        if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            return Some(match value.chars().next() {
                Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or("").to_string(),
                _ => value
                    .split(|c: char| c.is_whitespace() || c == '>')
                    .next()
                    .unwrap_or("")
                    .to_string(),
            });
        }
        // No `=`: given without a value, if the name ends here.
        if after.len() < rest.len() || after.is_empty() || after.starts_with('/') {
            return Some(String::new());
        }
    }
    None
}

/// The character references an index writes in an attribute value.
fn unescape_html(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
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
    let versions: Vec<Version> = files
        .iter()
        .filter_map(|f| Version::parse(&f.version))
        .collect();
    let finals: Vec<&Version> = versions.iter().filter(|v| !v.is_pre()).collect();
    let pool = if finals.is_empty() {
        versions.iter().collect()
    } else {
        finals
    };
    pool.into_iter().max().map(Version::to_string)
}

/// Whether two version strings name one release (`1.0` and `1.0.0` do).
pub fn same_version(a: &str, b: &str) -> bool {
    compare(a, b) == Ordering::Equal
}

/// PEP 440 order; a string that is no version sorts below every version.
pub fn compare(a: &str, b: &str) -> Ordering {
    Version::parse(a).cmp(&Version::parse(b))
}

/// A PEP 440 version: `[N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]`, read as the PEP's
/// regular expression reads it (any case, the alternative spellings `alpha`, `c`,
/// `pre`, `rev`, `-1`, separators `.`, `-`, `_`, a leading `v`), shown normalised.
#[derive(Debug, Clone)]
pub struct Version {
    epoch: u64,
    release: Vec<u64>,
    /// 0 = a, 1 = b, 2 = rc.
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    /// Lowercase, `.`-separated.
    local: Option<String>,
}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let lower = text.trim().to_ascii_lowercase();
        let mut p = Cursor {
            s: lower.strip_prefix('v').unwrap_or(&lower).as_bytes(),
            at: 0,
        };
        let mut epoch = 0;
        let first = p.number()?;
        let mut release = vec![first];
        if p.eat("!") {
            epoch = first;
            release = vec![p.number()?];
        }
        while p.peek() == Some(b'.') && p.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            p.at += 1;
            release.push(p.number()?);
        }
        let pre = p.attempt(|p| {
            p.separator();
            let kind = p.word(&[
                ("alpha", 0),
                ("a", 0),
                ("beta", 1),
                ("b", 1),
                ("preview", 2),
                ("pre", 2),
                ("c", 2),
                ("rc", 2),
            ])?;
            Some((kind, p.implicit_number()))
        });
        let post = p
            .attempt(|p| {
                p.eat("-").then_some(())?;
                p.number()
            })
            .or_else(|| {
                p.attempt(|p| {
                    p.separator();
                    p.word(&[("post", ()), ("rev", ()), ("r", ())])?;
                    Some(p.implicit_number())
                })
            });
        let dev = p.attempt(|p| {
            p.separator();
            p.word(&[("dev", ())])?;
            Some(p.implicit_number())
        });
        let local = if p.eat("+") {
            let rest = std::str::from_utf8(&p.s[p.at..]).ok()?;
            let parts: Vec<&str> = rest.split(['.', '-', '_']).collect();
            if parts
                .iter()
                .any(|s| s.is_empty() || !s.bytes().all(|b| b.is_ascii_alphanumeric()))
            {
                return None;
            }
            p.at = p.s.len();
            Some(parts.join("."))
        } else {
            None
        };
        (p.at == p.s.len()).then_some(Version {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }

    /// A pre-release or development release, which no specifier picks by itself.
    pub fn is_pre(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    /// packaging's comparison key: trailing zeros of the release ignored; a dev release
    /// of a release before its pre-releases, pre-releases before the release, the
    /// release before its post-releases.
    fn key(&self) -> impl Ord + '_ {
        let mut release = self.release.as_slice();
        while let [rest @ .., 0] = release {
            release = rest;
        }
        // (0, _) sorts below every pre-release (1, kind, n), (2, 0, 0) above them.
        let pre = match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (0, 0, 0),
            (None, _, _) => (2, 0, 0),
            (Some((kind, n)), _, _) => (1, kind, n),
        };
        let post = self.post.map_or((0, 0), |n| (1, n));
        let dev = self.dev.map_or((1, 0), |n| (0, n));
        let local: Vec<(u8, u64, &str)> = self
            .local
            .iter()
            .flat_map(|l| l.split('.'))
            .map(|part| match part.parse::<u64>() {
                Ok(n) => (1, n, ""),
                Err(_) => (0, 0, part),
            })
            .collect();
        (
            self.epoch,
            release,
            pre,
            post,
            dev,
            self.local.is_some(),
            local,
        )
    }
}

/// Equal as PEP 440 compares them (`1.0 == 1.0.0`), so equality and order agree.
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Version {}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Version {
    /// The normalised form: `1!2.0rc1.post3.dev4+ubuntu.1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}!", self.epoch)?;
        }
        let release: Vec<String> = self.release.iter().map(u64::to_string).collect();
        f.write_str(&release.join("."))?;
        if let Some((kind, n)) = self.pre {
            write!(f, "{}{n}", ["a", "b", "rc"][usize::from(kind)])?;
        }
        if let Some(n) = self.post {
            write!(f, ".post{n}")?;
        }
        if let Some(n) = self.dev {
            write!(f, ".dev{n}")?;
        }
        if let Some(local) = &self.local {
            write!(f, "+{local}")?;
        }
        Ok(())
    }
}

/// A position in a lowercase version string.
struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.s.get(self.at + n).copied()
    }

    fn eat(&mut self, text: &str) -> bool {
        let found = self.s[self.at..].starts_with(text.as_bytes());
        if found {
            self.at += text.len();
        }
        found
    }

    /// Digits, as a number (at most 18 of them: no real version has more).
    fn number(&mut self) -> Option<u64> {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        let digits = &self.s[start..self.at];
        if digits.is_empty() || digits.len() > 18 {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    }

    /// An optional separator, then an optional number (0 when absent).
    fn implicit_number(&mut self) -> u64 {
        self.attempt(|p| {
            p.separator();
            p.number()
        })
        .unwrap_or(0)
    }

    fn separator(&mut self) {
        if matches!(self.peek(), Some(b'.' | b'-' | b'_')) {
            self.at += 1;
        }
    }

    /// The first of `words` (longest first where one begins another) found here.
    fn word<T: Copy>(&mut self, words: &[(&str, T)]) -> Option<T> {
        words.iter().find(|(w, _)| self.eat(w)).map(|(_, v)| *v)
    }

    /// `f`, or nothing consumed when it finds nothing.
    fn attempt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let start = self.at;
        let found = f(self);
        if found.is_none() {
            self.at = start;
        }
        found
    }
}

/// Whether a spec is one exact version (`1.2`, `==2026.10.19`, uv's `@1.2`): the
/// version.
pub fn exact_version(spec: &str) -> Option<&str> {
    let spec = spec
        .strip_prefix("==")
        .or_else(|| spec.strip_prefix('@'))
        .unwrap_or(spec)
        .trim();
    (spec.chars().next().is_some_and(|c| c.is_ascii_digit()) && Version::parse(spec).is_some())
        .then_some(spec)
}

/// Whether a spec is uv's `@latest`: the newest release, as with no spec at all.
pub fn is_latest(spec: &str) -> bool {
    spec == "@latest"
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
    fn yanked_files_and_upload_times_are_read_from_json_and_html() {
        let json = format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"tiny-py","files":[
              {{"filename":"tiny_py-1.0.0.tar.gz","url":"x","hashes":{{"sha256":"{SHA_A}"}},"upload-time":"2026-01-02T03:04:05.123456Z","yanked":false}},
              {{"filename":"tiny_py-1.0.1.tar.gz","url":"y","hashes":{{}},"yanked":true}},
              {{"filename":"tiny_py-1.0.2.tar.gz","url":"z","hashes":{{}},"yanked":"broken build"}}]}}"#
        );
        let files = parse_project_page(&json, "tiny-py").unwrap();
        assert_eq!(
            files[0].upload_time.as_deref(),
            Some("2026-01-02T03:04:05.123456Z")
        );
        let yanked: Vec<Option<&str>> = files.iter().map(|f| f.yanked.as_deref()).collect();
        assert_eq!(yanked, [None, Some(""), Some("broken build")]);
        let html = r#"<!DOCTYPE html><html><body>
            <a href="/p/tiny_py-1.0.0.tar.gz">tiny_py-1.0.0.tar.gz</a>
            <a href="/p/tiny_py-1.0.1.tar.gz" data-yanked>tiny_py-1.0.1.tar.gz</a>
            <a data-yanked="bad &quot;build&quot; &amp; more" href="/p/tiny_py-1.0.2.tar.gz">tiny_py-1.0.2.tar.gz</a>
            <a href="/p/tiny_py-1.0.3.tar.gz" data-yanked="">tiny_py-1.0.3.tar.gz</a>
            <a href="/p/tiny_py-1.0.4.tar.gz" data-yanked-not="x">tiny_py-1.0.4.tar.gz</a></body></html>"#;
        let files = parse_project_page(html, "tiny-py").unwrap();
        let yanked: Vec<Option<&str>> = files.iter().map(|f| f.yanked.as_deref()).collect();
        assert_eq!(
            yanked,
            [None, Some(""), Some("bad \"build\" & more"), Some(""), None]
        );
        assert!(files.iter().all(|f| f.upload_time.is_none()));
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
        assert_eq!(
            Version::parse("1.0"),
            Version::parse("1.0.0"),
            "equal as ordered"
        );
        assert_eq!(compare("2.0rc1", "2.0"), Ordering::Less);
        assert_eq!(normalize("Mcp__Server.Git"), "mcp-server-git");
        assert_eq!(
            version_of("mcp_server_git-2026.10.19.tar.gz", "mcp-server-git").as_deref(),
            Some("2026.10.19")
        );
        assert_eq!(exact_version("==1.2"), Some("1.2"));
        assert_eq!(exact_version("@1.2"), Some("1.2"));
        assert_eq!(exact_version("@latest"), None);
        assert_eq!(exact_version(">=1.2"), None);
    }

    #[test]
    fn pep440_versions_are_read_normalised_and_ordered() {
        for (written, normal) in [
            ("1.0", "1.0"),
            ("v1.0.0", "1.0.0"),
            ("1.0RC1", "1.0rc1"),
            ("1.0-alpha.2", "1.0a2"),
            ("1.0c1", "1.0rc1"),
            ("1.0.post", "1.0.post0"),
            ("1.0-1", "1.0.post1"),
            ("1.0_rev3", "1.0.post3"),
            ("2!1.0.dev4", "2!1.0.dev4"),
            ("0!1.0+Ubuntu-1_2", "1.0+ubuntu.1.2"),
            ("2026.10.19", "2026.10.19"),
        ] {
            assert_eq!(
                Version::parse(written).map(|v| v.to_string()).as_deref(),
                Some(normal),
                "{written}"
            );
        }
        for bad in [
            "99.0 @ file:/srv/evil.whl",
            "1.0@x",
            "",
            "a1",
            "1.0+",
            "1.0+a..b",
            "1.0/../x",
            "1.0;x",
        ] {
            assert!(Version::parse(bad).is_none(), "{bad}");
        }
        let order = [
            "1.0.dev1",
            "1.0a1",
            "1.0b2",
            "1.0rc1",
            "1.0",
            "1.0.post1",
            "1.1",
        ];
        for pair in order.windows(2) {
            assert_eq!(compare(pair[0], pair[1]), Ordering::Less, "{pair:?}");
        }
        assert!(Version::parse("1.0.dev0").unwrap().is_pre());
        assert!(!Version::parse("1.0.post1").unwrap().is_pre());
    }

    #[test]
    fn a_file_whose_version_is_not_pep440_refuses_the_page_naming_the_value() {
        let json = format!(
            r#"{{"files":[{{"filename":"tiny_py-99.0 @ file:/srv/evil-py3-none-any.whl","hashes":{{"sha256":"{SHA_A}"}}}}]}}"#
        );
        let err = parse_project_page(&json, "tiny-py").unwrap_err();
        assert!(
            err.contains("\"99.0 @ file:/srv/evil\" is not a PEP 440 version"),
            "{err}"
        );
    }
}

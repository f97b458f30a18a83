//! Reading `mcp.lock`: every problem is an error naming the file and line, and every
//! pinned definition must still hash to its pin.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

mod check;
mod layout;
mod lines;
mod raw;

pub(crate) use check::PROJECT_ROOT;
pub(crate) use lines::LineIndex;
pub use lines::LockLines;

use super::{FORMAT_VERSION, Lockfile, PinnedServer};
use check::{Definitions, check_server};
use lines::line_of;
use raw::{RawLock, RawServer, VersionOnly};

/// A lock that cannot be used, with where.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
}

/// Reads and checks a lock file. A missing file is `Ok(None)`.
pub fn read_lock(path: &Path) -> Result<Option<Lockfile>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    parse_lock(&text, &path.display().to_string()).map(Some)
}

/// [`read_lock`], also returning where each server and definition is in the file.
pub fn read_lock_with_lines(path: &Path) -> Result<Option<(Lockfile, LockLines)>, LockError> {
    read_unchecked(path)?.map(UncheckedLock::check).transpose()
}

/// A lock read as TOML and not yet checked: [`read_lock_with_lines`] between its two
/// steps. It no longer holds the file's text, so a caller that reads two locks (a
/// diff) holds neither text, nor either lock's parsed definitions, while it reads the
/// other.
pub struct UncheckedLock {
    version: i64,
    raw: RawLock,
    index: LineIndex,
    path: String,
}

/// The first step of [`read_lock_with_lines`]: the file read as TOML, its header
/// checked. `Ok(None)`: no file.
pub fn read_unchecked(path: &Path) -> Result<Option<UncheckedLock>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    parse_unchecked(&text, &path.display().to_string()).map(Some)
}

fn parse_unchecked(text: &str, path: &str) -> Result<UncheckedLock, LockError> {
    let version = check_header(text, path)?;
    let raw = read_raw(text, path)?;
    Ok(UncheckedLock {
        version,
        raw,
        index: LineIndex::new(text),
        path: path.to_string(),
    })
}

impl UncheckedLock {
    /// The second step: every server checked, every definition against its pin.
    pub fn check(self) -> Result<(Lockfile, LockLines), LockError> {
        let UncheckedLock {
            version,
            raw,
            index,
            path,
        } = self;
        let mut lock = Lockfile::default();
        let mut lines = LockLines::default();
        for server in raw.server {
            let name_at = server.name.span().start;
            let name = server.name.get_ref().clone();
            lines.add_server(&index, &server);
            let locked = check_server(server, version, &index, &path, Definitions::Read)?;
            if lock.servers.insert(name.clone(), locked).is_some() {
                return Err(invalid_at(
                    &index,
                    &path,
                    name_at,
                    format!("server {name:?} appears twice"),
                ));
            }
        }
        Ok((lock, lines))
    }
}

/// The lock's tables: by the reader of the writer's own layout when the text is in
/// it, by the TOML reader otherwise (and for every error).
fn read_raw(text: &str, path: &str) -> Result<RawLock, LockError> {
    match layout::read(text) {
        Some(raw) => Ok(raw),
        None => toml::from_str(text).map_err(|e| toml_error(text, path, e)),
    }
}

/// For the lock fuzz target: what the writer's-layout reader and the TOML reader
/// each make of `text` (as debug text, spans included), when the first reads it.
#[doc(hidden)]
pub fn layout_and_toml_readings(text: &str) -> Option<(String, Option<String>)> {
    let layout = layout::read(text)?;
    let toml = toml::from_str::<RawLock>(text).ok();
    Some((format!("{layout:?}"), toml.map(|t| format!("{t:?}"))))
}

impl UncheckedLock {
    /// The lock without its definitions (every server's profiles and package, the
    /// item maps empty): what planning and launching the servers need, read in a
    /// fraction of the time. The definitions are read by [`UncheckedLock::check`]
    /// of the lock returned beside it, which gives the whole lock; meanwhile the
    /// servers can be listed. A problem in the header is the problem the whole
    /// reading reports first, so the error is the same either way.
    pub fn header(self) -> Result<(Lockfile, UncheckedLock), LockError> {
        let mut header = Lockfile::default();
        for server in &self.raw.server {
            let name = server.name.get_ref().clone();
            let checked = check_server(
                server.header(),
                self.version,
                &self.index,
                &self.path,
                Definitions::Skip,
            );
            let problem = match checked {
                Ok(pinned) => match header.servers.insert(name.clone(), pinned) {
                    None => continue,
                    Some(_) => invalid_at(
                        &self.index,
                        &self.path,
                        server.name.span().start,
                        format!("server {name:?} appears twice"),
                    ),
                },
                Err(e) => e,
            };
            return Err(self.check().err().unwrap_or(problem));
        }
        Ok((header, self))
    }

    /// The lock's path, as its messages name it.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many definitions the lock pins, of every kind (counted in the text read,
    /// before any check).
    pub fn definitions(&self) -> usize {
        self.raw
            .server
            .iter()
            .map(|s| s.tool.len() + s.prompt.len() + s.resource_template.len() + s.resource.len())
            .sum()
    }
}

/// The largest lock read: far past any real one (10,000 tools per server is the
/// listing limit), small enough that a file committed in its place cannot exhaust
/// memory.
pub const MAX_LOCK_BYTES: u64 = 256 * 1024 * 1024;

/// The lock file's text; `Ok(None)`: no file. Bytes that are not UTF-8 are named by
/// line and byte, as a TOML error is.
fn read_text(path: &Path) -> Result<Option<String>, LockError> {
    let bytes = match crate::base::files::read_regular(path, MAX_LOCK_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LockError::Read {
                path: path.display().to_string(),
                source,
            });
        }
    };
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let line = 1 + memchr::memchr_iter(b'\n', &bytes[..at]).count();
        let line_start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
        LockError::Invalid {
            path: path.display().to_string(),
            line,
            message: format!(
                "not valid UTF-8: byte {} of the file (column {} of this line) is 0x{:02X}",
                at + 1,
                at - line_start + 1,
                bytes[at]
            ),
        }
    })
}

/// [`read_lock`], also returning the file's text (for [`LockLines`]).
pub fn read_lock_with_text(path: &Path) -> Result<Option<(Lockfile, String)>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    let lock = parse_lock(&text, &path.display().to_string())?;
    Ok(Some((lock, text)))
}

/// Parses and checks lock text; `path` is only for messages.
pub fn parse_lock(text: &str, path: &str) -> Result<Lockfile, LockError> {
    parse_lock_with_lines(text, path).map(|(lock, _)| lock)
}

/// [`parse_lock`], also returning where each server and definition is: the same as
/// [`LockLines::of`] the text, from the one reading of it.
pub fn parse_lock_with_lines(text: &str, path: &str) -> Result<(Lockfile, LockLines), LockError> {
    parse_unchecked(text, path)?.check()
}

/// Reads and checks one server's part of a lock file: what the guard needs. The TOML
/// is read whole (a few passes over the text), but the other servers' definitions are
/// never parsed as JSON, hashed or kept, so a guard for a small server does not pay
/// for a large one. `Ok(None)`: no file;
/// `Ok(Some(None))`: the lock does not pin that server.
pub fn read_lock_server(
    path: &Path,
    name: &str,
) -> Result<Option<Option<PinnedServer>>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    parse_lock_server(&text, &path.display().to_string(), name).map(Some)
}

/// [`parse_lock`] for one server only.
pub fn parse_lock_server(
    text: &str,
    path: &str,
    name: &str,
) -> Result<Option<PinnedServer>, LockError> {
    let version = check_header(text, path)?;
    // In the writer's layout the whole text is read in one fast pass, and only the
    // one server's definitions are then parsed and hashed.
    let twice = |at: usize| invalid(text, path, at, format!("server {name:?} appears twice"));
    if let Some(raw) = layout::read(text) {
        let mut servers = raw.server.into_iter().filter(|s| s.name.get_ref() == name);
        let Some(server) = servers.next() else {
            return Ok(None);
        };
        if let Some(again) = servers.next() {
            return Err(twice(again.name.span().start));
        }
        return check_server(
            server,
            version,
            &LineIndex::new(text),
            path,
            Definitions::Read,
        )
        .map(Some);
    }
    let names: ServerNames = toml::from_str(text).map_err(|e| toml_error(text, path, e))?;
    let mut found = None;
    for (index, server) in names.server.iter().enumerate() {
        if server.name.get_ref() == name {
            if found.is_some() {
                return Err(twice(server.name.span().start));
            }
            found = Some(index);
        }
    }
    let Some(index) = found else {
        return Ok(None);
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|e| toml_error(text, path, e))?;
    let one =
        OneServer::deserialize_with(deserializer, index).map_err(|e| toml_error(text, path, e))?;
    match one {
        Some(server) => check_server(
            server,
            version,
            &LineIndex::new(text),
            path,
            Definitions::Read,
        )
        .map(Some),
        None => Ok(None),
    }
}

/// Server names only; every other key is skipped.
#[derive(Deserialize)]
struct ServerNames {
    #[serde(default)]
    server: Vec<ServerName>,
}

#[derive(Deserialize)]
struct ServerName {
    name: Spanned<String>,
}

/// The lock with only the `index`th server read; the others are skipped unread.
struct OneServer;

impl OneServer {
    fn deserialize_with<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
        index: usize,
    ) -> Result<Option<RawServer>, D::Error> {
        use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct Top(usize);
        struct Servers(usize);
        impl<'de> Visitor<'de> for Top {
            type Value = Option<RawServer>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a lock")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "server" {
                        found = map.next_value_seed(Servers(self.0))?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
        }
        impl<'de> DeserializeSeed<'de> for Servers {
            type Value = Option<RawServer>;
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_seq(self)
            }
        }
        impl<'de> Visitor<'de> for Servers {
            type Value = Option<RawServer>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of servers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                let mut at = 0;
                loop {
                    if at == self.0 {
                        match seq.next_element::<RawServer>()? {
                            Some(server) => found = Some(server),
                            None => break,
                        }
                    } else if seq.next_element::<IgnoredAny>()?.is_none() {
                        break;
                    }
                    at += 1;
                }
                Ok(found)
            }
        }
        deserializer.deserialize_map(Top(index))
    }
}

fn invalid(text: &str, path: &str, offset: usize, message: String) -> LockError {
    LockError::Invalid {
        path: path.to_string(),
        line: line_of(text, offset),
        message,
    }
}

fn invalid_at(index: &LineIndex, path: &str, offset: usize, message: String) -> LockError {
    LockError::Invalid {
        path: path.to_string(),
        line: index.line(offset),
        message,
    }
}

fn toml_error(text: &str, path: &str, e: toml::de::Error) -> LockError {
    let offset = e.span().map_or(0, |s| s.start);
    invalid(
        text,
        path,
        offset,
        format!("not a valid lock: {}", e.message().trim()),
    )
}

/// The checks before any server is read: no conflict marker, a version this build
/// reads. Returns the version.
fn check_header(text: &str, path: &str) -> Result<i64, LockError> {
    let at = |offset: usize, message: String| invalid(text, path, offset, message);
    if let Some((line, marker)) = conflict_marker(text) {
        return Err(LockError::Invalid {
            path: path.to_string(),
            line,
            message: format!(
                "merge conflict marker {marker:?}; take either side whole, then run `mcp-lock update` to re-pin"
            ),
        });
    }
    // Top-level keys come before the first table, so the version is read from the
    // text above it, not from a parse of the whole lock. Should that head not read
    // on its own (a table header inside a multi-line string), the whole text is read.
    let head = &text[..first_table_at(text)];
    let version = toml::from_str::<VersionOnly>(head)
        .or_else(|_| toml::from_str::<VersionOnly>(text))
        .map_err(|e| toml_error(text, path, e))?;
    match version.version {
        None => Err(at(0, "no `version` key; is this an mcp.lock?".into())),
        Some(v) if *v.get_ref() > FORMAT_VERSION => Err(at(
            v.span().start,
            format!(
                "lock format version {} is newer than this mcp-lock understands ({FORMAT_VERSION}); upgrade mcp-lock",
                v.get_ref()
            ),
        )),
        Some(v) if *v.get_ref() < 1 => Err(at(
            v.span().start,
            format!("unknown lock format version {}", v.get_ref()),
        )),
        Some(v) => Ok(*v.get_ref()),
    }
}

/// Where the first line that opens a table (`[` after any indentation) starts; the
/// text's length when there is none.
fn first_table_at(text: &str) -> usize {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            return at;
        }
        at += line.len();
    }
    text.len()
}

fn conflict_marker(text: &str) -> Option<(usize, &'static str)> {
    text.lines().enumerate().find_map(|(i, line)| {
        let marker = if line.starts_with("<<<<<<<") {
            "<<<<<<<"
        } else if line.starts_with(">>>>>>>") {
            ">>>>>>>"
        } else if line == "=======" || line.starts_with("======= ") {
            "======="
        } else if line.starts_with("|||||||") {
            "|||||||"
        } else {
            return None;
        };
        Some((i + 1, marker))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../mcp.lock.example");

    /// The example lock with a second server whose pins are broken.
    fn two_servers() -> String {
        let at = EXAMPLE.find("\n[[server]]").unwrap();
        let section = &EXAMPLE[at..].replacen("name = \"memory\"", "name = \"broken\"", 1);
        let section = section.replacen("set_hash = \"197bb8", "set_hash = \"000000", 1);
        format!("{EXAMPLE}{section}")
    }

    #[test]
    fn one_server_is_read_as_the_whole_lock_reads_it_and_the_others_are_skipped() {
        let whole = parse_lock(EXAMPLE, "mcp.lock").unwrap();
        let text = two_servers();
        assert!(parse_lock(&text, "mcp.lock").is_err());
        let one = parse_lock_server(&text, "mcp.lock", "memory").unwrap();
        assert_eq!(one.as_ref(), whole.servers.get("memory"));
        assert_eq!(
            parse_lock_server(&text, "mcp.lock", "nosuch").unwrap(),
            None
        );
        let err = parse_lock_server(&text, "mcp.lock", "broken").unwrap_err();
        assert!(err.to_string().contains("set_hash does not match"), "{err}");
    }

    #[test]
    fn a_server_pinned_twice_is_refused_naming_the_second_by_either_reader() {
        let at = EXAMPLE.find("\n[[server]]").unwrap();
        let twice = format!("{EXAMPLE}{}", &EXAMPLE[at..]);
        let second = 1 + twice[..twice.rfind("name = \"memory\"").unwrap()]
            .matches('\n')
            .count();
        let want = format!("mcp.lock:{second}: server \"memory\" appears twice");
        // As written, and with a comment the writer's own layout does not have (read
        // by the TOML reader instead).
        let commented = twice.replacen("[[server]]", "[[server]] # pinned", 1);
        for text in [&twice, &commented] {
            let err = parse_lock_server(text, "mcp.lock", "memory").unwrap_err();
            assert_eq!(err.to_string(), want);
        }
        assert!(layout::read(&twice).is_some() && layout::read(&commented).is_none());
    }

    #[test]
    fn one_server_named_twice_is_refused() {
        let at = EXAMPLE.find("\n[[server]]").unwrap();
        let text = format!("{EXAMPLE}{}", &EXAMPLE[at..]);
        let err = parse_lock_server(&text, "mcp.lock", "memory").unwrap_err();
        assert!(err.to_string().contains("appears twice"), "{err}");
    }

    /// The example lock with its first definition written as `form` makes of its
    /// text (the definition without the opening and closing quotes).
    fn first_definition_as(form: impl Fn(&str) -> String) -> String {
        let start = EXAMPLE.find("definition = '''\n").unwrap() + "definition = ".len();
        let end = start + 4 + EXAMPLE[start + 4..].find("\n'''").unwrap() + 4;
        let body = &EXAMPLE[start + 4..end - 4];
        format!("{}{}{}", &EXAMPLE[..start], form(body), &EXAMPLE[end..])
    }

    #[test]
    fn a_definition_reads_the_same_in_every_toml_string_form() {
        let whole = parse_lock(EXAMPLE, "mcp.lock").unwrap();
        fn basic(body: &str) -> String {
            body.replace('\\', "\\\\").replace('"', "\\\"")
        }
        let forms: [fn(&str) -> String; 5] = [
            |b| format!("'''{b}'''"),
            |b| format!("'{}'", b.replace('\n', " ")),
            |b| format!("\"\"\"\n{}\"\"\"", basic(b)),
            |b| format!("\"{}\"", basic(b).replace('\n', "\\n")),
            |b| format!("'''\r\n{}\r\n'''", b.replace('\n', "\r\n")),
        ];
        for (i, form) in forms.iter().enumerate() {
            let text = first_definition_as(form);
            assert_ne!(text, EXAMPLE);
            let lock = parse_lock(&text, "mcp.lock").unwrap_or_else(|e| panic!("form {i}: {e}"));
            assert_eq!(lock, whole, "form {i}");
        }
    }

    #[test]
    fn a_definition_that_is_not_a_string_is_refused_at_its_line() {
        let text = first_definition_as(|_| "42".into());
        let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
        let line = 1 + text[..text.find("definition = 42").unwrap()]
            .matches('\n')
            .count();
        assert!(
            err.starts_with(&format!("mcp.lock:{line}: not a valid lock")),
            "{err}"
        );
        let text = first_definition_as(|_| "\"\\q\"".into());
        let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("mcp.lock:{line}: not a valid lock")),
            "{err}"
        );
    }
}

//! Lines in a lock's text: a line index for many lookups, and where each server and
//! definition is.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::raw::RawServer;
use crate::contract::surface::Kind;

/// The 1-based line of a byte offset, counting once; for one lookup (an error).
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    LineIndex::new(text).line(offset)
}

/// The start of every line of a text, so that many offsets find their lines in
/// log time each rather than by rescanning the text.
pub(crate) struct LineIndex {
    /// Byte offset just after each newline: 32 bits each where the text allows (a
    /// large lock has hundreds of thousands of lines, and the index is held beside
    /// it while it is read).
    starts: Starts,
    len: usize,
}

enum Starts {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let ends = newline_ends(text.as_bytes());
        let starts = if u32::try_from(text.len()).is_ok() {
            Starts::Narrow(ends.map(|end| end as u32).collect())
        } else {
            Starts::Wide(ends.collect())
        };
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// The 1-based line holding `offset` (the last line past the end).
    pub(crate) fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.len);
        // Lines before `offset`: newlines at positions < offset.
        let before = match &self.starts {
            Starts::Narrow(starts) => starts.partition_point(|&start| start as usize <= offset),
            Starts::Wide(starts) => starts.partition_point(|&start| start <= offset),
        };
        before + 1
    }
}

fn newline_ends(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', bytes).map(|i| i + 1)
}

/// Where each server and definition is in a lock's text, for reports that point at
/// lines.
#[derive(Debug, Clone, Default)]
pub struct LockLines {
    servers: BTreeMap<String, usize>,
    items: BTreeMap<(String, Kind, String), usize>,
}

impl LockLines {
    /// The lines of lock text; text that is not a lock gives no lines.
    pub fn of(text: &str) -> LockLines {
        #[derive(Deserialize)]
        struct Names {
            #[serde(default)]
            server: Vec<ServerNames>,
        }
        #[derive(Deserialize)]
        struct ServerNames {
            name: Spanned<String>,
            #[serde(default)]
            tool: Vec<KeyName>,
            #[serde(default)]
            prompt: Vec<KeyName>,
            #[serde(default)]
            resource_template: Vec<KeyName>,
            #[serde(default)]
            resource: Vec<KeyName>,
        }
        #[derive(Deserialize)]
        struct KeyName {
            #[serde(alias = "uri_template", alias = "uri")]
            name: Spanned<String>,
        }
        let mut lines = LockLines::default();
        let Ok(names) = toml::from_str::<Names>(text) else {
            return lines;
        };
        let index = LineIndex::new(text);
        let line_of = |offset: usize| index.line(offset);
        for server in names.server {
            let line = line_of(server.name.span().start);
            let name = server.name.into_inner();
            let kinds = [
                (Kind::Tool, server.tool),
                (Kind::Prompt, server.prompt),
                (Kind::ResourceTemplate, server.resource_template),
                (Kind::Resource, server.resource),
            ];
            for (kind, items) in kinds {
                for item in items {
                    let at = line_of(item.name.span().start);
                    // A key pinned with two definitions points at the first.
                    lines
                        .items
                        .entry((name.clone(), kind, item.name.into_inner()))
                        .or_insert(at);
                }
            }
            lines.servers.insert(name, line);
        }
        lines
    }

    /// The lines of one server read by [`parse_lock_with_lines`], as
    /// [`LockLines::of`] finds them.
    pub(super) fn add_server(&mut self, index: &LineIndex, server: &RawServer) {
        let name = server.name.get_ref();
        let kinds = [
            (Kind::Tool, &server.tool),
            (Kind::Prompt, &server.prompt),
            (Kind::ResourceTemplate, &server.resource_template),
            (Kind::Resource, &server.resource),
        ];
        for (kind, items) in kinds {
            for item in items {
                let Some(key) = [&item.name, &item.uri_template, &item.uri]
                    .into_iter()
                    .flatten()
                    .next()
                else {
                    continue;
                };
                self.items
                    .entry((name.clone(), kind, key.get_ref().clone()))
                    .or_insert_with(|| index.line(key.span().start));
            }
        }
        self.servers
            .insert(name.clone(), index.line(server.name.span().start));
    }

    /// The line naming a tool, else its server, else 1.
    pub fn line(&self, server: &str, tool: Option<&str>) -> usize {
        self.line_of(server, Kind::Tool, tool)
    }

    /// The line keying a definition of any kind, else its server's, else 1.
    pub fn line_of(&self, server: &str, kind: Kind, key: Option<&str>) -> usize {
        key.and_then(|k| self.items.get(&(server.to_string(), kind, k.to_string())))
            .or_else(|| self.servers.get(server))
            .copied()
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_finds_the_line_it_is_on_counting_from_one() {
        let text = "a\nbc\n\nd";
        let index = LineIndex::new(text);
        let lines: Vec<usize> = (0..=text.len() + 3).map(|o| index.line(o)).collect();
        assert_eq!(lines, [1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 4]);
    }
}

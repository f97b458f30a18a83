//! The library is layered, and the tree shows it: `src/` holds one folder per layer
//! (lib.rs says what each is), beside the binary (main.rs, cli, commands/). Data
//! flows one way: a file in a layer may use its own layer and those below it, never
//! one above. No source file passes 800 lines, and no two files import each other.
//!
//! These are checked here rather than by crates of a workspace: one crate keeps
//! `cargo install` and the public paths simple, and these checks read the same
//! `use` lines the compiler would.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom first: each may use only itself and those before it.
const LAYERS: &[&str] = &[
    "base", "contract", "servers", "records", "verdict", "live", "review", "hosts",
];

/// What may sit at the top of `src/` beside the layers: the crate root and the binary.
const BESIDE_THE_LAYERS: &[&str] = &["lib.rs", "main.rs", "cli.rs", "cli", "commands"];

/// Longest a source file may be.
const MAX_LINES: usize = 800;

/// Files still over [`MAX_LINES`], split by a change of their own.
const LONG_FOR_NOW: &[&str] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a source file below `src/` (`["records", "lock"]` for
/// `records/lock/mod.rs`), and whether it belongs to the binary rather than the
/// library.
fn module_of(relative: &Path) -> (bool, Vec<String>) {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    let binary = matches!(
        parts.first().map(String::as_str),
        Some("cli" | "commands") | None
    ) && relative != Path::new("lib.rs");
    (binary, parts)
}

/// The files that are only unit tests: declared under `#[cfg(test)]` as `mod x;`
/// (optionally with a `#[path]`).
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let dir = file.parent().unwrap();
        let stem = file.file_stem().unwrap().to_string_lossy();
        let own_dir = if ["mod", "lib", "main"].contains(&stem.as_ref()) {
            dir.to_path_buf()
        } else {
            dir.join(stem.as_ref())
        };
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            let mut path_attr = None;
            for next in &lines[i + 1..] {
                let next = next.trim();
                if let Some(rest) = next.strip_prefix("#[path = \"") {
                    path_attr = rest.split('"').next().map(String::from);
                } else if next.starts_with("#[") {
                } else {
                    let declared = next
                        .strip_prefix("mod ")
                        .and_then(|rest| rest.strip_suffix(';'));
                    if let Some(name) = declared {
                        match &path_attr {
                            Some(p) => out.insert(dir.join(p)),
                            None => {
                                out.insert(own_dir.join(format!("{name}.rs")));
                                out.insert(own_dir.join(name).join("mod.rs"))
                            }
                        };
                    }
                    break;
                }
            }
        }
    }
    out
}

/// Source without comments and without inline `#[cfg(test)] mod x { ... }` blocks.
fn code_of(source: &str) -> String {
    let mut out = Vec::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.starts_with("mod ") && next.ends_with('{'))
        {
            for inner in lines.by_ref() {
                if inner == "}" {
                    break;
                }
            }
            continue;
        }
        out.push(match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        });
    }
    out.join("\n")
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths `text` names after `prefix::`: `a::b`, or each entry of `{a, b::{c, d}}`.
fn expand(prefix: &[String], text: &str, out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            for entry in top_level_entries(group) {
                expand(&path, entry, out);
            }
            return;
        }
        let name: String = rest.chars().take_while(|c| is_name(*c)).collect();
        if name.is_empty() || name == "self" {
            break;
        }
        rest = &rest[name.len()..];
        path.push(name);
        match rest.strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    out.push(path);
}

/// The entries of a `{a, b::{c, d}, e}` group (its opening brace already read), split
/// at its own commas only.
fn top_level_entries(group: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&group[from..i]);
                return out;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&group[from..]);
    out
}

/// Every path a file names from `crate::`, `super::` or `self::`, made absolute from
/// the crate root (`use crate::{a, b::c}` gives two). `module` is the file's own.
fn paths_in(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            if at > 0 && (is_name(bytes[at - 1] as char) || bytes[at - 1] == b':') {
                continue;
            }
            // `super::super::x`: read the whole chain of leading keywords.
            let mut rest = &code[at..];
            let mut relative = module.to_vec();
            loop {
                if let Some(r) = rest.strip_prefix("crate::") {
                    relative.clear();
                    rest = r;
                } else if let Some(r) = rest.strip_prefix("super::") {
                    relative.pop();
                    rest = r;
                } else if let Some(r) = rest.strip_prefix("self::") {
                    rest = r;
                } else {
                    break;
                }
            }
            expand(&relative, rest, &mut out);
        }
    }
    out
}

/// The source files of the library and the binary, test-only ones left out.
struct Tree {
    /// Module path (binary?, segments) -> file, relative to `src/`.
    files: BTreeMap<(bool, Vec<String>), PathBuf>,
}

impl Tree {
    fn read() -> Tree {
        let all = rust_files(&src());
        let tests = test_only_files(&all);
        let mut files = BTreeMap::new();
        for file in all.into_iter().filter(|f| !tests.contains(f)) {
            let relative = file.strip_prefix(src()).unwrap().to_path_buf();
            files.insert(module_of(&relative), relative);
        }
        Tree { files }
    }

    /// The file a path leads into: the longest module prefix that is a file.
    fn file_of(&self, binary: bool, path: &[String]) -> Option<&PathBuf> {
        (1..=path.len())
            .rev()
            .find_map(|n| self.files.get(&(binary, path[..n].to_vec())))
    }

    /// Which other files each file imports.
    fn imports(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut out: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for ((binary, module), file) in &self.files {
            let code = code_of(&std::fs::read_to_string(src().join(file)).unwrap());
            for path in paths_in(&code, module) {
                if let Some(target) = self.file_of(*binary, &path)
                    && target != file
                {
                    out.entry(file.clone()).or_default().insert(target.clone());
                }
            }
        }
        out
    }
}

fn layer_of(file: &Path) -> Option<usize> {
    let first = file.iter().next()?.to_string_lossy();
    LAYERS.iter().position(|l| *l == first)
}

/// Each file that uses a layer above its own, with what it uses.
fn upward_uses(tree: &Tree) -> BTreeMap<String, BTreeSet<String>> {
    let mut wrong: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for ((binary, module), file) in &tree.files {
        let Some(level) = layer_of(file).filter(|_| !binary) else {
            continue;
        };
        let code = code_of(&std::fs::read_to_string(src().join(file)).unwrap());
        for path in paths_in(&code, module) {
            let Some(first) = path.first() else { continue };
            if let Some(at) = LAYERS.iter().position(|l| l == first)
                && at > level
            {
                wrong
                    .entry(file.display().to_string())
                    .or_default()
                    .insert(path.join("::"));
            }
        }
    }
    wrong
}

#[test]
fn no_layer_uses_a_layer_above_it() {
    let wrong = upward_uses(&Tree::read());
    assert!(
        wrong.is_empty(),
        "files using a layer above their own (order, bottom first: {LAYERS:?}): {wrong:#?}"
    );
}

#[test]
fn the_top_of_src_holds_only_the_layers_and_the_binary() {
    let mut stray = Vec::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !LAYERS.contains(&name.as_str()) && !BESIDE_THE_LAYERS.contains(&name.as_str()) {
            stray.push(name);
        }
    }
    assert!(
        stray.is_empty(),
        "src/ holds {stray:?}: put each in its layer's folder ({LAYERS:?}) and say so in lib.rs"
    );
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    for layer in LAYERS {
        assert!(
            lib.contains(&format!("pub mod {layer};")) && src().join(layer).is_dir(),
            "the {layer} layer is missing from lib.rs or src/"
        );
    }
}

#[test]
fn no_source_file_passes_800_lines() {
    let long: Vec<String> = rust_files(&src())
        .into_iter()
        .filter_map(|file| {
            let name = Path::new("src")
                .join(file.strip_prefix(src()).unwrap())
                .display()
                .to_string();
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            (lines > MAX_LINES && !LONG_FOR_NOW.contains(&name.as_str()))
                .then(|| format!("{name}: {lines}"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them along their seams): {long:?}"
    );
}

#[test]
fn no_two_source_files_import_each_other() {
    let imports = Tree::read().imports();
    let mut pairs = Vec::new();
    for (a, targets) in &imports {
        for b in targets {
            if a < b && imports.get(b).is_some_and(|back| back.contains(a)) {
                pairs.push(format!("{} <-> {}", a.display(), b.display()));
            }
        }
    }
    assert!(
        pairs.is_empty(),
        "files importing each other (move what they share to where it belongs): {pairs:?}"
    );
}

#[test]
fn the_checks_see_grouped_relative_and_plain_paths() {
    let module: Vec<String> = ["verdict", "policy"].map(String::from).into();
    let code = code_of(
        "use crate::{records::lock, hosts::{wrap::Wrap, startup}};\n\
         fn f() { crate::review::report::x(); super::drift::y(); }\n\
         use super::super::live::check;\n\
         // crate::hosts in a comment\n\
         #[cfg(test)]\nmod tests {\n    use crate::hosts::hook;\n}\n",
    );
    let found: BTreeSet<String> = paths_in(&code, &module)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let expected: BTreeSet<String> = [
        "records::lock",
        "hosts::wrap::Wrap",
        "hosts::startup",
        "review::report::x",
        "verdict::drift::y",
        "live::check",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn every_source_file_is_seen_by_the_checks() {
    let tree = Tree::read();
    assert!(tree.files.len() > 100, "{} files", tree.files.len());
    for layer in LAYERS {
        assert!(
            tree.files.values().any(|f| f.starts_with(layer)),
            "no source read for {layer}"
        );
    }
    // The unit-test files are left out: they may use whatever they test against.
    let tests: Vec<_> = tree
        .files
        .values()
        .filter(|f| f.to_string_lossy().ends_with("tests.rs"))
        .collect();
    assert!(tests.is_empty(), "unit-test files read as code: {tests:?}");
}

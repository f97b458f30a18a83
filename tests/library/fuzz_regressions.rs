//! Inputs the fuzz targets (fuzz/, scripts/fuzz.sh) found crashing, kept so the
//! normal suite runs each one through the same entry point the target drives.

use std::path::Path;

use mcp_lock::servers::config::read_file;

/// `config` target: a Gemini CLI settings file whose values hold characters of more
/// than one byte (here U+FFFD, from a byte that is not UTF-8) panicked in the
/// translation of `$VAR` names.
#[test]
fn a_gemini_settings_file_with_non_ascii_values_reads_without_a_panic() {
    let found = std::fs::read("tests/data/fuzz/config-gemini-non-ascii.bin").unwrap();
    // The target's first byte picks the file's place (5: .gemini/settings.json).
    let (&selector, rest) = found.split_first().unwrap();
    assert_eq!(selector, 5);
    let text = String::from_utf8_lossy(rest);
    let project = Path::new("/project");
    let place = ".gemini/settings.json";
    let read = read_file(&text, place, &project.join(place), project);
    assert!(read.is_ok(), "{:?}", read.err().map(|e| e.to_string()));

    let text = r#"{"mcpServers": {"café": {"command": "naïve", "args": ["€$TOKEN", "$ÉTÉ"]}}}"#;
    let read = read_file(text, place, &project.join(place), project).unwrap();
    assert_eq!(read.entries.len(), 1);
}

//! A dependency published only as a source distribution, read without building it.
//!
//! Resolving a closure never runs a build backend (an sdist's `setup.py` or backend is
//! arbitrary code). An sdist whose `PKG-INFO` says its dependencies are static
//! (Metadata-Version 2.2 or later, and no `Dynamic:` dependency field, PEP 643) gives
//! them without one: the archive is downloaded from the index (bounded, checked
//! against the index's sha256) and only `PKG-INFO` is read out of it, in memory;
//! nothing is extracted.

use std::io::Read as _;

use flate2::read::GzDecoder;
use sha2::{Digest, Sha256};

use crate::servers::package::pypi::{self, IndexFile, normalize};
use crate::servers::package::{Fetcher, is_sha256_hex};

/// The largest sdist downloaded to read its `PKG-INFO`.
pub const MAX_SDIST: usize = 64 * 1024 * 1024;
/// The most bytes decompressed while looking for `PKG-INFO` (a gzip bomb stops here).
const MAX_UNPACKED: u64 = 512 * 1024 * 1024;
/// The most archive entries looked at.
const MAX_ENTRIES: usize = 100_000;
/// The largest `PKG-INFO` (or pax/long-name record) read.
const MAX_PKG_INFO: u64 = 4 * 1024 * 1024;

/// An sdist whose dependencies its `PKG-INFO` states statically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticSdist {
    /// As the index names it.
    pub name: String,
    pub version: String,
    /// Lowercase hex sha256 of the sdist, as the index gives it and as downloaded.
    pub sha256: String,
    /// Its `Requires-Dist` lines, each checked to be a plain requirement.
    pub requires: Vec<String>,
}

/// Reads `name`'s sdist from the index at `version` (when uv named the one it tried),
/// else the newest release with one that is not yanked. `Err`: the whole reason it
/// cannot be read without building it, in words for the user.
pub async fn read_static(
    index: &str,
    name: &str,
    version: Option<&str>,
    fetcher: &Fetcher,
) -> Result<StaticSdist, String> {
    let files = pypi::fetch(index, name, fetcher).await?;
    let sdists: Vec<&IndexFile> = files
        .iter()
        .filter(|f| f.filename.ends_with(".tar.gz") && f.yanked.is_none())
        .collect();
    let version = match version {
        Some(v) => v.to_string(),
        None => {
            let owned: Vec<IndexFile> = sdists.iter().map(|f| (*f).clone()).collect();
            pypi::newest(&owned).ok_or_else(|| {
                format!("the index at {index} lists no .tar.gz source distribution of {name} that is not yanked")
            })?
        }
    };
    let file = sdists
        .iter()
        .find(|f| pypi::same_version(&f.version, &version))
        .ok_or_else(|| {
            format!("the index at {index} lists no .tar.gz source distribution of {name} {version}")
        })?;
    let sha256 = file
        .sha256
        .as_deref()
        .filter(|s| is_sha256_hex(s))
        .ok_or_else(|| format!("the index at {index} gives no sha256 for {}", file.filename))?
        .to_ascii_lowercase();
    let url = file
        .url
        .as_deref()
        .ok_or_else(|| format!("the index at {index} gives no link to {}", file.filename))?;
    let bytes = fetcher
        .get_bytes(url, "application/octet-stream", MAX_SDIST)
        .await?;
    let got = format!("{:x}", Sha256::digest(&bytes));
    if got != sha256 {
        return Err(format!(
            "{} from {url} does not have the sha256 the index gives ({sha256} -> {got})",
            file.filename
        ));
    }
    let bytes_owned = bytes;
    let text = tokio::task::spawn_blocking(move || pkg_info(&bytes_owned))
        .await
        .map_err(|e| format!("reading {}: {e}", file.filename))?
        .map_err(|e| format!("{}: {e}", file.filename))?;
    let requires = static_requires(&text, name, &file.version)?;
    Ok(StaticSdist {
        name: name.to_string(),
        version: file.version.clone(),
        sha256,
        requires,
    })
}

/// The text of the top-level `PKG-INFO` (`<dir>/PKG-INFO`) of a `.tar.gz`, read in
/// memory with every size bounded; `Err` when there is none.
pub fn pkg_info(gz: &[u8]) -> Result<String, String> {
    let mut tar = GzDecoder::new(gz).take(MAX_UNPACKED);
    let mut long_name: Option<String> = None;
    for _ in 0..MAX_ENTRIES {
        let mut header = [0u8; 512];
        if let Err(e) = tar.read_exact(&mut header) {
            return Err(format!("has no PKG-INFO (the archive ends: {e})"));
        }
        if header.iter().all(|&b| b == 0) {
            return Err("has no top-level PKG-INFO".into());
        }
        let size = octal(&header[124..136]).ok_or("is not a tar archive mcp-lock reads")?;
        let padded = size.div_ceil(512) * 512;
        let kind = header[156];
        let mut name = cstr(&header[..100]);
        if &header[257..262] == b"ustar" {
            let prefix = cstr(&header[345..500]);
            if !prefix.is_empty() {
                name = format!("{prefix}/{name}");
            }
        }
        if let Some(long) = long_name.take() {
            name = long;
        }
        match kind {
            // A GNU long name or a pax header: the next entry's path.
            b'L' | b'x' => {
                if size > MAX_PKG_INFO {
                    return Err("has an archive header record too large to read".into());
                }
                let mut data = vec![0u8; padded as usize];
                tar.read_exact(&mut data)
                    .map_err(|e| format!("is cut short ({e})"))?;
                data.truncate(size as usize);
                long_name = if kind == b'L' {
                    Some(cstr(&data))
                } else {
                    pax_path(&data)
                };
                continue;
            }
            b'0' | 0 if is_top_pkg_info(&name) => {
                if size > MAX_PKG_INFO {
                    return Err(format!("has a PKG-INFO of {size} bytes; not read"));
                }
                let mut data = vec![0u8; size as usize];
                tar.read_exact(&mut data)
                    .map_err(|e| format!("is cut short ({e})"))?;
                return String::from_utf8(data)
                    .map_err(|_| "has a PKG-INFO that is not UTF-8".into());
            }
            _ => {
                let skipped = std::io::copy(&mut (&mut tar).take(padded), &mut std::io::sink())
                    .map_err(|e| format!("is cut short ({e})"))?;
                if skipped < padded {
                    return Err("has no PKG-INFO (the archive ends)".into());
                }
            }
        }
    }
    Err(format!(
        "has more than {MAX_ENTRIES} entries before any PKG-INFO"
    ))
}

/// `<dir>/PKG-INFO`, one level down, the directory a plain name (never `..`, never
/// absolute).
fn is_top_pkg_info(path: &str) -> bool {
    let path = path.strip_prefix("./").unwrap_or(path);
    let parts: Vec<&str> = path.split('/').collect();
    matches!(parts.as_slice(), [dir, "PKG-INFO"] if !dir.is_empty() && *dir != "." && *dir != "..")
}

fn cstr(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// A tar size field: octal digits, spaces or NULs around them. Base-256 sizes (past
/// 8 GiB) are not read.
fn octal(field: &[u8]) -> Option<u64> {
    let text = cstr(field);
    let text = text.trim();
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

/// The `path=` record of a pax header (`"<len> path=<value>\n"` records).
fn pax_path(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    text.lines().find_map(|record| {
        let (_, kv) = record.split_once(' ')?;
        kv.strip_prefix("path=").map(String::from)
    })
}

/// The dependencies a `PKG-INFO` states statically, or the whole reason they are not.
pub fn static_requires(text: &str, name: &str, version: &str) -> Result<Vec<String>, String> {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            fields.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let get = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let what = format!("{name} {version}");
    let metadata_version = get("metadata-version").unwrap_or("none");
    let static_fields = metadata_version
        .split_once('.')
        .and_then(|(major, minor)| Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?)))
        .is_some_and(|v| v >= (2, 2));
    if !static_fields {
        return Err(format!(
            "the PKG-INFO of {what}'s source distribution is Metadata-Version {metadata_version}, older than 2.2, so it does not say whether its dependencies are static: only its build backend can tell"
        ));
    }
    let same_name = get("name").is_some_and(|n| normalize(n) == normalize(name));
    let same_version = get("version").is_some_and(|v| pypi::same_version(v, version));
    if !(same_name && same_version) {
        return Err(format!(
            "the PKG-INFO of {what}'s source distribution names another project or version ({} {})",
            get("name").unwrap_or("none"),
            get("version").unwrap_or("none")
        ));
    }
    let dynamic: Vec<&str> = fields
        .iter()
        .filter(|(k, _)| k == "dynamic")
        .map(|(_, v)| v.as_str())
        .filter(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "requires-dist" | "requires-python" | "provides-extra"
            )
        })
        .collect();
    if !dynamic.is_empty() {
        return Err(format!(
            "the PKG-INFO of {what}'s source distribution marks {} dynamic: its dependencies are known only by running its build backend",
            dynamic.join(", ")
        ));
    }
    let mut requires = Vec::new();
    for (_, value) in fields.iter().filter(|(k, _)| k == "requires-dist") {
        if !plain_requirement(value) {
            return Err(format!(
                "the PKG-INFO of {what}'s source distribution has a requirement mcp-lock does not pass on ({value:?}): only `name[extras] specifiers ; markers`"
            ));
        }
        requires.push(value.clone());
    }
    Ok(requires)
}

/// A requirement that is a name with extras, version specifiers and markers only: no
/// direct reference (`@ url`), no option (`-r`, `--index-url`), no comment, nothing
/// that could start another line of the requirements file uv reads.
fn plain_requirement(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && !text.contains("--")
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._-[],<>=!~;'\"()*+".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn header(name: &str, size: usize, kind: u8) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        let size = format!("{size:011o}\0");
        h[124..136].copy_from_slice(size.as_bytes());
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h
    }

    fn targz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, data) in entries {
            tar.extend_from_slice(&header(name, data.len(), b'0'));
            tar.extend_from_slice(data);
            tar.resize(tar.len().div_ceil(512) * 512, 0);
        }
        tar.extend_from_slice(&[0u8; 1024]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    const STATIC: &str = "Metadata-Version: 2.2\nName: proxy_tools\nVersion: 0.1.0\nRequires-Dist: six>=1 ; python_version >= \"3.8\"\nDescription: x\n        more\n\nbody\nRequires-Dist: evil\n";

    #[test]
    fn only_the_top_level_pkg_info_is_read() {
        let gz = targz(&[
            ("proxy_tools-0.1.0/setup.py", b"raise SystemExit"),
            ("proxy_tools-0.1.0/sub/PKG-INFO", b"nested"),
            ("../PKG-INFO", b"outside"),
            ("proxy_tools-0.1.0/PKG-INFO", STATIC.as_bytes()),
        ]);
        assert_eq!(pkg_info(&gz).unwrap(), STATIC);
        let none = targz(&[("../PKG-INFO", b"outside"), ("/PKG-INFO", b"absolute")]);
        assert!(
            pkg_info(&none)
                .unwrap_err()
                .contains("no top-level PKG-INFO")
        );
        assert!(pkg_info(b"not gzip").is_err());
    }

    #[test]
    fn static_dependencies_are_read_and_dynamic_or_old_metadata_is_said_plainly() {
        assert_eq!(
            static_requires(STATIC, "proxy-tools", "0.1.0").unwrap(),
            ["six>=1 ; python_version >= \"3.8\""]
        );
        let dynamic = STATIC.replace("Description", "Dynamic: Requires-Dist\nDescription");
        assert!(
            static_requires(&dynamic, "proxy-tools", "0.1.0")
                .unwrap_err()
                .contains("marks Requires-Dist dynamic")
        );
        let old = STATIC.replace("2.2", "2.1");
        assert!(
            static_requires(&old, "proxy-tools", "0.1.0")
                .unwrap_err()
                .contains("Metadata-Version 2.1, older than 2.2")
        );
        let other = STATIC.replace("0.1.0", "0.2.0");
        assert!(static_requires(&other, "proxy-tools", "0.1.0").is_err());
        for evil in [
            "x @ https://evil/x.whl",
            "-r /etc/passwd",
            "x --index-url http://evil",
            "x # c",
        ] {
            let text = STATIC.replace("six>=1 ; python_version >= \"3.8\"", evil);
            assert!(
                static_requires(&text, "proxy-tools", "0.1.0").is_err(),
                "{evil}"
            );
        }
    }
}

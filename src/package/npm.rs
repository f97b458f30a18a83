//! npm: which registry the user's npm would ask, and what a packument says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::http_get;

/// npm's documented default registry, used only when no configuration names one.
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org/";

/// The registry npm uses for `name`, as npm finds it: `npm_config_registry` (or a
/// scoped `npm_config_@scope:registry`) in the environment, then the project's
/// `.npmrc`, then the user's (`NPM_CONFIG_USERCONFIG` or `~/.npmrc`), then npm's
/// default. A scoped `@scope:registry` line wins over `registry` for that scope.
pub fn registry_for(
    name: &str,
    project_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
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
    let rcs: Vec<BTreeMap<String, String>> = files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .map(|t| parse_npmrc(&t, env))
                .unwrap_or_default()
        })
        .collect();
    let mut keys = Vec::new();
    if let Some(scope) = &scope {
        keys.push(scope.as_str());
    }
    keys.push("registry");
    for key in keys {
        if let Some(value) = from_env(key) {
            return with_slash(value);
        }
        if let Some(value) = rcs.iter().find_map(|rc| rc.get(key)) {
            return with_slash(value.clone());
        }
    }
    DEFAULT_REGISTRY.to_string()
}

fn with_slash(mut url: String) -> String {
    if !url.ends_with('/') {
        url.push('/');
    }
    url
}

/// `key = value` lines of an `.npmrc`, `${VAR}` expanded as npm does; comments
/// (`#`, `;`) skipped.
fn parse_npmrc(text: &str, env: &dyn Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
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
        while let Some(start) = value.find("${") {
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
pub async fn fetch(registry: &str, name: &str) -> Result<Packument, String> {
    let url = format!("{registry}{}", name.replace('/', "%2f"));
    let body = http_get(
        &url,
        "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8",
    )
    .await?;
    parse_packument(&body)
        .map_err(|e| format!("the registry at {registry} answered for {name} with {e}"))
}

/// Reads a packument's dist-tags and versions.
pub fn parse_packument(body: &str) -> Result<Packument, String> {
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("something that is not JSON ({e})"))?;
    let tags = value
        .get("dist-tags")
        .and_then(|t| t.as_object())
        .ok_or("a document without dist-tags (not a packument)")?;
    let versions = value
        .get("versions")
        .and_then(|v| v.as_object())
        .ok_or("a document without versions (not a packument)")?;
    Ok(Packument {
        tags: tags
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
        versions: versions
            .iter()
            .map(|(version, manifest)| {
                let integrity = manifest
                    .pointer("/dist/integrity")
                    .and_then(|i| i.as_str())
                    .map(String::from);
                (version.clone(), integrity)
            })
            .collect(),
    })
}

/// Whether a spec is one exact version (`1.2.3`, `1.2.3-rc.1`, `=1.2.3`, `v1.2.3`).
pub fn exact_version(spec: &str) -> Option<&str> {
    let v = spec.trim_start_matches('=').trim_start_matches('v');
    let core = v.split(['-', '+']).next().unwrap_or(v);
    let parts: Vec<&str> = core.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())))
    .then_some(v)
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
pub fn resolve(packument: &Packument, name: &str, spec: Option<&str>) -> Result<String, String> {
    let spec = spec.unwrap_or("latest");
    if let Some(version) = exact_version(spec) {
        return if packument.versions.contains_key(version) {
            Ok(version.to_string())
        } else {
            Err(format!("{name}@{version} is not published on the registry"))
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
        assert_eq!(registry_for("pkg", dir.path(), &env_none), DEFAULT_REGISTRY);
        std::fs::write(
            home.path().join(".npmrc"),
            "registry=http://user.example/\n",
        )
        .unwrap();
        assert_eq!(
            registry_for("pkg", dir.path(), &env_none),
            "http://user.example/"
        );
        std::fs::write(
            dir.path().join(".npmrc"),
            "; comment\nregistry = http://project.example\n@corp:registry=http://corp.example/npm/\n",
        )
        .unwrap();
        assert_eq!(
            registry_for("pkg", dir.path(), &env_none),
            "http://project.example/"
        );
        assert_eq!(
            registry_for("@corp/tool", dir.path(), &env_none),
            "http://corp.example/npm/"
        );
        let env = |k: &str| match k {
            "npm_config_registry" => Some("http://env.example/".to_string()),
            "HOME" => Some(home_path.clone()),
            _ => None,
        };
        assert_eq!(registry_for("pkg", dir.path(), &env), "http://env.example/");
        // A scoped registry outranks the plain one for its scope.
        assert_eq!(
            registry_for("@corp/tool", dir.path(), &env),
            "http://corp.example/npm/"
        );
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
        assert_eq!(resolve(&p, "t", None).unwrap(), "1.0.1");
        assert_eq!(resolve(&p, "t", Some("1.0.0")).unwrap(), "1.0.0");
        assert!(
            resolve(&p, "t", Some("2.0.0"))
                .unwrap_err()
                .contains("not published")
        );
        assert!(
            resolve(&p, "t", Some("next"))
                .unwrap_err()
                .contains("no dist-tag")
        );
        assert!(resolve(&p, "t", Some("^1")).unwrap_err().contains("ranges"));
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
                .contains("versions")
        );
    }

    #[test]
    fn exact_versions_and_tags() {
        assert_eq!(exact_version("1.2.3"), Some("1.2.3"));
        assert_eq!(exact_version("=v1.2.3-rc.1"), Some("1.2.3-rc.1"));
        assert_eq!(exact_version("1.2"), None);
        assert_eq!(exact_version("^1.2.3"), None);
        assert!(is_tag("latest") && is_tag("next"));
        assert!(!is_tag("1.2.3") && !is_tag("^1") && !is_tag("1.x"));
    }
}

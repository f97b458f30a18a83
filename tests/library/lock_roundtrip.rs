//! The lock writer and reader agree on everything a server or config can send:
//! awkward names, args and definitions read back equal and re-render to the same bytes.

use std::collections::BTreeMap;

use mcp_lock::base::json::Json;
use mcp_lock::contract::hash::definition_hash;
use mcp_lock::records::lock::{
    Approval, LockedServer, LockedTool, Lockfile, PinnedServer, Reached, parse_lock, render_lock,
};

fn tool(definition: &str) -> (String, LockedTool) {
    let definition = Json::parse(definition).unwrap();
    let name = definition.get("name").and_then(Json::as_str).unwrap();
    let hash = definition_hash(&definition).unwrap();
    (
        name,
        LockedTool {
            hash,
            definition: definition.into(),
        },
    )
}

fn awkward_lock() -> Lockfile {
    let tools: BTreeMap<String, LockedTool> = [
        tool(r#"{"name":"quotes'''inside","description":"has ''' and \" and \\ and \u007f"}"#),
        tool(r#"{"name":"bidi","description":"admin\u202e\u2066 \u2028 line \u009b[2J \ud83d\ude00"}"#),
        tool(r#"{"name":"lone","description":"x\uDEADy","inputSchema":{"type":"object","properties":{"n":{"maximum":12345678901234567890,"minimum":1.0,"default":-0}}}}"#),
        tool(r#"{"name":"name with\nnewline\tand tab","inputSchema":{}}"#),
        tool(r#"{"name":"empty","inputSchema":{"type":"object","properties":{},"required":[]}}"#),
    ]
    .into_iter()
    .collect();
    let listing = |name: &str, profile: &str| LockedServer {
        name: name.into(),
        profile: profile.into(),
        reached: Reached::Stdio {
            command: "np\"x".into(),
            args: vec!["-y".into(), "${TOKEN}".into(), "a'b\\c\u{1b}".into()],
            env: vec!["NODE_OPTIONS".into(), "TOKEN".into()],
            code_env: vec![(
                "NODE_OPTIONS".into(),
                mcp_lock::servers::config::environ::code_env_pin("--require ./pre.js"),
            )],
        },
        protocol_version: "2025-11-25".into(),
        client_info: Json::parse(r#"{"name":"mcp-lock","version":"0.1.0"}"#).unwrap(),
        client_capabilities: Json::parse("{}").unwrap(),
        server_info: Json::parse(r#"{"name":"it's \u202e odd","version":"1"}"#).unwrap(),
        list_changed: true,
        instructions_hash: Some("a".repeat(64)),
        tools: tools.clone(),
        prompts: None,
        resource_templates: None,
        resources: None,
    };
    let mut lock = Lockfile::default();
    for name in [
        "plain",
        "with \"quotes\" and 'apostrophes'",
        "ünïcödé\u{2028}",
    ] {
        let mut pins = PinnedServer::single(listing(name, "bare"));
        // A second profile that sees one tool differently and one more: the shared
        // definitions are written once, the differing one twice.
        let mut other = listing(name, "my \"odd\" profile\u{202e}");
        other.client_capabilities = Json::parse(r#"{"roots":{"listChanged":true}}"#).unwrap();
        let (n, t) = tool(r#"{"name":"empty","description":"seen by the other profile"}"#);
        other.tools.insert(n, t);
        let (n, t) = tool(r#"{"name":"only-here","inputSchema":{}}"#);
        other.tools.insert(n, t);
        pins.profiles.insert(other.profile.clone(), other);
        // Each way an approval reads: recorded, and not (a server migrated from v6).
        pins.approved = match name {
            "plain" => Some(Approval::Terminal),
            "ünïcödé\u{2028}" => Some(Approval::UpgradePolicy),
            _ => None,
        };
        lock.servers.insert(name.into(), pins);
    }
    lock
}

#[test]
fn awkward_names_args_and_definitions_round_trip_exactly() {
    let lock = awkward_lock();
    let text = render_lock(&lock);
    let back = parse_lock(&text, "mcp.lock").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(render_lock(&back), text, "rendering is deterministic");
    for (name, pins) in &lock.servers {
        assert_eq!(back.servers[name].profiles.len(), 2);
        for (profile, server) in &pins.profiles {
            let read = &back.servers[name].profiles[profile];
            assert_eq!(read.reached, server.reached);
            assert_eq!(read.server_info.canonical(), server.server_info.canonical());
            assert_eq!(
                read.client_capabilities.canonical(),
                server.client_capabilities.canonical()
            );
            assert_eq!(read.tools.len(), server.tools.len());
            for (tool, pinned) in &server.tools {
                // Member order is not kept (the lock writes RFC 8785 order); the
                // canonical form, and so the hash, is.
                assert_eq!(
                    read.tools[tool].definition.canonical(),
                    pinned.definition.canonical()
                );
                assert_eq!(read.tools[tool].hash, pinned.hash);
            }
        }
    }
}

#[test]
fn a_definition_seen_under_several_profiles_is_written_once() {
    let text = render_lock(&awkward_lock());
    let server = text.split("\n[[server]]\n").nth(1).unwrap();
    // Five shared definitions, plus the other profile's "empty" and "only-here".
    assert_eq!(server.matches("\n[[server.tool]]\n").count(), 7, "{server}");
    assert_eq!(server.matches("\n[[server.profile]]\n").count(), 2);
}

#[test]
fn a_definition_naming_a_profile_the_lock_lacks_is_a_lock_error() {
    let text = render_lock(&awkward_lock());
    let text = text.replacen("profiles = [\"bare\"]", "profiles = [\"nobody\"]", 1);
    let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains("profile \"nobody\" has no [[server.profile]]"),
        "{err}"
    );
}

#[test]
fn a_version_1_lock_reads_as_pinned_under_bare() {
    let text = include_str!("../data/mcp.lock.v1");
    let lock = parse_lock(text, "mcp.lock").unwrap();
    let memory = &lock.servers["memory"];
    assert_eq!(memory.profiles.keys().collect::<Vec<_>>(), ["bare"]);
    assert_eq!(memory.profiles["bare"].tools.len(), 9);
    assert_eq!(
        memory.profiles["bare"]
            .client_capabilities
            .canonical()
            .unwrap(),
        "{}"
    );
    // Written again, it is a lock of the current version with the same pins (and, as
    // before, no package pin: that is `update`'s to add).
    let again = parse_lock(&render_lock(&lock), "mcp.lock").unwrap();
    assert_eq!(again, lock);
    assert!(render_lock(&lock).contains("\nversion = 8\n"));
    assert_eq!(memory.package, None);
}

#[test]
fn no_character_that_could_hide_or_reorder_text_is_written_raw() {
    let text = render_lock(&awkward_lock());
    for c in text.chars() {
        assert!(
            c == '\n' || !mcp_lock::base::text::is_unsafe(c),
            "raw {c:?} in the lock:\n{text}"
        );
    }
}

#[test]
fn a_repeated_member_in_a_recorded_json_field_is_a_lock_error() {
    let text = render_lock(&awkward_lock()).replacen(
        r#"server_info = "{\"name\":"#,
        r#"server_info = "{\"a\":1,\"a\":2,\"name\":"#,
        1,
    );
    let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains("server_info has repeated member name \"a\""),
        "{err}"
    );
}

#[test]
fn a_malformed_instructions_hash_is_a_lock_error() {
    let text = render_lock(&awkward_lock()).replacen(&"a".repeat(64), "not-a-hash", 1);
    let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains("instructions_hash is not 64 lowercase hex digits"),
        "{err}"
    );
}

#[test]
fn the_example_companion_holds_the_closure_the_example_lock_pins() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp.closure.lock.example");
    let closures = mcp_lock::records::lock::closures::read(&path).unwrap();
    let lock = parse_lock(include_str!("../../mcp.lock.example"), "mcp.lock.example").unwrap();
    let pin = lock.servers["memory"]
        .package
        .as_ref()
        .unwrap()
        .closure
        .as_ref()
        .unwrap();
    let closure = &closures["memory"];
    assert_eq!(closure.hash(), pin.hash);
    assert_eq!(closure.packages.len(), pin.count);
    assert!(
        closure
            .packages
            .iter()
            .any(|p| p.path == "node_modules/@modelcontextprotocol/sdk")
    );
}

#[test]
fn the_example_lock_is_a_valid_lock_pinning_server_memory() {
    let text = include_str!("../../mcp.lock.example");
    let lock = parse_lock(text, "mcp.lock.example").unwrap();
    let memory = &lock.servers["memory"];
    assert_eq!(memory.tool_names().len(), 9);
    let (comment, written) = text.split_once('\n').unwrap();
    assert!(comment.contains("@modelcontextprotocol/server-memory"));
    assert_eq!(
        render_lock(&lock),
        written,
        "the example is exactly what this writer writes"
    );
}

fn with_packages() -> Lockfile {
    use mcp_lock::servers::package::{Package, PackagePin};
    let base = awkward_lock();
    let template = base.servers.values().next().unwrap().clone();
    let packages = [
        (
            "npm",
            "npx",
            Package::Npm {
                name: "@scope/tiny-mcp".into(),
                version: "1.0.0".into(),
                integrity: format!("sha512-{}==", "AbC+/".repeat(17) + "x"),
            },
        ),
        (
            "pypi",
            "uvx",
            Package::Pypi {
                name: "tiny-py".into(),
                version: "2026.10.19".into(),
                files: [
                    (
                        "tiny_py-2026.10.19-py3-none-any.whl".to_string(),
                        "b".repeat(64),
                    ),
                    ("tiny_py-2026.10.19.tar.gz".to_string(), "c".repeat(64)),
                ]
                .into(),
            },
        ),
        (
            "oci",
            "docker run",
            Package::Oci {
                reference: format!("mcp/github@sha256:{}", "d".repeat(64)),
                digest: Some(format!("sha256:{}", "d".repeat(64))),
            },
        ),
        (
            "tag-only",
            "podman run",
            Package::Oci {
                reference: "mcp/github:1".into(),
                digest: None,
            },
        ),
        (
            "script",
            "node",
            Package::Script {
                path: "tools/server \"x\".js".into(),
                sha256: "e".repeat(64),
            },
        ),
        ("other", "sh", Package::Unrecognised),
    ];
    let mut lock = Lockfile::default();
    for (name, launcher, package) in packages {
        let mut server = template.clone();
        for profile in server.profiles.values_mut() {
            profile.name = name.into();
        }
        // npm and PyPI packages carry their closure's hash and count (format 5).
        let closure = matches!(package, Package::Npm { .. } | Package::Pypi { .. }).then(|| {
            mcp_lock::servers::package::closure::ClosurePin {
                hash: format!("sha256:{}", "c".repeat(64)),
                count: 3,
                closure: None,
            }
        });
        server.package = Some(PackagePin {
            launcher: launcher.into(),
            package,
            closure,
        });
        lock.servers.insert(name.into(), server);
    }
    lock
}

#[test]
fn every_package_kind_reads_back_equal_and_rewrites_byte_identically() {
    let lock = with_packages();
    let text = render_lock(&lock);
    assert!(text.contains("\n[server.package]\nkind = \"pypi\"\nlauncher = \"uvx\"\n"));
    assert!(text.contains("\n[[server.package.file]]\nname = \"tiny_py-2026.10.19.tar.gz\"\n"));
    assert!(text.contains(&format!(
        "\nclosure = \"sha256:{}\"\nclosure_packages = 3\n",
        "c".repeat(64)
    )));
    let again = parse_lock(&text, "mcp.lock").unwrap();
    for (name, server) in &lock.servers {
        assert_eq!(again.servers[name].package, server.package, "{name}");
    }
    assert_eq!(render_lock(&again), text);
}

#[test]
fn a_malformed_package_table_is_a_lock_error_naming_its_line() {
    let text = render_lock(&with_packages());
    for (from, to, message) in [
        (
            "kind = \"npm\"",
            "kind = \"cargo\"",
            "unknown kind \"cargo\"",
        ),
        (
            "integrity = \"sha512-",
            "integrity = \"abc",
            "is not a sha512 SRI hash",
        ),
        // A sha1 alone pins nothing npm checks.
        (
            "integrity = \"sha512-",
            "integrity = \"sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= x",
            "is not a sha512 SRI hash",
        ),
        // The guard launches `name@version`: an alias or path there would launch
        // another package.
        (
            "version = \"1.0.0\"\n",
            "version = \"npm:evil-pkg@6.6.6\"\n",
            "version \"npm:evil-pkg@6.6.6\" is not a semver version",
        ),
        (
            "version = \"2026.10.19\"\n",
            "version = \"99.0 @ file:///srv/evil.whl\"\n",
            "is not a PEP 440 version",
        ),
        (
            &format!("sha256 = \"{}\"", "e".repeat(64)),
            "sha256 = \"e\"",
            "sha256 is not 64 lowercase hex digits",
        ),
        ("version = \"1.0.0\"\n", "", "kind \"npm\" needs `version`"),
        (
            "launcher = \"uvx\"\n",
            "launcher = \"uvx\"\nextra = 1\n",
            "unknown field `extra`",
        ),
    ] {
        let bad = text.replacen(from, to, 1);
        assert_ne!(bad, text, "{from}");
        let err = parse_lock(&bad, "mcp.lock").unwrap_err().to_string();
        assert!(err.contains(message), "{from}: {err}");
        assert!(err.starts_with("mcp.lock:"), "{err}");
    }
    let twice = text.replacen(
        "tiny_py-2026.10.19.tar.gz",
        "tiny_py-2026.10.19-py3-none-any.whl",
        1,
    );
    let err = parse_lock(&twice, "mcp.lock").unwrap_err().to_string();
    assert!(err.contains("is listed twice"), "{err}");
}

#[test]
fn an_unresolved_package_round_trips_in_version_4_and_is_refused_in_version_3() {
    let text = render_lock(&with_packages());
    let unresolved = text.replacen(
        "kind = \"npm\"\nlauncher = \"npx\"\n",
        "kind = \"unresolved\"\nlauncher = \"npx\"\nreason = \"cannot reach the registry\"\n",
        1,
    );
    assert_ne!(unresolved, text, "{text}");
    let lock = parse_lock(
        &unresolved
            .replace("name = \"@scope/tiny-mcp\"\n", "")
            .replacen("version = \"1.0.0\"\n", "", 1)
            .replacen("integrity = \"sha512-AbC+/=\"\n", "", 1)
            .replacen(
                &format!(
                    "closure = \"sha256:{}\"\nclosure_packages = 3\n",
                    "c".repeat(64)
                ),
                "",
                1,
            ),
        "mcp.lock",
    );
    let lock = lock.unwrap_or_else(|e| panic!("{e}"));
    let pins: Vec<_> = lock
        .servers
        .values()
        .filter_map(|s| s.package.as_ref())
        .filter(|p| p.package.kind() == "unresolved")
        .collect();
    assert_eq!(pins.len(), 1, "{lock:?}");
    assert!(render_lock(&lock).contains("reason = \"cannot reach the registry\"\n"));
    // Version 3 has no such kind: refused, naming its line.
    // (`code_env` is version 6's and `approved` version 7's, left out to reach the
    // check of the kind.)
    let v3 = render_lock(&lock)
        .lines()
        .filter(|l| !l.starts_with("code_env = ") && !l.starts_with("approved = "))
        .map(|l| if l == "version = 8" { "version = 3" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let err = parse_lock(&v3, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.starts_with("mcp.lock:")
            && err.contains(
                "kind \"unresolved\" needs lock format version 4 (this lock says version 3)"
            ),
        "{err}"
    );
}

#[test]
fn code_env_round_trips_in_version_6_and_is_refused_in_an_older_lock() {
    let text = render_lock(&with_packages());
    assert!(
        text.contains("code_env = [\"NODE_OPTIONS=sha256:"),
        "{text}"
    );
    assert!(
        !text.contains("./pre.js"),
        "the value itself is never written"
    );
    let lock = parse_lock(&text, "mcp.lock").unwrap();
    assert_eq!(render_lock(&lock), text);
    let v5 = text
        .lines()
        .filter(|l| !l.starts_with("approved = "))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\nversion = 8\n", "\nversion = 5\n");
    let err = parse_lock(&v5, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.starts_with("mcp.lock:")
            && err.contains("`code_env` needs lock format version 6 (this lock says version 5)"),
        "{err}"
    );
    let bad = text.replace("NODE_OPTIONS=sha256:", "NODE_OPTIONS=sha1:");
    let err = parse_lock(&bad, "mcp.lock").unwrap_err().to_string();
    assert!(err.contains("is not NAME=sha256:"), "{err}");
}

#[test]
fn approvals_round_trip_in_version_7_beside_the_server_name() {
    let text = render_lock(&awkward_lock());
    assert!(
        text.contains("\n[[server]]\nname = \"plain\"\napproved = \"terminal\"\ntransport = "),
        "{text}"
    );
    assert!(text.contains("\napproved = \"upgrade-policy\"\n"), "{text}");
    // Not recorded: no key at all, never an empty one.
    assert_eq!(text.matches("\napproved = ").count(), 2, "{text}");
    let lock = parse_lock(&text, "mcp.lock").unwrap();
    assert_eq!(lock.servers["plain"].approved, Some(Approval::Terminal));
    assert_eq!(
        lock.servers["with \"quotes\" and 'apostrophes'"].approved,
        None
    );
    assert_eq!(render_lock(&lock), text, "byte-stable");
    // The reader of the writer's own layout reads the key, as the TOML reader does.
    let example = include_str!("../../mcp.lock.example").replacen(
        "\napproved = \"yes\"\n",
        "\napproved = \"upgrade-yes\"\n",
        1,
    );
    let (layout, toml) = mcp_lock::records::lock::layout_and_toml_readings(&example)
        .expect("the layout reader reads a lock with approvals");
    assert_eq!(Some(layout), toml);
    let read = parse_lock(&example, "mcp.lock").unwrap();
    assert_eq!(read.servers["memory"].approved, Some(Approval::UpgradeYes));
    for how in Approval::ALL {
        assert_eq!(Approval::parse(how.as_str()), Some(how));
    }
}

#[test]
fn a_version_6_lock_reads_with_every_approval_not_recorded_and_is_written_as_version_7() {
    let text = render_lock(&awkward_lock());
    let v6: String = text
        .lines()
        .filter(|l| !l.starts_with("approved = "))
        .map(|l| if l == "version = 8" { "version = 6" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let lock = parse_lock(&v6, "mcp.lock").unwrap();
    assert!(lock.servers.values().all(|s| s.approved.is_none()));
    let rewritten = render_lock(&lock);
    assert!(rewritten.contains("\nversion = 8\n"));
    assert!(!rewritten.contains("approved"), "{rewritten}");
}

#[test]
fn an_approval_in_an_older_lock_or_of_an_unknown_kind_is_refused_naming_its_line() {
    let text = render_lock(&awkward_lock());
    let v6 = text.replace("\nversion = 8\n", "\nversion = 6\n");
    let err = parse_lock(&v6, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.starts_with("mcp.lock:")
            && err.contains("`approved` needs lock format version 7 (this lock says version 6)"),
        "{err}"
    );
    let odd = text.replace("approved = \"terminal\"", "approved = \"alice\"");
    let err = parse_lock(&odd, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains("`approved` \"alice\" is not one of terminal, yes, policy"),
        "{err}"
    );
    // A pull request's approval came with version 8: a version-7 lock cannot hold it,
    // and a version-8 one reads it.
    let by_pr = text.replace("approved = \"terminal\"", "approved = \"pull-request\"");
    assert_eq!(
        parse_lock(&by_pr, "mcp.lock").unwrap().servers["plain"].approved,
        Some(Approval::PullRequest)
    );
    let v7 = by_pr.replace("\nversion = 8\n", "\nversion = 7\n");
    let err = parse_lock(&v7, "mcp.lock").unwrap_err().to_string();
    assert!(
        err.contains(
            "`approved = \"pull-request\"` needs lock format version 8 (this lock says version 7)"
        ),
        "{err}"
    );
    // A version-7 lock with the approvals version 7 knows still reads.
    let v7 = text.replace("\nversion = 8\n", "\nversion = 7\n");
    assert!(parse_lock(&v7, "mcp.lock").is_ok());
}

use super::*;

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn of(line: &str) -> Recognised {
    let mut w = words(line);
    let command = w.remove(0);
    recognise(&command, &w, &|p| p.ends_with(".sh"))
}

fn npm(name: &str, spec: Option<&str>) -> Target {
    Target::Npm {
        name: name.into(),
        spec: spec.map(String::from),
    }
}

fn pypi(name: &str, spec: Option<&str>) -> Target {
    Target::Pypi {
        name: name.into(),
        spec: spec.map(String::from),
    }
}

#[test]
fn npx_with_and_without_yes_and_a_version() {
    let r = of("npx -y @modelcontextprotocol/server-memory");
    assert_eq!(r.launcher, "npx");
    assert_eq!(r.target, npm("@modelcontextprotocol/server-memory", None));
    assert_eq!(r.arg, Some(1));
    assert_eq!(
        of("npx tiny-mcp@1.0.0 --flag").target,
        npm("tiny-mcp", Some("1.0.0"))
    );
    assert_eq!(
        of("npx --yes @scope/pkg@^2 serve").target,
        npm("@scope/pkg", Some("^2"))
    );
}

#[test]
fn npx_package_option_names_the_package_not_the_command() {
    let r = of("npx -y --package=@scope/pkg@1.2.3 pkg-bin --stdio");
    assert_eq!(r.target, npm("@scope/pkg", Some("1.2.3")));
    assert_eq!((r.arg, r.prefix.as_str()), (Some(1), "--package="));
    let r = of("npx -p tiny-mcp tiny");
    assert_eq!((r.target, r.arg), (npm("tiny-mcp", None), Some(1)));
}

#[test]
fn npm_exec_pnpm_yarn_dlx_and_bunx() {
    assert_eq!(
        of("npm exec -y -- tiny-mcp@1").target,
        npm("tiny-mcp", Some("1"))
    );
    assert_eq!(of("npm exec tiny-mcp").launcher, "npm exec");
    assert_eq!(of("pnpm dlx tiny-mcp").launcher, "pnpm dlx");
    assert_eq!(
        of("yarn dlx tiny-mcp@latest").target,
        npm("tiny-mcp", Some("latest"))
    );
    let r = of("bunx tiny-mcp@2.0.0");
    assert_eq!(
        (r.launcher.as_str(), r.target),
        ("bunx", npm("tiny-mcp", Some("2.0.0")))
    );
}

#[test]
fn uvx_uv_tool_run_and_pipx_run() {
    let r = of("uvx mcp-server-git --repository .");
    assert_eq!((r.target, r.arg), (pypi("mcp-server-git", None), Some(0)));
    assert_eq!(
        of("uvx mcp-server-git==2026.10.19").target,
        pypi("mcp-server-git", Some("==2026.10.19"))
    );
    assert_eq!(
        of("uvx mcp-server-git@2026.10.19").target,
        pypi("mcp-server-git", Some("@2026.10.19"))
    );
    // uv's own `@latest`, also as the value of `--from`.
    assert_eq!(
        of("uvx awslabs.aws-documentation-mcp-server@latest").target,
        pypi("awslabs.aws-documentation-mcp-server", Some("@latest"))
    );
    let r = of("uvx --from mcp-server-time@latest mcp-server-time");
    assert_eq!(
        (r.target, r.arg),
        (pypi("mcp-server-time", Some("@latest")), Some(1))
    );
    let r = of("uvx --from mcp-server-time==1.0 mcp-server-time --local-timezone UTC");
    assert_eq!(
        (r.target, r.arg),
        (pypi("mcp-server-time", Some("==1.0")), Some(1))
    );
    let r = of("uv tool run --python 3.12 pkg[cli]>=2");
    assert_eq!(
        (r.launcher.as_str(), r.target),
        ("uv tool run", pypi("pkg", Some(">=2")))
    );
    let r = of("pipx run --spec tiny-py==1.0.0 tiny");
    assert_eq!(
        (r.launcher.as_str(), r.target),
        ("pipx run", pypi("tiny-py", Some("==1.0.0")))
    );
    assert_eq!(of("pipx run tiny-py").target, pypi("tiny-py", None));
}

#[test]
fn docker_and_podman_run_find_the_image_after_the_options() {
    let r = of("docker run -i --rm -e GITHUB_TOKEN mcp/github");
    assert_eq!(r.launcher, "docker run");
    assert_eq!(
        r.target,
        Target::Oci {
            reference: "mcp/github".into()
        }
    );
    let digest = format!("ghcr.io/o/img:1@sha256:{}", "a".repeat(64));
    let r = of(&format!(
        "podman run --rm -v /a:/b --network=host {digest} serve"
    ));
    assert_eq!(r.target, Target::Oci { reference: digest });
}

#[test]
fn local_scripts_by_interpreter_and_by_path() {
    let script = |path: &str| Target::Script { path: path.into() };
    assert_eq!(
        of("node --enable-source-maps server.js").target,
        script("server.js")
    );
    assert_eq!(
        of("python3 -u tools/server.py --x").target,
        script("tools/server.py")
    );
    assert_eq!(
        of("deno run --allow-read main.ts").target,
        script("main.ts")
    );
    assert_eq!(of("bun run index.ts").target, script("index.ts"));
    assert_eq!(of("bun index.ts").target, script("index.ts"));
    let r = of("./bin/server.sh --stdio");
    assert_eq!(
        (r.launcher.as_str(), r.target),
        ("path", script("./bin/server.sh"))
    );
}

#[test]
fn anything_else_is_not_recognised() {
    for line in [
        "my-server --stdio",
        "python -m mcp_server_time",
        "node -e console.log(1)",
        "npx",
        "npx ./local-dir",
        "npx github:owner/repo",
        "uvx ./path/to/pkg",
        "docker ps",
        "./missing/server",
    ] {
        let r = of(line);
        assert_eq!(r.target, Target::Unrecognised, "{line}");
        assert_eq!(r.launcher, words(line)[0], "{line}");
    }
}

#[test]
fn npm_spec_splitting() {
    assert_eq!(
        split_npm_spec("@a/b@1.0.0"),
        Some(("@a/b".into(), Some("1.0.0".into())))
    );
    assert_eq!(split_npm_spec("@a/b"), Some(("@a/b".into(), None)));
    assert_eq!(
        split_npm_spec("pkg@next"),
        Some(("pkg".into(), Some("next".into())))
    );
    assert_eq!(split_npm_spec("pkg@"), None);
    assert_eq!(split_npm_spec("@a"), None);
    assert_eq!(split_npm_spec("a/b/c"), None);
    assert_eq!(split_npm_spec("alias@npm:other@1"), None);
}

#[test]
fn pypi_spec_splitting() {
    assert_eq!(
        split_pypi_spec("Mcp_Server.x==1.2"),
        Some(("Mcp_Server.x".into(), Some("==1.2".into())))
    );
    assert_eq!(
        split_pypi_spec("pkg[a,b]@3"),
        Some(("pkg".into(), Some("@3".into())))
    );
    assert_eq!(
        split_pypi_spec("pkg@latest"),
        Some(("pkg".into(), Some("@latest".into())))
    );
    // Any other `@` is a direct reference uv reads as a path: not a registry spec.
    assert_eq!(split_pypi_spec("pkg@next"), None);
    assert_eq!(
        split_pypi_spec("pkg~=1.0"),
        Some(("pkg".into(), Some("~=1.0".into())))
    );
    assert_eq!(split_pypi_spec("pkg @ https://x/y.whl"), None);
    assert_eq!(split_pypi_spec("pkg-"), None);
    assert_eq!(split_pypi_spec("pkg+local"), None);
}

/// The forms of issue 26: each pinned a decoy while the runner ran something else.
#[test]
fn an_option_is_read_as_its_runner_reads_it_and_an_unknown_one_is_never_guessed() {
    let digest = format!("mcp/github@sha256:{}", "a".repeat(64));
    // An option that takes a value takes the next word.
    let r = of("npx -y --globalconfig tiny-mcp evil-pkg");
    assert_eq!(r.target, Target::Unrecognised);
    assert!(r.note.unwrap().contains("`--globalconfig`"));
    assert_eq!(
        of("npx -y --cache ./npm-cache tiny-mcp").target,
        npm("tiny-mcp", None)
    );
    assert_eq!(
        of("uvx --refresh-package tiny-py evil").target,
        pypi("evil", None)
    );
    let r = of(&format!(
        "docker run -i --rm --health-cmd {digest} evil/image:latest"
    ));
    assert_eq!(
        r.target,
        Target::Oci {
            reference: "evil/image:latest".into()
        }
    );
    // Code given as an argument is no script, in every spelling.
    for line in [
        "node --eval=CODE s.js",
        "node -e CODE s.js",
        "node -pe CODE s.js",
        "python3 -cCODE s.py",
        "python3 -uc CODE s.py",
        "python3 -mmodule s.py",
        "python3 - s.py",
    ] {
        let r = of(line);
        assert_eq!(r.target, Target::Unrecognised, "{line}");
        assert!(r.note.is_some(), "{line}");
    }
    // Attached values take nothing more; a cluster's value is the rest of it.
    assert_eq!(
        of("python3 -Wignore -X dev -W=x s.py").target,
        Target::Script {
            path: "s.py".into()
        }
    );
    assert_eq!(
        of("python3 -uW ignore s.py").target,
        Target::Script {
            path: "s.py".into()
        }
    );
    assert_eq!(
        of("docker run -it -eFOO=1 -e=BAR --env=X img:1 serve").target,
        Target::Oci {
            reference: "img:1".into()
        }
    );
    assert_eq!(
        of("docker run -ite FOO img:1").target,
        Target::Oci {
            reference: "img:1".into()
        }
    );
    assert_eq!(
        of("node --title srv --inspect server.js").target,
        Target::Script {
            path: "server.js".into()
        }
    );
    assert_eq!(
        of("uvx -p3.12 --python=3.12 -qq tiny-py").target,
        pypi("tiny-py", None)
    );
    // Options a table does not hold, and ones whose effect is not followed.
    for line in [
        "npx --frobnicate tiny-mcp",
        "npx -yq tiny-mcp",
        "npx -c 'evil' tiny-mcp",
        "npx --userconfig ./rc tiny-mcp",
        "npx -p a -p b cmd",
        "npm exec tiny-mcp --stdio",
        "uvx --find-links ./wheels tiny-py",
        "uvx --index http://127.0.0.1:1/ tiny-py",
        "uvx -qZ tiny-py",
        "pipx run --pip-args=--index-url=x tiny-py",
        "docker run --frobnicate img",
        "node -r./x.js server.js",
        "node --require ./pre.js server.js",
        "node --import=./pre.mjs server.js",
        "uvx --with evil-extra tiny-py",
        "uvx --config-file ./uv.toml tiny-py",
        "node --max-old-space-size server.js",
        "deno run npm:evil",
        "deno run https://example.com/x.ts",
    ] {
        let r = of(line);
        assert_eq!(r.target, Target::Unrecognised, "{line}");
        assert!(r.note.is_some(), "{line}: a note says why");
    }
    // Options that load code or pick the interpreter (issue 40): the option named.
    for (line, option) in [
        (
            "npx --node-options=--require=./x.js -y tiny-mcp",
            "--node-options",
        ),
        ("npx -y --node-options --require tiny-mcp", "--node-options"),
        ("npx --script-shell ./sh -y tiny-mcp", "--script-shell"),
        ("npx --prefix ./vendor -y tiny-mcp", "--prefix"),
        ("npm exec --node-gyp ./gyp tiny-mcp", "--node-gyp"),
        ("uvx --python ./evilpy tiny-py", "--python ./evilpy"),
        ("uvx -p evilpy tiny-py", "-p evilpy"),
        (
            "uvx --python=/tmp/py/bin/python tiny-py",
            "--python /tmp/py/bin/python",
        ),
        ("uv tool run -p./py tiny-py", "-p ./py"),
        ("uvx --env-file .env tiny-py", "--env-file"),
        ("pipx run --python ./py tiny-py", "--python ./py"),
        ("node --env-file=.env server.js", "--env-file"),
        (
            "node --openssl-config ./o.cnf server.js",
            "--openssl-config",
        ),
        ("node --snapshot-blob ./s.blob server.js", "--snapshot-blob"),
        ("deno run --import-map=./m.json main.ts", "--import-map"),
        ("bun --config ./bunfig.toml index.ts", "--config"),
    ] {
        let r = of(line);
        assert_eq!(r.target, Target::Unrecognised, "{line}");
        let note = r.note.unwrap_or_default();
        assert!(note.contains(&format!("`{option}")), "{line}: {note}");
    }
    // A version request picks no file: the package is still the one pinned.
    for line in [
        "uvx --python 3.12 tiny-py",
        "uvx -p cpython@3.12.1 tiny-py",
        "uvx --python=>=3.11,<3.13 tiny-py",
        "uvx -p pypy3.10 tiny-py",
        "uvx -p 3.13t tiny-py",
        "pipx run --python 3.12 tiny-py",
    ] {
        assert_eq!(of(line).target, pypi("tiny-py", None), "{line}");
    }
    // `npm exec` reads options after the package too; `-p` is --parseable there.
    let r = of("npm exec -p tiny-mcp --registry http://127.0.0.1:1 -- --stdio");
    assert_eq!(r.target, npm("tiny-mcp", None));
    assert_eq!(r.registry.as_deref(), Some("http://127.0.0.1:1/"));
}

#[test]
fn registry_and_index_arguments_are_what_the_pin_resolves_from() {
    let r = of("npx --registry=http://127.0.0.1:1/npm -y tiny-mcp");
    assert_eq!(r.registry.as_deref(), Some("http://127.0.0.1:1/npm/"));
    assert_eq!(
        of("npx --registry http://127.0.0.1:1/ tiny-mcp")
            .registry
            .as_deref(),
        Some("http://127.0.0.1:1/")
    );
    for line in [
        "uvx --index-url http://127.0.0.1:2/simple tiny-py",
        "uvx --default-index=http://127.0.0.1:2/simple tiny-py",
        "uvx -ihttp://127.0.0.1:2/simple tiny-py",
        "pipx run -i http://127.0.0.1:2/simple tiny-py",
    ] {
        assert_eq!(
            of(line).registry.as_deref(),
            Some("http://127.0.0.1:2/simple/"),
            "{line}"
        );
    }
    assert_eq!(of("npx -y tiny-mcp").registry, None);
}

#[test]
fn package_options_keep_their_prefix_for_the_guard() {
    let r = of("uvx --from=tiny-py==1.0 tiny");
    assert_eq!((r.arg, r.prefix.as_str()), (Some(0), "--from="));
    let r = of("npx -p=tiny-mcp tiny");
    assert_eq!((r.arg, r.prefix.as_str()), (Some(0), "-p="));
    let r = of("pipx run --spec tiny-py tiny");
    assert_eq!((r.arg, r.prefix.as_str()), (Some(2), ""));
}

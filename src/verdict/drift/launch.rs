//! How a server is launched against how the lock pinned it: which differences are
//! another server (`launch-changed`, judged by the policy) and which are a note.
//!
//! A remote entry's origin (scheme, host, port) names who receives its headers and
//! answers its calls; an unrecognised stdio launch has no package pin, so its command
//! and `-m` module are all that says which code runs; a stdio entry's code-loading
//! variables (`NODE_OPTIONS`, `PYTHONPATH`, …) decide which code its runtime loads
//! beside the pinned package. Anything else (a path within one origin, an argument,
//! another env name) stays a note.

use super::ServerChange;
use crate::records::lock::Reached;
use crate::servers::package::{Target, recognise};

/// The rule a moved launch falls under (see `Rule::LaunchChanged`).
pub const LAUNCH_CHANGED: &str = "launch-changed";

/// The `launch` change between the pinned launch and the one used now, if they
/// differ: a drift under [`LAUNCH_CHANGED`] when [`launch_moved`], else a note.
pub fn launch_change(pinned: &Reached, now: &Reached) -> Option<ServerChange> {
    if pinned == now {
        return None;
    }
    let moved = launch_moved(pinned, now);
    Some(ServerChange {
        field: "launch",
        pinned: Some(pinned.to_string()),
        live: Some(now.to_string()),
        drift: moved,
        class: None,
        rule: moved.then_some(LAUNCH_CHANGED),
        action: None,
    })
}

/// Whether `now` may reach another server than the one pinned: a remote entry whose
/// origin changed, a stdio entry become remote (or back), a stdio entry whose
/// code-loading variables (`NODE_OPTIONS`, `PYTHONPATH`, `LD_PRELOAD`, …: see
/// [`crate::servers::config::environ::loads_code`]) are not the pinned ones, or an
/// unrecognised stdio launch whose command or module changed.
pub fn launch_moved(pinned: &Reached, now: &Reached) -> bool {
    match (pinned, now) {
        (Reached::Remote { url: a, .. }, Reached::Remote { url: b, .. }) => origin(a) != origin(b),
        (
            Reached::Stdio {
                command: c1,
                args: a1,
                code_env: e1,
                ..
            },
            Reached::Stdio {
                command: c2,
                args: a2,
                code_env: e2,
                ..
            },
        ) => {
            // A variable that decides which code runs, set, removed or changed: the
            // same package may load other code (`NODE_OPTIONS=--require ./x.js`).
            if e1 != e2 {
                return true;
            }
            let unrecognised = |command: &str, args: &[String]| {
                // Unexpanded, as the lock records it: no file is looked for.
                recognise(command, args, &|_| false).target == Target::Unrecognised
            };
            unrecognised(c1, a1) && unrecognised(c2, a2) && (c1 != c2 || module(a1) != module(a2))
        }
        _ => true,
    }
}

/// `(scheme, host, port)` of a URL, lowercased, the port defaulted by scheme; a value
/// that is no URL (an unexpanded variable, say) is its own origin.
pub fn origin(url: &str) -> (String, String, String) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (String::new(), url.to_string(), String::new());
    };
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // A bracketed IPv6 host keeps its colons.
    let (host, port) = match host_port.rfind(':') {
        Some(i) if !host_port[i..].contains(']') => (&host_port[..i], &host_port[i + 1..]),
        _ => (host_port, ""),
    };
    let port = match (port, scheme.as_str()) {
        ("", "http") => "80",
        ("", "https") => "443",
        (p, _) => p,
    };
    (scheme, host.to_ascii_lowercase(), port.to_string())
}

/// The module a `-m` option names (`python3 -m pkg`, `-mpkg`), if any.
fn module(args: &[String]) -> Option<&str> {
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "-m" {
            return it.next().map(String::as_str);
        }
        if let Some(m) = arg.strip_prefix("-m").filter(|m| !m.is_empty()) {
            return Some(m);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str) -> Reached {
        Reached::Remote {
            kind: "streamable-http".into(),
            url: url.into(),
            headers: vec!["Authorization".into()],
            oauth_issuer: None,
        }
    }

    fn stdio(line: &str) -> Reached {
        let mut words = line.split_whitespace().map(String::from);
        Reached::Stdio {
            command: words.next().unwrap(),
            args: words.collect(),
            env: Vec::new(),
            code_env: Vec::new(),
        }
    }

    #[test]
    fn a_remote_entry_moved_to_another_origin_is_launch_changed_a_path_is_a_note() {
        let pinned = remote("https://api.example.com/mcp");
        for other in [
            "https://mirror.example.net/mcp",
            "http://api.example.com/mcp",
            "https://api.example.com:8443/mcp",
        ] {
            let change = launch_change(&pinned, &remote(other)).unwrap();
            assert!(change.drift, "{other}");
            assert_eq!(change.rule, Some(LAUNCH_CHANGED));
        }
        for same in [
            "https://api.example.com/v2/mcp",
            "https://API.example.com:443/mcp",
        ] {
            let change = launch_change(&pinned, &remote(same)).unwrap();
            assert!(!change.drift && change.rule.is_none(), "{same}");
        }
        assert!(launch_change(&pinned, &pinned).is_none());
        assert_eq!(
            origin("http://u:p@[::1]:8080/x"),
            ("http".into(), "[::1]".into(), "8080".into())
        );
    }

    #[test]
    fn an_unrecognised_launch_with_another_command_or_module_is_launch_changed() {
        let pinned = stdio("python3 -m goodsrv --port 1");
        assert!(launch_moved(&pinned, &stdio("python3 -m evilsrv --port 1")));
        assert!(launch_moved(&pinned, &stdio("python3 -mevilsrv")));
        assert!(launch_moved(
            &stdio("mytool serve"),
            &stdio("othertool serve")
        ));
        assert!(!launch_moved(
            &pinned,
            &stdio("python3 -m goodsrv --port 2")
        ));
        // A recognised launch is judged by its package pin instead.
        assert!(!launch_moved(&stdio("npx -y a"), &stdio("npx -y b")));
        assert!(launch_moved(&pinned, &remote("https://x.example/mcp")));
    }

    #[test]
    fn a_code_loading_variable_added_or_changed_is_launch_changed() {
        let with = |value: Option<&str>| match stdio("npx -y tiny-mcp@1.0.0") {
            Reached::Stdio { command, args, .. } => Reached::Stdio {
                command,
                args,
                env: value
                    .map(|_| "NODE_OPTIONS".to_string())
                    .into_iter()
                    .collect(),
                code_env: value
                    .map(|v| {
                        (
                            "NODE_OPTIONS".to_string(),
                            crate::servers::config::environ::code_env_pin(v),
                        )
                    })
                    .into_iter()
                    .collect(),
            },
            remote => remote,
        };
        let pinned = with(None);
        let change = launch_change(&pinned, &with(Some("--require ./x.js"))).unwrap();
        assert!(change.drift);
        assert_eq!(change.rule, Some(LAUNCH_CHANGED));
        assert!(launch_moved(
            &with(Some("--max-old-space-size=512")),
            &with(Some("--require ./x.js"))
        ));
        assert!(!launch_moved(&with(Some("a")), &with(Some("a"))));
    }
}

use super::*;

const DAY: u64 = 86_400;

/// Now, for every test: 2026-06-01T00:00:00Z.
fn now() -> SystemTime {
    parse_time("2026-06-01T00:00:00Z").unwrap()
}

fn days_ago(days: u64) -> Option<SystemTime> {
    Some(now() - Duration::from_secs(days * DAY))
}

fn release(version: &str, published: Option<SystemTime>) -> Release {
    Release {
        published,
        ..Release::new(version)
    }
}

fn npm(releases: Vec<Release>) -> Releases {
    Releases {
        name: "tiny-mcp".into(),
        ecosystem: Ecosystem::Npm,
        releases,
    }
}

fn week() -> Duration {
    Duration::from_secs(7 * DAY)
}

fn newest(releases: &Releases, pinned: &str, age: Duration) -> Outlook {
    candidate(releases, pinned, Want::Newest, age, now()).unwrap()
}

fn versions(held: &[HeldBack]) -> Vec<&str> {
    held.iter().map(|h| h.release.version.as_str()).collect()
}

#[test]
fn the_newest_release_older_than_the_cooldown_is_the_candidate_and_newer_ones_are_held_back() {
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.1.0", days_ago(30)),
        release("1.2.0", days_ago(8)),
        release("1.3.0", days_ago(2)),
        release("1.4.0", None),
    ]);
    let o = newest(&r, "1.0.0", week());
    assert_eq!(o.pinned.as_ref().unwrap().version, "1.0.0");
    assert_eq!(o.candidate.unwrap().version, "1.2.0");
    assert_eq!(versions(&o.held_back), ["1.4.0", "1.3.0"]);
    assert_eq!(o.held_back[0].hold, Hold::TimeUnknown);
    assert_eq!(
        o.held_back[1].hold,
        Hold::Cooldown {
            age: Duration::from_secs(2 * DAY)
        }
    );
    assert_eq!(o.held_back[1].hold.to_string(), "2d old");
    assert_eq!(o.held_back[0].hold.to_string(), "release time unknown");
}

#[test]
fn a_release_exactly_as_old_as_the_cooldown_passes_it_and_one_a_second_younger_does_not() {
    let exactly = now() - week();
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.0.1", Some(exactly)),
    ]);
    assert_eq!(
        newest(&r, "1.0.0", week()).candidate.unwrap().version,
        "1.0.1"
    );
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.0.1", Some(exactly + Duration::from_secs(1))),
    ]);
    let o = newest(&r, "1.0.0", week());
    assert_eq!(o.candidate, None);
    assert_eq!(
        o.held_back[0].hold,
        Hold::Cooldown {
            age: week() - Duration::from_secs(1)
        }
    );
    // A publish time in the future (a skewed clock) is no age at all.
    let r = npm(vec![release(
        "1.0.1",
        Some(now() + Duration::from_secs(60)),
    )]);
    assert_eq!(
        newest(&r, "1.0.0", week()).held_back[0].hold,
        Hold::Cooldown {
            age: Duration::ZERO
        }
    );
}

#[test]
fn with_no_cooldown_the_newest_is_the_candidate_even_with_its_time_unknown() {
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.0.1", Some(now())),
        release("1.0.2", None),
    ]);
    let o = newest(&r, "1.0.0", Duration::ZERO);
    assert_eq!(o.candidate.unwrap().version, "1.0.2");
    assert!(o.held_back.is_empty());
}

#[test]
fn deprecated_and_yanked_releases_are_never_proposed_but_are_listed_as_withdrawn() {
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.1.0", days_ago(50)),
        Release {
            deprecated: Some("broken, use 1.1.0".into()),
            ..release("1.2.0", days_ago(40))
        },
        Release {
            deprecated: Some("also broken".into()),
            ..release("1.3.0", days_ago(1))
        },
    ]);
    let o = newest(&r, "1.0.0", week());
    assert_eq!(o.candidate.unwrap().version, "1.1.0");
    assert_eq!(o.withdrawn.len(), 1);
    assert_eq!(o.withdrawn[0].version, "1.2.0");
    assert_eq!(
        o.withdrawn[0].deprecated.as_deref(),
        Some("broken, use 1.1.0")
    );
    // Too new and deprecated: held back, its flag shown.
    assert_eq!(versions(&o.held_back), ["1.3.0"]);
    assert!(o.held_back[0].release.deprecated.is_some());

    let yanked = Releases {
        name: "tiny-py".into(),
        ecosystem: Ecosystem::Pypi,
        releases: vec![
            release("1.0", days_ago(100)),
            Release {
                yanked: Some(String::new()),
                ..release("1.1", days_ago(50))
            },
        ],
    };
    let o = newest(&yanked, "1.0", week());
    assert_eq!(o.candidate, None);
    assert_eq!(o.withdrawn[0].yanked.as_deref(), Some(""));
}

#[test]
fn the_flags_of_the_pinned_release_are_reported() {
    let r = npm(vec![Release {
        deprecated: Some("security hole".into()),
        ..release("1.0.0", days_ago(100))
    }]);
    let o = newest(&r, "1.0.0", week());
    assert_eq!(
        o.pinned.unwrap().deprecated.as_deref(),
        Some("security hole")
    );
    assert_eq!(o.candidate, None);
}

#[test]
fn prereleases_are_proposed_only_for_a_prerelease_pin() {
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.1.0-rc.1", days_ago(50)),
        release("1.1.0-rc.2", days_ago(40)),
        release("1.0.1", days_ago(30)),
    ]);
    assert_eq!(
        newest(&r, "1.0.0", week()).candidate.unwrap().version,
        "1.0.1"
    );
    assert_eq!(
        newest(&r, "1.1.0-rc.1", week()).candidate.unwrap().version,
        "1.1.0-rc.2"
    );
    let py = Releases {
        name: "tiny-py".into(),
        ecosystem: Ecosystem::Pypi,
        releases: vec![
            release("1.0", days_ago(100)),
            release("1.1rc1", days_ago(50)),
            release("1.1.dev3", days_ago(50)),
        ],
    };
    assert_eq!(newest(&py, "1.0", week()).candidate, None);
    assert_eq!(
        newest(&py, "1.1.dev1", week()).candidate.unwrap().version,
        "1.1rc1"
    );
}

#[test]
fn a_pin_already_the_newest_has_no_candidate() {
    let r = npm(vec![
        release("0.9.0", days_ago(200)),
        release("1.0.0", days_ago(100)),
    ]);
    let o = newest(&r, "1.0.0", week());
    assert_eq!(o.candidate, None);
    assert!(o.held_back.is_empty() && o.withdrawn.is_empty());
    assert!(o.pinned.is_some());
}

#[test]
fn a_pin_the_registry_no_longer_lists_still_gets_a_candidate() {
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        release("1.2.0", days_ago(30)),
    ]);
    let o = newest(&r, "1.1.0", week());
    assert_eq!(o.pinned, None);
    assert_eq!(o.candidate.unwrap().version, "1.2.0");
}

#[test]
fn a_named_version_must_be_listed_and_old_enough_and_may_be_deprecated() {
    let r = npm(vec![
        release("1.0.0", days_ago(100)),
        Release {
            deprecated: Some("do not".into()),
            ..release("1.1.0", days_ago(50))
        },
        release("1.2.0-beta.1", days_ago(40)),
        release("1.3.0", days_ago(1)),
        release("1.4.0", days_ago(0)),
    ]);
    let o = candidate(&r, "1.0.0", Want::Exactly("1.1.0"), week(), now()).unwrap();
    let c = o.candidate.unwrap();
    assert_eq!(c.deprecated.as_deref(), Some("do not"));
    assert_eq!(versions(&o.held_back), ["1.4.0", "1.3.0"]);
    let o = candidate(&r, "1.0.0", Want::Exactly("1.2.0-beta.1"), week(), now()).unwrap();
    assert_eq!(o.candidate.unwrap().version, "1.2.0-beta.1");
    let err = candidate(&r, "1.0.0", Want::Exactly("9.9.9"), week(), now()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tiny-mcp 9.9.9 is not listed on the registry"
    );
    let err = candidate(&r, "1.0.0", Want::Exactly("1.3.0"), week(), now()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tiny-mcp 1.3.0 is held back by the cooldown of 7d (1d old); pass --min-release-age 0 to take it anyway"
    );
    let o = candidate(&r, "1.0.0", Want::Exactly("1.3.0"), Duration::ZERO, now()).unwrap();
    assert_eq!(o.candidate.unwrap().version, "1.3.0");
    let py = Releases {
        name: "tiny-py".into(),
        ecosystem: Ecosystem::Pypi,
        releases: vec![release("1.0.0", days_ago(100))],
    };
    let o = candidate(&py, "0.9", Want::Exactly("1.0"), week(), now()).unwrap();
    assert_eq!(o.candidate.unwrap().version, "1.0.0", "1.0 names 1.0.0");
}

#[test]
fn a_full_packument_gives_times_and_deprecations() {
    let body = r#"{"name":"tiny-mcp","dist-tags":{"latest":"1.1.0"},
            "time":{"created":"2026-01-01T00:00:00.000Z","modified":"2026-02-01T00:00:00.000Z",
                "1.0.0":"2026-01-01T00:00:00.000Z","1.1.0":"2026-01-15T12:30:00.500Z","0.1.0":"2025-01-01T00:00:00Z"},
            "versions":{"1.0.0":{"deprecated":"old"},"1.1.0":{"deprecated":""},"1.2.0":{},
                "npm:evil@6.6.6":{}}}"#;
    let r = parse_npm(body, "tiny-mcp").unwrap();
    let got: Vec<(&str, Option<String>, Option<&str>)> = r
        .releases
        .iter()
        .map(|r| {
            (
                r.version.as_str(),
                r.published.map(format_time),
                r.deprecated.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("1.0.0", Some("2026-01-01T00:00:00Z".into()), Some("old")),
            ("1.1.0", Some("2026-01-15T12:30:00Z".into()), None),
            ("1.2.0", None, None),
        ]
    );
    assert!(parse_npm("<html>", "x").unwrap_err().contains("not JSON"));
    assert!(
        parse_npm(r#"{"versions":[]}"#, "x")
            .unwrap_err()
            .contains("not a packument")
    );
    assert!(
        parse_npm(r#"{"time":{}}"#, "x")
            .unwrap_err()
            .contains("without versions")
    );
    // A `time` that is not a map of strings is a bad packument, not a panic.
    assert!(parse_npm(r#"{"versions":{},"time":[1]}"#, "x").is_err());
    let odd = parse_npm(
        r#"{"versions":{"1.0.0":{"deprecated":true}},"time":{"1.0.0":7}}"#,
        "x",
    )
    .unwrap();
    assert_eq!(odd.releases, [Release::new("1.0.0")]);
}

#[test]
fn index_files_make_releases_at_their_earliest_upload_yanked_when_every_file_is() {
    let file = |name: &str, time: Option<&str>, yanked: Option<&str>| pypi::IndexFile {
        filename: name.into(),
        version: pypi::version_of(name, "tiny-py").unwrap(),
        sha256: None,
        upload_time: time.map(String::from),
        yanked: yanked.map(String::from),
        url: None,
    };
    let files = [
        file(
            "tiny_py-1.0.0.tar.gz",
            Some("2026-01-02T00:00:00Z"),
            Some("bad"),
        ),
        file(
            "tiny_py-1.0.0-py3-none-any.whl",
            Some("2026-01-01T00:00:00.123456Z"),
            None,
        ),
        file("tiny_py-1.1.tar.gz", Some("2026-02-01T00:00:00Z"), Some("")),
        file(
            "tiny_py-1.1-py3-none-any.whl",
            Some("2026-02-02T00:00:00Z"),
            Some("broken wheel"),
        ),
        file("tiny_py-1.2.tar.gz", None, None),
        file(
            "tiny_py-1.2-py3-none-any.whl",
            Some("2026-03-01T00:00:00Z"),
            None,
        ),
    ];
    let r = from_index_files("tiny-py", &files);
    let got: Vec<(&str, Option<String>, Option<&str>)> = r
        .releases
        .iter()
        .map(|r| {
            (
                r.version.as_str(),
                r.published.map(format_time),
                r.yanked.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("1.0.0", Some("2026-01-01T00:00:00Z".into()), None),
            (
                "1.1",
                Some("2026-02-01T00:00:00Z".into()),
                Some("broken wheel")
            ),
            ("1.2", None, None),
        ]
    );
}

#[test]
fn ages_are_read_and_written_in_days_hours_and_minutes() {
    assert_eq!(parse_age("7d"), Ok(week()));
    assert_eq!(parse_age("36h"), Ok(Duration::from_secs(36 * 3600)));
    assert_eq!(parse_age("90m"), Ok(Duration::from_secs(90 * 60)));
    assert_eq!(parse_age("0"), Ok(Duration::ZERO));
    assert_eq!(parse_age("0d"), Ok(Duration::ZERO));
    for bad in ["", "7", "d", "7w", "-1d", "1.5d", "7 d", "+7d", "7dd"] {
        let err = parse_age(bad).unwrap_err();
        assert!(err.contains("not a release age"), "{bad}: {err}");
    }
    assert!(parse_age("99999999999999999999d").is_err());
    assert!(parse_age("3651d").unwrap_err().contains("ten years"));
    assert_eq!(format_age(week()), "7d");
    assert_eq!(
        format_age(Duration::from_secs(2 * DAY + 3 * 3600 + 59)),
        "2d 3h"
    );
    assert_eq!(format_age(Duration::from_secs(36 * 3600)), "1d 12h");
    assert_eq!(format_age(Duration::from_secs(5 * 3600 + 600)), "5h 10m");
    assert_eq!(format_age(Duration::from_secs(90 * 60)), "1h 30m");
    assert_eq!(format_age(Duration::from_secs(59)), "under a minute");
}

#[test]
fn registry_times_are_read_to_the_second_in_any_offset() {
    let t = |s: &str| parse_time(s).map(format_time);
    assert_eq!(
        t("2026-01-02T03:04:05.678Z").as_deref(),
        Some("2026-01-02T03:04:05Z")
    );
    assert_eq!(
        t("2026-01-02T03:04:05.123456+02:00").as_deref(),
        Some("2026-01-02T01:04:05Z")
    );
    assert_eq!(
        t("2024-02-29T23:30:00-0100").as_deref(),
        Some("2024-03-01T00:30:00Z")
    );
    assert_eq!(
        t("1970-01-01T00:00:00Z").as_deref(),
        Some("1970-01-01T00:00:00Z")
    );
    for bad in [
        "",
        "2026-01-02",
        "2026-13-02T00:00:00Z",
        "2026-01-02T25:00:00Z",
        "2026-01-02T00:00:00",
        "2026-01-02T00:00:00.Z",
        "2026-01-02T00:00:00Zjunk",
        "1969-12-31T23:59:59Z",
        "２０２６-01-02T00:00:00Z",
    ] {
        assert_eq!(parse_time(bad), None, "{bad}");
    }
}

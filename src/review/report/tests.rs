use super::*;

fn plain(s: String) -> String {
    let mut out = Vec::new();
    let mut w = anstream::StripStream::new(&mut out);
    std::io::Write::write_all(&mut w, s.as_bytes()).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_long_definition_is_folded_after_its_first_lines_with_a_count() {
    let properties: serde_json::Map<String, serde_json::Value> = (0..30)
        .map(|i| (format!("p{i:02}"), serde_json::json!({"type": "string"})))
        .collect();
    let definition = Json::from_value(&serde_json::json!({
        "name": "wide",
        "inputSchema": {"type": "object", "properties": properties}
    }));
    let text = definition_block(&definition, "  ");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), SHOWN_LINES + 1, "{text}");
    assert_eq!(lines[0], "  {");
    assert_eq!(lines[1], r#"    "name": "wide","#);
    // 98 lines in all: five opening, three per property, three closing.
    assert_eq!(lines[SHOWN_LINES], "  … (58 more lines)");
}

#[test]
fn a_changed_part_too_long_for_one_line_is_shown_whole_and_folded() {
    let tool = |props: serde_json::Value| {
        Json::from_value(&serde_json::json!({
            "name": "t",
            "inputSchema": {"type": "object", "properties": props}
        }))
    };
    let target: serde_json::Map<String, serde_json::Value> = (0..5)
        .map(|i| {
            let about = format!("Where the call lands, part {i}.");
            (
                format!("f{i}"),
                serde_json::json!({"type": "string", "description": about}),
            )
        })
        .collect();
    let findings = crate::contract::classify::Classifier::default().classify(
        &tool(serde_json::json!({})),
        &tool(serde_json::json!({"target": {"type": "object", "properties": target}})),
    );
    let text = plain(render_findings(&findings, ""));
    assert!(text.contains("was (absent)\n"), "{text}");
    assert!(text.contains("now\n"), "{text}");
    assert!(
        text.contains(r#"        "description": "Where the call lands, part 4.""#),
        "{text}"
    );
    assert!(!text.contains("…"), "{text}");
}

#[test]
fn a_word_diff_keeps_only_the_ends_of_long_unchanged_runs() {
    let words: Vec<String> = (0..200).map(|i| format!("w{i:03}")).collect();
    let before = words.join(" ");
    let after = before.replace("w100", "W100");
    let diff = plain(word_diff(&before, &after));
    assert!(diff.starts_with("… (4"), "{diff}");
    assert!(diff.contains(" w099 [-w100-]{+W100+} w101 "), "{diff}");
    assert!(diff.ends_with("unchanged characters) …"), "{diff}");
    assert!(diff.chars().count() < 300, "{diff}");
}

#[test]
fn a_word_diff_joins_a_reworded_phrase_and_escapes_server_text() {
    assert_eq!(
        plain(word_diff("maximum results", "page index")),
        "[-maximum results-]{+page index+}"
    );
    assert_eq!(
        plain(word_diff(
            "Deploy a branch.",
            "Deploy a branch\u{1b}[2J now."
        )),
        "Deploy a [-branch.-]{+branch\\u{001b}[2J now.+}"
    );
}

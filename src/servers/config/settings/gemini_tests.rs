use super::*;

fn file(owner: Owner, allowed: Option<&[&str]>, excluded: &[&str]) -> GeminiFile {
    let list = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    GeminiFile {
        shown: format!("{owner:?}"),
        owner,
        allowed: allowed.map(list),
        excluded: list(excluded),
    }
}

#[test]
fn gemini_allowed_lists_are_intersected_and_an_empty_result_allows_all() {
    let project = file(Owner::Project, Some(&["a", "b"]), &[]);
    let user = file(Owner::Personal, Some(&["A"]), &[]);
    assert_eq!(blocked(&[&project, &user], "a"), None);
    assert_eq!(
        blocked(&[&project, &user], "b").as_deref(),
        Some("not in mcp.allowed of Personal")
    );
    let other = file(Owner::Personal, Some(&["c"]), &[]);
    assert_eq!(blocked(&[&project, &other], "z"), None, "nothing in common");
    let empty = file(Owner::Project, Some(&[]), &[]);
    assert_eq!(blocked(&[&empty], "z"), None);
    let excluded = file(Owner::Personal, None, &["a"]);
    assert_eq!(
        blocked(&[&project, &excluded], "a").as_deref(),
        Some("in mcp.excluded of Personal")
    );
    assert_eq!(blocked(&[&excluded], "A"), None, "matched exactly");
}

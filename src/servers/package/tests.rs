use super::*;

pub(super) fn pin(package: Package, launcher: &str) -> PackagePin {
    PackagePin {
        launcher: launcher.into(),
        package,
        closure: None,
    }
}

pub(super) fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn oci_digests_are_read_from_the_reference() {
    let hex = "b".repeat(64);
    assert_eq!(
        oci_digest(&format!("mcp/github@sha256:{hex}")),
        Some(format!("sha256:{hex}"))
    );
    assert_eq!(oci_digest("mcp/github:1.0"), None);
    assert_eq!(oci_digest("mcp/github@sha256:abc"), None);
}

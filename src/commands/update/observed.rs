//! Offering to pin the handshakes hosts were seen sending.

use super::*;

/// A pinned profile whose host was last seen sending another handshake
/// (`.mcp-lock/handshakes.json`) is listed with that handshake instead of the
/// profile's own values: the differences (capabilities, protocol version, clientInfo,
/// and the listing under them) are proposed as any change is, and approving them pins
/// the listing under the handshake the host really sends. Said first, old against new.
pub(super) fn offer_observed(
    ws: &Workspace,
    lock: &mcp_lock::records::lock::Lockfile,
    targets: &mut [mcp_lock::live::check::Target],
) {
    let seen = match mcp_lock::records::observed::read(ws.lock_dir()) {
        Ok(seen) => seen,
        Err(why) => {
            super::super::notice(&why);
            return;
        }
    };
    let differing = mcp_lock::records::observed::differing(lock, &seen, &[]);
    for (server, profile, h) in mcp_lock::records::observed::to_pin(lock, &seen) {
        let Some(target) = targets
            .iter_mut()
            .find(|t| t.spec.name == server && t.profile.name == profile)
        else {
            continue;
        };
        let Some(version) = h.version_to_ask() else {
            continue;
        };
        if let Some(o) = differing
            .iter()
            .find(|o| o.server == server && o.profile == profile && o.at == h.at)
        {
            super::super::notice(&format!(
                "{} [{}]: listed with the handshake {} last sent, to pin it: capabilities {} -> {}{}; era {}",
                esc(&server),
                esc(&profile),
                esc(&h.host_shown()),
                o.pinned_capabilities,
                o.capabilities,
                if o.difference.is_empty() {
                    String::new()
                } else {
                    format!(" (differing at {})", o.difference.join(", "))
                },
                {
                    let pinned = format!(
                        "{} {}",
                        if mcp_lock::base::protocol::is_modern(&o.pinned_protocol_version) {
                            "server/discover"
                        } else {
                            "initialize"
                        },
                        o.pinned_protocol_version
                    );
                    if o.era_changed {
                        format!("{pinned} -> {}", esc(&h.era()))
                    } else {
                        format!("unchanged ({pinned})")
                    }
                },
            ));
        }
        target.profile.protocol_version = version;
        target.profile.capabilities = h.capabilities.clone();
        target.profile.client_info = h.client_info.clone();
    }
}

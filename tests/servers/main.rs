//! Real MCP servers on loopback: the npm and PyPI releases from the test cache
//! (scripts/install-test-servers.sh), the official conformance suite, remote
//! transports, OAuth, the guard in front of remote servers and the whole contract
//! surface. Each area has a module of its own beside this file.

#[path = "../common/mod.rs"]
mod common;
mod conformance;
mod guard_remote;
mod oauth;
mod popular_servers;
mod real_servers;
mod remote;
mod surface;

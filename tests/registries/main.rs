//! Package pins against real registries on loopback (verdaccio, pypiserver): pins,
//! closures, `outdated` and `upgrade`. Each area has a module of its own beside this
//! file.

mod closures;
#[path = "../common/mod.rs"]
mod common;
mod outdated;
mod packages;
mod upgrade;

//! The npm and PyPI distributions, built from this tree and installed from loopback
//! registries. Each has a module of its own beside this file.

#[path = "../common/mod.rs"]
mod common;
mod dist_npm;
mod dist_python;

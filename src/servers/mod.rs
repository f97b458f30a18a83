//! Where servers are declared and how they are reached: config discovery across the
//! hosts' files (`config`), the client and its transports (`client`), authorization
//! (`auth`), and the packages a server launches from (`package`). `config` and
//! `client` lean on each other (a resolved entry is what the client launches, and a
//! `headersHelper` runs the way a stdio server does), so they share this layer. Uses
//! only the layers below: [`crate::base`], [`crate::contract`].

pub mod auth;
pub mod client;
pub mod config;
pub mod package;

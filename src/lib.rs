//! rigwatch: watches rented GPU boxes over pooled SSH and guards their teardown.
//!
//! Module map (data flows down this list, never up):
//! - `config`    — fleet.toml and `ssh -G` resolution; imports nothing else of ours.
//! - `sanitize`  — remote text made safe for terminals; imports nothing else of ours.
//! - `probe`     — pure parsers: probe text in, typed samples or errors with line; imports nothing.
//! - `transport` — the SSH pool, sessions, known_hosts, link state; imports `config`, `sanitize`.
//! - `cli`       — subcommands; the only module that prints; imports all of the above.

#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod probe;
pub mod sanitize;
pub mod transport;

//! rigwatch: watches rented GPU boxes over pooled SSH and guards their teardown.
//!
//! Module map (data flows down this list, never up):
//! - `glob`      — `*`/`?` matching for every pattern a user writes, and which part of a pull
//!   path is a pattern; imports nothing.
//! - `config`    — fleet.toml and `ssh -G` resolution; imports `glob` (pull paths' patterns).
//! - `clocks`    — platform profiles as data; imports `config` (for located errors).
//! - `sanitize`  — remote text made safe for terminals; imports nothing else of ours.
//! - `process`   — a local command in its own process group, with a timeout that ends the whole
//!   group and an output cap; imports nothing else of ours.
//! - `queue`     — sweep queue files, cell progress from logs, roster reconciliation; pure, imports
//!   only `glob`.
//! - `probe`     — the probe script and pure parsers: text in, typed samples or located errors
//!   out; imports `sanitize`, `queue` (the queue sections' listing).
//! - `transport` — the SSH pool, sessions, streams, known_hosts, link state; imports `config`,
//!   `sanitize`.
//! - `provider`  — read-only provider CLIs (vast.ai, RunPod): state and price; imports `sanitize`,
//!   `process`.
//! - `fleet`     — per-host ring buffers of readings; imports `probe`.
//! - `signals`   — pure judgements of history, link and `now`; imports `config`, `fleet`,
//!   `probe`, `transport` (for the link state type only).
//! - `ledger`    — the SQLite record of pulls and teardowns; imports `config` (its state dir).
//! - `pull`      — results copied home over SFTP, hashed, verified, judged current; imports
//!   `config`, `transport`, `ledger`, `sanitize`, `process` (the user's verify commands).
//! - `teardown`  — the dialog (one pure state machine), the one executor of its effects behind a
//!   small I/O trait, the destroy plan, the queue note, and the one destroy path (intent,
//!   command, provider check, outcome); imports `pull`, `clocks`, `queue`, `sanitize`, `config`,
//!   `ledger`, `provider`, `process`, `transport` (the session the live checks run over).
//! - `monitor`   — wiring: runs the probes over the pool and feeds the fleet; imports all above.
//! - `metrics`   — the fleet's figures for Prometheus (prometheus-client) and their loopback
//!   HTTP server; imports `monitor`'s state and `signals`.
//! - `alerts`    — conditions read off the fleet's state, fired and resolved once each way,
//!   silences and sinks; imports `monitor`'s state, `signals`, `config`, `sanitize`, `glob`,
//!   `process`.
//! - `demo`      — the demo fleet: captures replayed through monitor's readers into its state.
//! - `ui`        — the dashboard: the only module that imports ratatui/crossterm; reads
//!   `monitor`'s state, never touches the network.
//! - `cli`       — subcommands; the only module that prints; imports all of the above.

#![forbid(unsafe_code)]

pub mod alerts;
pub mod cli;
pub mod clocks;
pub mod config;
pub mod demo;
pub mod fleet;
pub mod glob;
pub mod ledger;
pub mod metrics;
pub mod monitor;
pub mod probe;
pub mod process;
pub mod provider;
pub mod pull;
pub mod queue;
pub mod readings;
pub mod runtime;
pub mod sanitize;
pub mod signals;
pub mod teardown;
pub mod transport;
pub mod ui;

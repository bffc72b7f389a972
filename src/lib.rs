//! rigwatch: watches rented GPU boxes over pooled SSH and guards their teardown.
//!
//! Module map. Data flows down this list, never up: a module imports only modules above it,
//! exactly those its `Imports:` line names (`tests/architecture.rs` reads this map and fails on
//! an import it does not name, or a name it does not use).
//! - `glob` — `*`/`?` matching for every pattern a user writes, and which part of a pull path
//!   is a pattern. Imports: nothing.
//! - `sanitize` — remote text made safe for terminals; secrets masked for display. Imports:
//!   nothing.
//! - `process` — a local command in its own process group, with a timeout that ends the whole
//!   group and an output cap. Imports: nothing.
//! - `config` — fleet.toml and `ssh -G` resolution. Imports: `glob`.
//! - `queue` — sweep queue files, cell progress from logs, roster reconciliation; pure.
//!   Imports: `glob`.
//! - `probe` — the probe script and pure parsers: text in, typed samples or located errors out.
//!   Imports: `queue`, `sanitize`.
//! - `provider` — read-only provider CLIs (vast.ai, RunPod): state and price. Imports:
//!   `process`, `sanitize`.
//! - `readings` — per-host ring buffers of readings, and what the fleet's state is told.
//!   Imports: `probe`, `provider`.
//! - `transport` — the SSH pool, sessions, streams, known_hosts, link state; `kubectl` for a
//!   Kubernetes namespace (lists, and deleting a Job with its pods); `BoxExec`, where a pull's
//!   commands run (an SSH session, or a Job's pod through `kubectl exec`). Imports: `config`,
//!   `glob`, `process` (kubectl in its own process group), `sanitize`.
//! - `signals` — pure judgements of history, link and `now`. Imports: `config`, `probe`,
//!   `readings`, `sanitize`, `transport` (the link state type).
//! - `clocks` — platform profiles as data, and the danger clocks and cost computed from them.
//!   Imports: `config`, `probe` (a Slurm job's times), `provider` (its state and price),
//!   `signals` (fill outlook, severity).
//! - `cluster` — a cluster's jobs (Slurm, Kubernetes) as fleet rows: phase, reason in words,
//!   walltime clock, dangers; a job that left the queue is ended, state unknown; and the one
//!   read of a Slurm queue over a login session. Imports: `clocks`, `config`, `probe`,
//!   `sanitize`, `signals`, `transport`.
//! - `target` — what an action is aimed at: a box, a Slurm job, a Kubernetes Job; and the
//!   words said about each kind. Imports: `cluster` (the scheduler).
//! - `ledger` — the SQLite record of pulls and teardowns. Imports: `config`, `sanitize`.
//! - `pull` — results copied home over SFTP (or exec: a Job's pod has no SFTP), hashed,
//!   verified, promoted once proven; the guard's look at a box or a pod; what a pull of a
//!   target takes. Imports: `config`, `glob`, `ledger`, `process`, `sanitize`, `target`,
//!   `transport`.
//! - `fleet` — the fleet's state: per host its readings and their judgement (run, signals,
//!   clocks, cost, queue), each cluster's jobs, events, what the ledger records of each member,
//!   and what is remembered between runs. Imports: `clocks`, `cluster`, `config`, `ledger`,
//!   `probe`, `provider`, `queue`, `readings`, `sanitize`, `signals`, `transport`.
//! - `teardown` — the teardown dialog's driver (pure), its executor, the destroy plan, the
//!   queue note, and the one destroy path (intent, command, provider check, outcome). Imports:
//!   `clocks`, `cluster` (a job's queue read after its scancel), `config`, `fleet` (how a
//!   target looks in the state when its dialog opens), `ledger`, `process`, `provider`, `pull`,
//!   `queue`, `sanitize`, `signals`, `target` (what the dialog tears down), `transport` (the
//!   live I/O's session, and kubectl for a Job's delete).
//! - `monitor` — wiring: runs the probes over the pool and turns their output into readings.
//!   Imports: `config`, `ledger`, `probe`, `provider`, `queue`, `readings`, `sanitize`,
//!   `transport`.
//! - `alerts` — conditions read off the fleet's state, fired and resolved once each way;
//!   silences and sinks. Imports: `clocks`, `cluster`, `config`, `fleet`, `glob`, `ledger`,
//!   `process`, `queue`, `sanitize`, `signals`.
//! - `metrics` — the fleet's figures for Prometheus and their loopback HTTP server. Imports:
//!   `fleet`, `signals`.
//! - `demo` — the demo fleet: captures replayed through monitor's readers into the state.
//!   Imports: `clocks`, `cluster`, `config`, `fleet`, `ledger`, `monitor`, `probe`, `pull`,
//!   `readings`, `signals`, `teardown` (the demo's teardown I/O), `transport`.
//! - `runtime` — the one consumer of the readings: owns the fleet's state, judges it each tick,
//!   runs alerts and sinks, saves memory, and runs the slow work a front end asks for (pulls,
//!   the teardown dialog's effects, live or demo); `status` is the same given one probe.
//!   Imports: `alerts`, `clocks`, `cluster`, `config`, `demo`, `fleet`, `ledger`, `metrics`,
//!   `monitor`, `probe` (kubectl's readers, for clusters), `provider`, `pull`,
//!   `queue`, `readings`, `sanitize`, `target` (what a handover is for), `teardown`, `transport`.
//! - `ui` — the dashboard: the only module that imports ratatui/crossterm; draws the runtime's
//!   state and turns keys into actions, which the runtime carries out: it never touches the
//!   network, and names other modules only for their data types. Imports: `alerts`, `clocks`,
//!   `cluster`, `demo`, `fleet`, `ledger`, `probe`, `provider`, `pull`, `queue`, `readings`,
//!   `runtime`, `sanitize`, `signals`, `target`, `teardown`, `transport`.
//! - `cli` — subcommands; the only module that prints. Imports: `alerts`, `clocks`, `cluster`,
//!   `config`, `fleet`, `glob`, `ledger`, `metrics`, `monitor`, `probe`, `provider`, `pull`, `queue`,
//!   `readings`, `runtime`, `sanitize`, `signals`, `target`, `teardown`, `transport`, `ui`.

#![forbid(unsafe_code)]

pub mod alerts;
pub mod cli;
pub mod clocks;
pub mod cluster;
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
pub mod target;
pub mod teardown;
pub mod transport;
pub mod ui;

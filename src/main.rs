use std::process::ExitCode;

use clap::{CommandFactory, Parser};

/// Errors reach a person as one line: what went wrong and what to do, with the causes after a
/// colon; no source location, backtrace or colour. A usage mistake exits 2 (3 for `status`,
/// whose 2 means "needs action now"), anything else 1.
fn main() -> ExitCode {
    // A shell asking for completions (`COMPLETE=bash rigwatch -- …`) is answered and exits here.
    clap_complete::CompleteEnv::with_factory(rigwatch::cli::Cli::command)
        .var(rigwatch::cli::complete::VAR)
        .complete();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match rigwatch::cli::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return rigwatch::cli::args_mistake(&e, &args),
    };
    match rigwatch::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rigwatch: {}", rigwatch::cli::one_line(&e));
            if e.downcast_ref::<rigwatch::cli::UsageError>().is_some() {
                ExitCode::from(rigwatch::cli::EXIT_CONFIG)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

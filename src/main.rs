use std::process::ExitCode;

use clap::Parser;

/// Errors reach a person as one line: what went wrong and what to do, with the causes after a
/// colon; no source location, backtrace or colour. A usage mistake exits 2, anything else 1.
fn main() -> ExitCode {
    let cli = rigwatch::cli::Cli::parse();
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

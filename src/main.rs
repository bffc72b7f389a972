use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if let Err(e) = color_eyre::install() {
        eprintln!("rigwatch: cannot install the error reporter: {e}");
    }
    let cli = rigwatch::cli::Cli::parse();
    match rigwatch::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rigwatch: {e:?}");
            ExitCode::FAILURE
        }
    }
}

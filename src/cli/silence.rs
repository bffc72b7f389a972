//! `rigwatch silence HOST 2h`: no sink is called for HOST's alerts until then (they are still
//! written to stdout and the events file, marked silenced). `silence HOST 0` lifts it;
//! `silence` alone lists what is silenced.

use std::process::ExitCode;

use chrono::{Duration, Utc};
use color_eyre::eyre::{WrapErr, eyre};

use crate::alerts::silences;
use crate::config::FleetConfig;

#[derive(Debug, clap::Args)]
pub struct SilenceArgs {
    /// The host to silence (a name from fleet.toml)
    #[arg(add = clap_complete::ArgValueCandidates::new(super::complete::fleet_names))]
    host: Option<String>,
    /// How long: 90s, 30m, 2h, 1d; 0 lifts the silence
    #[arg(default_value = "2h")]
    duration: String,
}

pub fn run(fleet: &FleetConfig, args: &SilenceArgs) -> color_eyre::Result<ExitCode> {
    let path = silences::path().ok_or_else(|| eyre!("no home or XDG_STATE_HOME for silences"))?;
    let now = Utc::now();
    let mut all = silences::load(&path, now);
    let Some(host) = &args.host else {
        if all.is_empty() {
            println!("nothing is silenced");
        }
        for (host, until) in &all {
            println!(
                "{host}  silenced until {}",
                until.format("%Y-%m-%d %H:%M UTC")
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    super::one_host::host(fleet, host)?;
    let length = crate::config::typed::duration(&args.duration)
        .ok()
        .and_then(|d| Duration::from_std(d).ok())
        .ok_or_else(|| {
            super::usage(format!(
                "{:?} is not a duration; write it like 90s, 30m, 2h or 1d (0 lifts the silence)",
                args.duration
            ))
        })?;
    if length.is_zero() {
        all.remove(host);
        println!("{host}: silence lifted");
    } else {
        let until = now + length;
        all.insert(host.clone(), until);
        println!(
            "{host}: silenced until {}",
            until.format("%Y-%m-%d %H:%M UTC")
        );
    }
    silences::save(&path, &all).wrap_err_with(|| format!("cannot write {}", path.display()))?;
    Ok(ExitCode::SUCCESS)
}

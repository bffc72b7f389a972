//! Before any name is typed: can the destroy run, and is the instance it names this box? Both
//! answers arrive as [`PlanLooks`]; anything short of "yes" is a refusal that says what to fix.
//!
//! - The command's program must exist and be executable (a `[providers]` path, a path in the
//!   command, or a name on PATH): a destroy that would fail with exit 127 after both
//!   confirmations is refused before them.
//! - On a provider platform (vast.ai, RunPod) with an instance id, the provider's own read-only
//!   listing must list that id, and one of the SSH endpoints it gives for it must be where this
//!   host connects (RunPod's proxy also names the pod in the SSH user, `POD-…@ssh.runpod.io`).
//!   A copy-pasted id from another box, or an id the provider does not list, refuses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::facts::PlanLooks;
use super::plan::{Method, TeardownPlan};
use crate::clocks::Profile;
use crate::config::{FleetConfig, HostConfig};
use crate::provider::{Provider, query};

pub(super) const PROVIDER_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn plan_looks(
    plan: &TeardownPlan,
    host: &HostConfig,
    profile: &Profile,
    fleet: &FleetConfig,
) -> PlanLooks {
    let command = match &plan.method {
        Method::Blocked { why } => return PlanLooks::Blocked(why.clone()),
        Method::Manual { .. } => return PlanLooks::ByHand,
        // Checked when the session is known (the live check refuses a link that is down).
        Method::OnHost { .. } => return PlanLooks::Runs,
        Method::Command { command } => command,
    };
    if let Err(why) = program_runs(command) {
        return PlanLooks::Blocked(why);
    }
    match instance_is_this_box(host, profile, fleet).await {
        Ok(()) => PlanLooks::Runs,
        Err(why) => PlanLooks::Blocked(why),
    }
}

/// The first word of a shell command that names a program (leading `VAR=value` skipped), with
/// single or double quotes removed.
pub fn program_of(command: &str) -> Option<String> {
    let mut rest = command.trim_start();
    loop {
        let (word, after) = first_word(rest)?;
        let assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        });
        if !assignment {
            return Some(word);
        }
        rest = after.trim_start();
    }
}

fn first_word(text: &str) -> Option<(String, &str)> {
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n' | ';' | '&' | '|') => return Some((word, &text[i..])),
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (_, c) => word.push(c),
        }
    }
    (!word.is_empty() && quote.is_none()).then_some((word, ""))
}

/// Ok when the command's program is an executable file, found as the shell would find it.
pub fn program_runs(command: &str) -> Result<(), String> {
    let Some(program) = program_of(command) else {
        return Err(format!(
            "cannot tell which program the destroy command runs: {}",
            crate::sanitize::mask_secrets(command)
        ));
    };
    let expanded = match program.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(&program), |h| PathBuf::from(h).join(rest)),
        None => PathBuf::from(&program),
    };
    let found = if program.contains('/') {
        executable(&expanded).then_some(expanded)
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(&program))
                .find(|p| executable(p))
        })
    };
    match found {
        Some(_) => Ok(()),
        None => Err(format!(
            "the destroy command's program {program} is not installed{}: install it, or name \
             its path ([providers] in fleet.toml, or the host's teardown)",
            if program.contains('/') {
                ""
            } else {
                " on PATH"
            }
        )),
    }
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The provider CLI to ask about a host of this platform (the `[providers]` path, else its usual
/// name on PATH); None on a platform without one.
pub fn provider_cli(profile: &Profile, fleet: &FleetConfig) -> Option<(Provider, PathBuf)> {
    let provider = Provider::from_platform(&profile.name)?;
    let program = match provider {
        Provider::Vastai => fleet.providers.vastai.clone(),
        Provider::Runpod => fleet.providers.runpod.clone(),
    }
    .unwrap_or_else(|| PathBuf::from(provider.default_program()));
    Some((provider, program))
}

async fn instance_is_this_box(
    host: &HostConfig,
    profile: &Profile,
    fleet: &FleetConfig,
) -> Result<(), String> {
    let (Some((provider, program)), Some(id)) = (provider_cli(profile, fleet), &host.instance_id)
    else {
        return Ok(());
    };
    let id = crate::sanitize::line(id, 80);
    let cannot = |why: String| format!("cannot confirm that instance {id} is {}: {why}", host.name);
    let rows = query(provider, &program, PROVIDER_TIMEOUT)
        .await
        .map_err(|e| cannot(e.to_string()))?;
    let Some(row) = rows.iter().find(|r| r.instance_id == id) else {
        return Err(format!(
            "{} lists no instance {id}: the id is wrong, another account's, or already \
             destroyed; fix instance_id for {}",
            provider.default_program(),
            host.name
        ));
    };
    let here = crate::config::ssh::resolve(&host.target, fleet.ssh_config.as_deref())
        .await
        .map_err(|e| cannot(e.to_string()))?;
    let named_in_user = provider == Provider::Runpod && here.user.starts_with(&format!("{id}-"));
    let same_endpoint = row
        .ssh
        .iter()
        .any(|e| e.host.eq_ignore_ascii_case(&here.hostname) && e.port == here.port);
    if named_in_user || same_endpoint {
        return Ok(());
    }
    let listed: Vec<String> = row.ssh.iter().map(ToString::to_string).collect();
    Err(if listed.is_empty() {
        cannot(format!(
            "{} gives no SSH address for it to compare with {}:{}",
            provider.default_program(),
            here.hostname,
            here.port
        ))
    } else {
        format!(
            "instance {id} is reached at {} by {}'s account, but {} connects to {}:{}: the \
             instance_id belongs to another box; fix it in fleet.toml",
            listed.join(", "),
            provider.default_program(),
            host.name,
            here.hostname,
            here.port
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_the_first_word_quotes_and_assignments_aside() {
        assert_eq!(
            program_of("vastai destroy instance '7' -y").as_deref(),
            Some("vastai")
        );
        assert_eq!(
            program_of("'/home/u/.local/bin/vastai' destroy").as_deref(),
            Some("/home/u/.local/bin/vastai")
        );
        assert_eq!(
            program_of("TOKEN=x AWS=1 \"my cli\" rm 9").as_deref(),
            Some("my cli")
        );
        assert_eq!(program_of("   "), None);
    }

    #[test]
    fn a_missing_program_is_refused_with_what_to_do() {
        assert!(program_runs("sh -c true").is_ok());
        let why =
            program_runs("'/nonexistent/vastai' destroy instance '1' -y").expect_err("missing");
        assert!(
            why.contains("/nonexistent/vastai is not installed"),
            "{why}"
        );
        let why = program_runs("no-such-cli-rigwatch rm 1").expect_err("missing");
        assert!(why.contains("not installed on PATH"), "{why}");
    }
}

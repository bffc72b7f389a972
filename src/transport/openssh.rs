//! The user's own OpenSSH client, for what the dashboard hands over to a person: a shell on the
//! box (`s`), its log in `less` (`l`), its run's tmux pane read-only (`L`). rigwatch never types
//! into these; it builds the command line from the same alias and options it connects with, so
//! the person lands where the dashboard looks.

use std::ffi::OsString;

use crate::config::{FleetConfig, HostConfig};
use crate::sanitize::shell_quote;

/// What the person asked to open on a box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover {
    /// A login shell.
    Shell,
    /// The run's log in full, following (`less +F`: Ctrl-C stops following, `/` searches).
    Log,
    /// The run's tmux session, attached read-only.
    Pane,
}

impl Handover {
    pub fn word(self) -> &'static str {
        match self {
            Handover::Shell => "shell",
            Handover::Log => "log",
            Handover::Pane => "tmux pane",
        }
    }
}

/// `ssh` with the fleet's ssh config, known_hosts and the host's user, port and key, then the
/// remote command for `what` (one argument: ssh hands it to the login shell as it is).
pub fn argv(
    fleet: &FleetConfig,
    host: &HostConfig,
    what: Handover,
) -> Result<Vec<OsString>, String> {
    let remote = match what {
        Handover::Shell => None,
        Handover::Log => {
            let log = host.log.as_deref().ok_or_else(|| {
                format!(
                    "{}: no `log` is configured, so there is no log to open",
                    host.name
                )
            })?;
            Some(format!("less +F -- {}", shell_quote(log)))
        }
        Handover::Pane => {
            let run = host.run.as_deref().ok_or_else(|| {
                format!(
                    "{}: no `run` session is configured, so there is no pane to open",
                    host.name
                )
            })?;
            // `=` matches the session's exact name, as the probe does; -r keeps it read-only.
            Some(format!(
                "tmux attach-session -r -t {}",
                shell_quote(&format!("={run}"))
            ))
        }
    };
    Ok(ssh_argv(fleet, host, remote))
}

/// `ssh` to `host` as the fleet says to reach it, running `remote` on a terminal there, or a
/// login shell without one.
pub fn ssh_argv(fleet: &FleetConfig, host: &HostConfig, remote: Option<String>) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["ssh".into()];
    if let Some(path) = &fleet.ssh_config {
        out.extend(["-F".into(), path.into()]);
    }
    if let Some(path) = &fleet.known_hosts {
        let mut option = OsString::from("UserKnownHostsFile=");
        option.push(path);
        out.extend(["-o".into(), option]);
    }
    if host.accept_new {
        out.extend(["-o".into(), "StrictHostKeyChecking=accept-new".into()]);
    }
    if let Some(key) = &host.identity {
        out.extend(["-i".into(), key.into()]);
    }
    if let Some(user) = &host.target.user {
        out.extend(["-l".into(), user.into()]);
    }
    if let Some(port) = host.target.port {
        out.extend(["-p".into(), port.to_string().into()]);
    }
    if remote.is_some() {
        // less and tmux need a terminal on the box.
        out.push("-t".into());
    }
    out.push("--".into());
    out.push(host.target.host.clone().into());
    out.extend(remote.map(OsString::from));
    out
}

/// The command line as a person would type it, for the screen.
pub fn shown(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.to_string_lossy();
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c))
            {
                a.into_owned()
            } else {
                shell_quote(&a)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(host_body: &str) -> FleetConfig {
        let text = format!(
            "known_hosts = \"/k/known hosts\"\nssh_config = \"/k/config\"\n\
             [[host]]\nname = \"b1\"\n{host_body}\n"
        );
        crate::config::fleet::parse(std::path::Path::new("fleet.toml"), &text).expect("fleet")
    }

    #[test]
    fn the_shell_uses_the_fleets_ssh_config_known_hosts_user_port_and_key() {
        let f = fleet("ssh = \"me@10.0.0.7:2222\"\nidentity = \"/k/id\"");
        let line = shown(&argv(&f, &f.hosts[0], Handover::Shell).expect("argv"));
        assert_eq!(
            line,
            "ssh -F /k/config -o 'UserKnownHostsFile=/k/known hosts' -i /k/id -l me -p 2222 -- 10.0.0.7"
        );
    }

    #[test]
    fn the_log_and_the_pane_are_quoted_commands_on_a_terminal() {
        let f = fleet("ssh = \"gpu-alias\"\nlog = \"runs/it's.log\"\nrun = \"train\"");
        let log = argv(&f, &f.hosts[0], Handover::Log).expect("log");
        assert_eq!(
            log.last().map(|a| a.to_string_lossy().into_owned()),
            Some("less +F -- 'runs/it'\\''s.log'".to_string())
        );
        assert!(log.contains(&OsString::from("-t")));
        let pane = argv(&f, &f.hosts[0], Handover::Pane).expect("pane");
        assert_eq!(
            pane.last().map(|a| a.to_string_lossy().into_owned()),
            Some("tmux attach-session -r -t '=train'".to_string())
        );
    }

    #[test]
    fn a_host_without_a_log_or_run_says_so() {
        let f = fleet("ssh = \"gpu-alias\"");
        let why = argv(&f, &f.hosts[0], Handover::Log).expect_err("no log");
        assert!(why.contains("no `log` is configured"), "{why}");
        let why = argv(&f, &f.hosts[0], Handover::Pane).expect_err("no run");
        assert!(why.contains("no `run` session"), "{why}");
    }
}

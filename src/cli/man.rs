//! `rigwatch man`: the man page. clap_mangen writes the title, synopsis and options from the
//! command line's own definition; the rest is what a person reaches for in a man page: the
//! commands (named here, never as pages that do not exist), the dashboard's keys (the help
//! overlay's own list), the configuration's keys (the parser's own list, `config::keys`),
//! files, environment, exit status and examples.

use std::io::Write;

use clap::CommandFactory;
use roff::{Roff, bold, roman};

use super::Cli;

const FILES: &[(&str, &str)] = &[
    (
        "$XDG_CONFIG_HOME/rigwatch/fleet.toml",
        "the fleet (default ~/.config/rigwatch/fleet.toml); --config or $RIGWATCH_CONFIG name another",
    ),
    (
        "$XDG_CONFIG_HOME/rigwatch/profiles/NAME.toml",
        "overrides of a shipped platform profile, key by key",
    ),
    (
        "$XDG_CONFIG_HOME/rigwatch/themes/NAME.toml",
        "a colour theme (--theme NAME)",
    ),
    (
        "$XDG_STATE_HOME/rigwatch/ledger.sqlite",
        "every pull (files, both hashes, verification) and every teardown (intent, outcome); default ~/.local/state/rigwatch",
    ),
    (
        "$XDG_STATE_HOME/rigwatch/hosts.json",
        "what is remembered between runs: cost so far, last seen up, boots, queues",
    ),
    (
        "$XDG_STATE_HOME/rigwatch/events.jsonl",
        "every alert event `watch` said, one JSON line each",
    ),
    (
        "$XDG_STATE_HOME/rigwatch/alerts.json, alerts.lock",
        "alert states, and which rigwatch sends them (one sender per state dir)",
    ),
    (
        "$XDG_STATE_HOME/rigwatch/kaggle-runs.json",
        "the Kaggle GPU runs rigwatch saw this week: the quota's lower bound where the account reports none",
    ),
    (
        "$XDG_STATE_HOME/rigwatch/rigwatch.log",
        "a debug log, only with RIGWATCH_LOG set",
    ),
];

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RIGWATCH_CONFIG",
        "the fleet config, where --config is not given",
    ),
    (
        "XDG_CONFIG_HOME, XDG_STATE_HOME",
        "where config and state live",
    ),
    (
        "RIGWATCH_LOG",
        "a log level (debug, trace) for rigwatch.log; never the screen",
    ),
    ("NO_COLOR", "no colour, whatever the theme"),
    ("SSH_AUTH_SOCK", "the ssh agent, used as ssh would use it"),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "all well"),
    ("1", "a host is not up (check), or the command failed"),
    (
        "2",
        "a config or usage mistake (the config's error names file:line:col)",
    ),
    (
        "status",
        "0 healthy, 1 something to look at, 2 needs action now, 3 a config or usage mistake",
    ),
    (
        "teardown",
        "0 confirmed gone, 1 refused or failed, 4 ran but NOT confirmed gone",
    ),
    (
        "pull",
        "0 every file good, 1 otherwise, 75 another action held the target (--no-wait, or a \
         teardown or kill of it running)",
    ),
];

const EXAMPLES: &[(&str, &str)] = &[
    ("rigwatch demo", "the dashboard on the built-in demo fleet"),
    (
        "rigwatch init --from-ssh-config 'gpu-*'",
        "a starter fleet.toml with the gpu-* Hosts of ~/.ssh/config",
    ),
    (
        "rigwatch status --json | jq .hosts[0].signals",
        "one probe, for scripts",
    ),
    (
        "rigwatch watch --metrics 127.0.0.1:9464",
        "overnight alerts, and figures for Prometheus",
    ),
    (
        "rigwatch pull gpu-1",
        "bring gpu-1's results home, hashed and verified",
    ),
    (
        "rigwatch teardown gpu-1",
        "destroy gpu-1, only after a verified-current pull",
    ),
    (
        "rigwatch teardown hpc --job 4242",
        "cancel a Slurm job (or delete a Kubernetes Job) through the same guard",
    ),
];

fn section(roff: &mut Roff, title: &str, rows: &[(&str, &str)]) {
    roff.control("SH", [title]);
    for (term, what) in rows {
        roff.control("TP", []);
        roff.text([bold(*term)]);
        roff.text([roman(*what)]);
    }
}

pub fn render(out: &mut dyn Write) -> std::io::Result<()> {
    let command = Cli::command();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut roff = Roff::new();
    roff.control("SH", ["COMMANDS"]);
    for sub in command.get_subcommands() {
        roff.control("TP", []);
        roff.text([bold(format!("rigwatch {}", sub.get_name()))]);
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        roff.text([roman(about)]);
    }
    roff.control("PP", []);
    roff.text([roman(
        "Each command's own options: rigwatch COMMAND --help.",
    )]);
    let keys: Vec<(&str, &str)> = crate::ui::help::KEYS.to_vec();
    section(&mut roff, "KEYS", &keys);
    roff.control("SH", ["CONFIGURATION"]);
    roff.text([roman(
        "fleet.toml's tables and the keys each takes, as the parser lists them (what each means: \
         the book's configuration chapter):",
    )]);
    for (table, opening) in crate::config::keys::TABLES {
        roff.control("TP", []);
        roff.text([bold(*table)]);
        roff.text([roman(crate::config::keys::accepted(opening).join(", "))]);
    }
    section(&mut roff, "FILES", FILES);
    section(&mut roff, "ENVIRONMENT", ENVIRONMENT);
    section(&mut roff, "EXIT STATUS", EXIT_STATUS);
    section(&mut roff, "EXAMPLES", EXAMPLES);
    roff.to_writer(out)?;
    man.render_version_section(out)
}

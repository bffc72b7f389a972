//! `rigwatch init`: a commented starter fleet.toml, with hosts imported read-only from an ssh
//! config or the provider CLIs. It never overwrites a config and always shows what it writes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::{WrapErr, eyre};

use crate::provider::{InstanceState, Provider, ProviderState};

/// How long a provider CLI may take to list instances.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Add every Host of the ssh config whose name matches this glob (`gpu-*`); each is
    /// resolved by `ssh -G` when rigwatch connects, exactly as `ssh NAME` would
    #[arg(long, value_name = "GLOB")]
    from_ssh_config: Option<String>,
    /// The ssh config to read (default ~/.ssh/config); written into fleet.toml so rigwatch
    /// resolves the hosts through the same file
    #[arg(long, value_name = "PATH")]
    ssh_config: Option<PathBuf>,
    /// Add every vast.ai instance `vastai show instances` lists (read-only)
    #[arg(long)]
    from_vastai: bool,
    /// Add every RunPod pod `runpodctl pod list` lists (read-only)
    #[arg(long)]
    from_runpod: bool,
    /// Print the config on stdout instead of writing it
    #[arg(long)]
    print: bool,
}

/// One `[[host]]` to write.
#[derive(Debug, Clone, PartialEq)]
struct Draft {
    name: String,
    /// None: the source knows the box but not how to reach it; written commented out.
    ssh: Option<String>,
    profile: &'static str,
    instance_id: Option<String>,
    price_per_hour: Option<f64>,
    /// Where it came from, as a comment.
    source: String,
}

pub async fn run(config: Option<&Path>, args: &InitArgs) -> color_eyre::Result<ExitCode> {
    let path = match config {
        Some(path) => path.to_path_buf(),
        None => std::env::var_os("RIGWATCH_CONFIG")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| crate::config::paths::config_dir().map(|d| d.join("fleet.toml")))
            .ok_or_else(|| eyre!("no home or XDG_CONFIG_HOME to put fleet.toml in"))?,
    };
    if !args.print && path.exists() {
        return Err(super::usage(format!(
            "{} already exists; init never overwrites a config. See what it would write with \
             `rigwatch init --print`, then merge by hand",
            path.display()
        )));
    }
    let mut drafts = Vec::new();
    if let Some(pattern) = &args.from_ssh_config {
        let file = args
            .ssh_config
            .clone()
            .or_else(|| crate::config::paths::home_dir().map(|h| h.join(".ssh/config")))
            .ok_or_else(|| eyre!("no home to find ~/.ssh/config in; pass --ssh-config PATH"))?;
        let names = ssh_hosts(&file, 0)?;
        let matched: Vec<String> = names
            .into_iter()
            .filter(|n| crate::glob::matches(pattern, n))
            .collect();
        if matched.is_empty() {
            return Err(super::usage(format!(
                "no Host in {} matches {pattern:?}",
                file.display()
            )));
        }
        drafts.extend(matched.into_iter().map(|name| Draft {
            ssh: Some(name.clone()),
            name,
            profile: "generic-ssh",
            instance_id: None,
            price_per_hour: None,
            source: format!("Host in {}", file.display()),
        }));
    }
    for (wanted, provider) in [
        (args.from_vastai, Provider::Vastai),
        (args.from_runpod, Provider::Runpod),
    ] {
        if wanted {
            let program = PathBuf::from(provider.default_program());
            let states = crate::provider::query(provider, &program, PROVIDER_TIMEOUT)
                .await
                .wrap_err_with(|| format!("cannot import from {}", provider.default_program()))?;
            drafts.extend(states.iter().filter_map(|s| from_provider(provider, s)));
        }
    }
    let text = render(
        &unique(drafts),
        args.ssh_config.as_deref(),
        chrono::Utc::now(),
    );
    if args.print {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .wrap_err_with(|| format!("cannot create {}", dir.display()))?;
    }
    // create_new: a config that appeared since the check above is still never overwritten.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .wrap_err_with(|| format!("cannot write {}", path.display()))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .wrap_err_with(|| format!("cannot write {}", path.display()))?;
    print!("{text}");
    eprintln!(
        "rigwatch: wrote {}. Next: `rigwatch check`, then `rigwatch`",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The concrete Host names of an ssh config (patterns and negations skipped), following
/// Include as ssh does (relative paths from ~/.ssh, `*`/`?` in the file name), 16 deep at most.
fn ssh_hosts(file: &Path, depth: u32) -> color_eyre::Result<Vec<String>> {
    if depth > 16 {
        return Err(eyre!("{}: Include nested deeper than 16", file.display()));
    }
    let text = std::fs::read_to_string(file)
        .wrap_err_with(|| format!("cannot read {}", file.display()))?;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let (key, rest) = match line.split_once(|c: char| c.is_whitespace() || c == '=') {
            Some((k, r)) => (
                k,
                r.trim_start_matches(|c: char| c.is_whitespace() || c == '='),
            ),
            None => continue,
        };
        if key.eq_ignore_ascii_case("Host") {
            names.extend(
                rest.split_whitespace()
                    .filter(|n| !n.contains(['*', '?', '!']))
                    .map(String::from),
            );
        } else if key.eq_ignore_ascii_case("Include") {
            for pattern in rest.split_whitespace() {
                for included in include_paths(file, pattern) {
                    names.extend(ssh_hosts(&included, depth + 1)?);
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|n| seen.insert(n.clone()));
    Ok(names)
}

fn include_paths(from: &Path, pattern: &str) -> Vec<PathBuf> {
    let expanded = match pattern.strip_prefix("~/") {
        Some(rest) => {
            crate::config::paths::home_dir().map_or(PathBuf::from(pattern), |h| h.join(rest))
        }
        None => PathBuf::from(pattern),
    };
    let full = if expanded.is_absolute() {
        expanded
    } else {
        from.parent().unwrap_or(Path::new(".")).join(expanded)
    };
    let (Some(dir), Some(name)) = (full.parent(), full.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    if !name.contains(['*', '?']) {
        return vec![full.clone()]
            .into_iter()
            .filter(|p| p.is_file())
            .collect();
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| crate::glob::matches(name, n))
        })
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found
}

/// A provider's instance as a host; destroyed ones are left out.
fn from_provider(provider: Provider, s: &ProviderState) -> Option<Draft> {
    if s.state == InstanceState::Destroyed {
        return None;
    }
    let (profile, user, prefix) = match provider {
        Provider::Vastai => ("vastai", "root", "vast"),
        Provider::Runpod => ("runpod", "root", "runpod"),
    };
    let label = s
        .label
        .as_deref()
        .map(|l| crate::sanitize::line(l, 40))
        .filter(|l| !l.trim().is_empty());
    Some(Draft {
        name: label.unwrap_or_else(|| format!("{prefix}-{}", s.instance_id)),
        ssh: s
            .ssh
            .first()
            .map(|e| format!("{user}@{}:{}", e.host, e.port)),
        profile,
        instance_id: Some(s.instance_id.clone()),
        price_per_hour: s.price_per_hour,
        source: format!(
            "{} instance {} ({})",
            provider.default_program(),
            s.instance_id,
            s.state.word()
        ),
    })
}

/// Names made unique in order: a second `train` becomes `train-2`.
fn unique(drafts: Vec<Draft>) -> Vec<Draft> {
    let mut taken = std::collections::BTreeSet::new();
    drafts
        .into_iter()
        .map(|mut d| {
            let base = d.name.clone();
            let mut n = 1;
            while !taken.insert(d.name.clone()) {
                n += 1;
                d.name = format!("{base}-{n}");
            }
            d
        })
        .collect()
}

/// A TOML basic string (quotes and escapes by the toml crate).
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn render(
    drafts: &[Draft],
    ssh_config: Option<&Path>,
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    let mut out = format!(
        "# rigwatch fleet, written by `rigwatch init` on {}.\n\
         # Every key is in docs/configuration.md. Check it with `rigwatch check`, then\n\
         # watch the fleet with `rigwatch`.\n\n\
         # poll_secs = 2         # how often each box is probed\n\
         # accept_new = false    # trust a box's host key on first contact (ssh's accept-new)\n\
         # theme = \"dark\"        # dark, light, high-contrast\n",
        now.format("%Y-%m-%d")
    );
    if let Some(file) = ssh_config {
        out.push_str(&format!(
            "ssh_config = {}  # hosts resolve through this file\n",
            quoted(&file.display().to_string())
        ));
    }
    if drafts.is_empty() {
        out.push_str(
            "\n# One [[host]] per box; uncomment and fill in:\n\
             # [[host]]\n\
             # name = \"gpu-1\"\n\
             # ssh = \"root@203.0.113.7:22\"     # or a ~/.ssh/config alias\n\
             # profile = \"generic-ssh\"         # `rigwatch profiles` lists them\n\
             # run = \"train\"                   # the tmux session the run lives in\n\
             # log = \"/root/run/train.log\"\n\
             # ckpt_dir = \"/root/run/ckpt\"\n\
             # price_per_hour = 2.49\n",
        );
    }
    for d in drafts {
        let mark = if d.ssh.is_some() { "" } else { "# " };
        out.push_str(&format!(
            "\n# from {}\n",
            crate::sanitize::line(&d.source, 200)
        ));
        if d.ssh.is_none() {
            out.push_str(
                "# no SSH endpoint listed yet (still starting?): fill in ssh, then uncomment\n",
            );
        }
        out.push_str(&format!(
            "{mark}[[host]]\n{mark}name = {}\n",
            quoted(&d.name)
        ));
        out.push_str(&format!(
            "{mark}ssh = {}\n",
            quoted(d.ssh.as_deref().unwrap_or("root@HOST:PORT"))
        ));
        out.push_str(&format!("{mark}profile = {}\n", quoted(d.profile)));
        if let Some(id) = &d.instance_id {
            out.push_str(&format!("{mark}instance_id = {}\n", quoted(id)));
        }
        if let Some(price) = d.price_per_hour {
            out.push_str(&format!(
                "{mark}price_per_hour = {price}  # the provider's own figure wins while its CLI answers\n"
            ));
        }
        out.push_str("# run = \"train\"    # the tmux session the run lives in\n");
    }
    out
}

#[cfg(test)]
#[path = "init_tests.rs"]
mod tests;

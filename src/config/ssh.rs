//! What OpenSSH itself would do for a host, asked of `ssh -G` so that Include, Match, wildcards
//! and first-value-wins behave exactly as the user's own `ssh` does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::fleet::SshTarget;
use super::paths::home_dir;

/// Everything needed to open one SSH connection to one host.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedHost {
    /// The name the user gave (alias or host), kept for messages and `%n`.
    pub original: String,
    pub user: String,
    pub hostname: String,
    pub port: u16,
    pub identity_files: Vec<PathBuf>,
    pub identities_only: bool,
    /// The immediate jump host, already resolved; itself possibly behind another jump.
    pub proxy_jump: Option<Box<ResolvedHost>>,
    pub known_hosts_files: Vec<PathBuf>,
    pub host_key_alias: Option<String>,
    /// `HashKnownHosts yes`: entries rigwatch adds are hashed, as OpenSSH would add them.
    pub hash_known_hosts: bool,
    pub keepalive_interval: Option<Duration>,
    pub keepalive_max: Option<u32>,
    pub connect_timeout: Option<Duration>,
}

impl ResolvedHost {
    /// The name known_hosts files record this host under.
    pub fn known_hosts_name(&self) -> String {
        let host = self.host_key_alias.as_deref().unwrap_or(&self.hostname);
        if self.port == 22 {
            host.to_string()
        } else {
            format!("[{host}]:{}", self.port)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "cannot run `ssh -G` to read ~/.ssh/config for {host}: {source}; install openssh-client"
    )]
    Spawn {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`ssh -G {host}` failed: {stderr}")]
    Failed { host: String, stderr: String },
    #[error("`ssh -G {host}`: {reason}")]
    Output { host: String, reason: String },
    #[error("ProxyJump chain for {host} is longer than {MAX_JUMPS} hops")]
    TooManyJumps { host: String },
}

const MAX_JUMPS: usize = 8;

/// Resolves a target through `ssh -G`, following ProxyJump one hop at a time.
pub async fn resolve(
    target: &SshTarget,
    ssh_config: Option<&Path>,
) -> Result<ResolvedHost, ResolveError> {
    resolve_hop(target, ssh_config, None, 0).await
}

async fn resolve_hop(
    target: &SshTarget,
    ssh_config: Option<&Path>,
    jump_override: Option<&str>,
    depth: usize,
) -> Result<ResolvedHost, ResolveError> {
    if depth > MAX_JUMPS {
        return Err(ResolveError::TooManyJumps {
            host: target.host.clone(),
        });
    }
    let text = run_ssh_g(target, ssh_config).await?;
    let mut resolved = parse_ssh_g(&target.host, &text).map_err(|reason| ResolveError::Output {
        host: target.host.clone(),
        reason,
    })?;
    let jump_spec = match jump_override {
        Some(spec) => Some(spec.to_string()),
        None => ssh_g_values(&text)
            .remove("proxyjump")
            .and_then(|v| v.into_iter().next()),
    };
    if let Some(spec) = jump_spec.filter(|s| !s.eq_ignore_ascii_case("none") && !s.is_empty()) {
        // "a,b" means: reach b through a, then the target through b.
        let (before, last) = match spec.rsplit_once(',') {
            Some((before, last)) => (Some(before), last),
            None => (None, spec.as_str()),
        };
        let hop = parse_jump(last).map_err(|reason| ResolveError::Output {
            host: target.host.clone(),
            reason: format!("ProxyJump {spec:?}: {reason}"),
        })?;
        let jump = Box::pin(resolve_hop(
            &hop,
            ssh_config,
            Some(before.unwrap_or("none")),
            depth + 1,
        ))
        .await?;
        resolved.proxy_jump = Some(Box::new(jump));
    }
    Ok(resolved)
}

fn parse_jump(spec: &str) -> Result<SshTarget, String> {
    let spec = spec.strip_prefix("ssh://").unwrap_or(spec);
    SshTarget::parse(spec)
}

async fn run_ssh_g(target: &SshTarget, ssh_config: Option<&Path>) -> Result<String, ResolveError> {
    let mut cmd = tokio::process::Command::new("ssh");
    cmd.arg("-G");
    if let Some(path) = ssh_config {
        cmd.arg("-F").arg(path);
    }
    if let Some(user) = &target.user {
        cmd.arg("-l").arg(user);
    }
    if let Some(port) = target.port {
        cmd.arg("-p").arg(port.to_string());
    }
    cmd.arg("--").arg(&target.host);
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let run = tokio::time::timeout(Duration::from_secs(10), cmd.output());
    let output = match run.await {
        Ok(Ok(out)) => out,
        Ok(Err(source)) => {
            return Err(ResolveError::Spawn {
                host: target.host.clone(),
                source,
            });
        }
        Err(_) => {
            return Err(ResolveError::Failed {
                host: target.host.clone(),
                stderr: "timed out after 10s".into(),
            });
        }
    };
    if !output.status.success() {
        return Err(ResolveError::Failed {
            host: target.host.clone(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    String::from_utf8(output.stdout).map_err(|_| ResolveError::Output {
        host: target.host.clone(),
        reason: "output is not UTF-8".into(),
    })
}

fn ssh_g_values(text: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for line in text.lines() {
        if let Some((key, value)) = line.trim().split_once(' ') {
            map.entry(key.to_ascii_lowercase())
                .or_default()
                .push(value.trim().to_string());
        }
    }
    map
}

/// Parses `ssh -G` output; pure, so it is tested on captured text.
pub fn parse_ssh_g(original: &str, text: &str) -> Result<ResolvedHost, String> {
    let values = ssh_g_values(text);
    let first = |key: &str| values.get(key).and_then(|v| v.first()).cloned();
    let hostname = first("hostname").ok_or("no hostname line")?;
    let user = first("user").ok_or("no user line")?;
    let port: u16 = first("port")
        .ok_or("no port line")?
        .parse()
        .map_err(|_| "port is not a number".to_string())?;
    let expand = |raw: &str| expand_tokens(raw, original, &hostname, &user, port);
    let identity_files = values
        .get("identityfile")
        .map(|v| v.iter().map(|f| PathBuf::from(expand(f))).collect())
        .unwrap_or_default();
    let mut known_hosts_files: Vec<PathBuf> = Vec::new();
    for key in ["userknownhostsfile", "globalknownhostsfile"] {
        for line in values.get(key).into_iter().flatten() {
            known_hosts_files.extend(line.split_whitespace().map(|f| PathBuf::from(expand(f))));
        }
    }
    let secs = |key: &str| {
        first(key)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
    };
    Ok(ResolvedHost {
        original: original.to_string(),
        identity_files,
        identities_only: first("identitiesonly").is_some_and(|v| v == "yes"),
        proxy_jump: None,
        known_hosts_files,
        host_key_alias: first("hostkeyalias").filter(|v| v != "none"),
        hash_known_hosts: first("hashknownhosts").is_some_and(|v| v == "yes"),
        keepalive_interval: secs("serveraliveinterval"),
        keepalive_max: first("serveralivecountmax").and_then(|v| v.parse().ok()),
        connect_timeout: first("connecttimeout")
            .filter(|v| v != "none")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|s| *s > 0)
            .map(Duration::from_secs),
        hostname,
        user,
        port,
    })
}

/// The `~` and `%` tokens OpenSSH expands in IdentityFile and known_hosts paths.
fn expand_tokens(raw: &str, original: &str, hostname: &str, user: &str, port: u16) -> String {
    let home = home_dir()
        .map(|h| h.display().to_string())
        .unwrap_or_default();
    let raw = match raw.strip_prefix("~/") {
        Some(rest) => format!("{home}/{rest}"),
        None => raw.to_string(),
    };
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('d') => out.push_str(&home),
            Some('h') => out.push_str(hostname),
            Some('n') => out.push_str(original),
            Some('p') => out.push_str(&port.to_string()),
            Some('r') => out.push_str(user),
            Some('u') => out.push_str(&std::env::var("USER").unwrap_or_default()),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "user root\nhostname 10.0.0.7\nport 2222\nidentityfile %d/.ssh/id_%r\n\
identityfile /keys/%h\nuserknownhostsfile /k/one /k/two\nglobalknownhostsfile /etc/ssh/ssh_known_hosts\n\
serveraliveinterval 0\nserveralivecountmax 3\nconnecttimeout none\nproxyjump jump@b:2200\n";

    #[test]
    fn ssh_g_output_is_read_and_tokens_expanded() {
        let r = parse_ssh_g("box", SAMPLE).expect("parses");
        assert_eq!(
            (r.user.as_str(), r.hostname.as_str(), r.port),
            ("root", "10.0.0.7", 2222)
        );
        assert!(
            r.identity_files[0]
                .to_string_lossy()
                .ends_with("/.ssh/id_root")
        );
        assert_eq!(r.identity_files[1], PathBuf::from("/keys/10.0.0.7"));
        assert_eq!(r.known_hosts_files.len(), 3);
        assert_eq!(r.keepalive_interval, None);
        assert_eq!(r.connect_timeout, None);
        assert_eq!(r.known_hosts_name(), "[10.0.0.7]:2222");
    }

    #[test]
    fn missing_hostname_is_an_error() {
        assert!(parse_ssh_g("x", "user a\nport 22\n").is_err());
    }

    #[test]
    fn host_key_alias_replaces_the_lookup_name() {
        let r =
            parse_ssh_g("x", "user a\nhostname h\nport 22\nhostkeyalias boxalias\n").expect("ok");
        assert_eq!(r.known_hosts_name(), "boxalias");
    }
}

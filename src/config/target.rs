//! The `ssh = "..."` field: a Host alias for `~/.ssh/config`, or `user@host[:port]`.

/// What the `ssh = "..."` field names: an alias for `~/.ssh/config`, or user@host:port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl std::fmt::Display for SshTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

impl SshTarget {
    /// Whether the target is this machine by its address (`localhost`, 127.0.0.0/8, `::1`).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    pub fn parse(spec: &str) -> Result<SshTarget, String> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err("empty ssh target; expected user@host[:port] or a Host alias".into());
        }
        if let Some(bad) = spec.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "ssh target {spec:?} contains {bad:?}; expected user@host[:port] or a Host alias"
            ));
        }
        let (user, rest) = match spec.rsplit_once('@') {
            Some((u, r)) if !u.is_empty() => (Some(u.to_string()), r),
            Some(_) => return Err(format!("ssh target {spec:?} has an empty user before '@'")),
            None => (None, spec),
        };
        let (host, port) =
            split_host_port(rest).map_err(|e| format!("ssh target {spec:?}: {e}"))?;
        if host.is_empty() {
            return Err(format!("ssh target {spec:?} has no host"));
        }
        Ok(SshTarget { user, host, port })
    }
}

fn split_host_port(rest: &str) -> Result<(String, Option<u16>), String> {
    if let Some(inner) = rest.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or_else(|| "unclosed '[' in IPv6 address".to_string())?;
        return match after.strip_prefix(':') {
            Some(port) => Ok((host.to_string(), Some(parse_port(port)?))),
            None if after.is_empty() => Ok((host.to_string(), None)),
            None => Err(format!("unexpected {after:?} after ']'")),
        };
    }
    match rest.split_once(':') {
        Some((host, port)) if !port.contains(':') => {
            Ok((host.to_string(), Some(parse_port(port)?)))
        }
        Some(_) => Err("an IPv6 address must be written [addr]:port".into()),
        None => Ok((rest.to_string(), None)),
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("port {text:?} is not a number from 1 to 65535")),
        Ok(port) => Ok(port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_like_openssh_destinations() {
        assert_eq!(
            SshTarget::parse("[::1]:2200").map(|t| (t.host, t.port)),
            Ok(("::1".into(), Some(2200)))
        );
        assert_eq!(
            SshTarget::parse("me@box").map(|t| t.user),
            Ok(Some("me".into()))
        );
        assert!(SshTarget::parse("a b").is_err());
        assert!(SshTarget::parse("@h").is_err());
        assert!(SshTarget::parse("h:").is_err());
        assert!(SshTarget::parse("::1").is_err());
    }
}

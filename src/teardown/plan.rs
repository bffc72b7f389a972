//! What tearing a host down means, from its platform profile and its config: what is destroyed,
//! what survives, what keeps billing, and the exact command (or the console steps) it takes.

use crate::target::Target;
use serde::Serialize;

use crate::clocks::Profile;
use crate::config::{HostConfig, ProviderPrograms};
use crate::provider::Provider;
use crate::pull::remote::shell_quote;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Method {
    /// Run locally, once, on confirm.
    Command { command: String },
    /// Run once on the host itself through its pooled session, on confirm: a cluster job's
    /// `scancel` on the cluster's login node.
    OnHost { command: String },
    /// The platform has no API rigwatch can call: the user destroys it at the provider and
    /// confirms here that they did, which is recorded.
    Manual { steps: String },
    /// Cannot be done from here until the config says more.
    Blocked { why: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeardownPlan {
    pub host: String,
    /// What it tears down, for the words said about it (destroy a box, cancel a job, delete a
    /// Job).
    #[serde(skip)]
    pub target: Target,
    pub platform: String,
    pub instance_id: Option<String>,
    pub method: Method,
    pub destroyed: Vec<String>,
    pub survives: Vec<String>,
    pub reversible: bool,
    /// What still bills afterwards, in the profile's words.
    pub still_bills: String,
    /// The money per hour this stops, when the price is known.
    pub stops_per_hour: Option<f64>,
    pub currency: String,
}

/// What tearing `host` down means. A profile's destroy command that starts with its provider's
/// CLI (`vastai …`, `runpodctl …`) runs the same program `[providers]` names for prices and
/// state, so the destroy never runs a different (or missing) `vastai` than the one that works.
pub fn plan(host: &HostConfig, profile: &Profile, providers: &ProviderPrograms) -> TeardownPlan {
    let template = host.teardown.clone().or_else(|| {
        let command = profile.commands.destroy.clone()?;
        Some(with_provider_program(&command, &profile.name, providers))
    });
    let method = match template {
        None => Method::Manual {
            steps: format!(
                "Destroy {} in {}'s own console or app ({}), then type its name here to record \
                 that you did.",
                host.name, profile.title, profile.destroy.verb
            ),
        },
        Some(t) if t.contains("{instance_id}") => match &host.instance_id {
            Some(id) => Method::Command {
                command: t.replace("{instance_id}", &shell_quote(id)),
            },
            None => Method::Blocked {
                why: format!(
                    "the destroy command needs the instance id: set instance_id for {} in \
                     fleet.toml",
                    host.name
                ),
            },
        },
        Some(t) => Method::Command { command: t },
    };
    TeardownPlan {
        host: host.name.clone(),
        target: Target::Box(host.name.clone()),
        platform: profile.title.clone(),
        instance_id: host.instance_id.clone(),
        method,
        destroyed: profile.destroy.lost.clone(),
        survives: profile.destroy.survives.clone(),
        reversible: profile.destroy.reversible,
        still_bills: profile.destroy.bills.clone(),
        stops_per_hour: host.billing.price_per_hour,
        currency: host
            .billing
            .currency
            .clone()
            .unwrap_or_else(|| "USD".to_string()),
    }
}

fn with_provider_program(command: &str, platform: &str, providers: &ProviderPrograms) -> String {
    let Some(provider) = Provider::from_platform(platform) else {
        return command.to_string();
    };
    let configured = match provider {
        Provider::Vastai => providers.vastai.as_ref(),
        Provider::Runpod => providers.runpod.as_ref(),
    };
    match (configured, command.strip_prefix(provider.default_program())) {
        (Some(program), Some(rest)) if rest.is_empty() || rest.starts_with(' ') => {
            format!("{}{rest}", shell_quote(&program.to_string_lossy()))
        }
        _ => command.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clocks::profiles::{find, load_all};

    fn host(instance: Option<&str>, teardown: Option<&str>) -> HostConfig {
        let fleet = crate::config::fleet::parse(
            std::path::Path::new("f.toml"),
            "[[host]]\nname = \"a\"\nssh = \"root@h\"\nprice_per_hour = 1.5\n",
        )
        .expect("fleet");
        let mut h = fleet.hosts[0].clone();
        h.instance_id = instance.map(String::from);
        h.teardown = teardown.map(String::from);
        h
    }

    #[test]
    fn vastai_destroy_names_the_quoted_instance() {
        let profiles = load_all(None).expect("profiles");
        let vast = find(&profiles, "vastai").expect("vastai");
        let p = plan(
            &host(Some("12345"), None),
            vast,
            &ProviderPrograms::default(),
        );
        assert_eq!(
            p.method,
            Method::Command {
                command: "vastai destroy instance '12345' -y".into()
            }
        );
        assert!(!p.reversible);
        assert_eq!(p.stops_per_hour, Some(1.5));
        let blocked = plan(&host(None, None), vast, &ProviderPrograms::default());
        assert!(matches!(blocked.method, Method::Blocked { why } if why.contains("instance_id")));
        let configured = ProviderPrograms {
            vastai: Some("/home/u/.local/bin/vastai".into()),
            ..ProviderPrograms::default()
        };
        assert_eq!(
            plan(&host(Some("7"), None), vast, &configured).method,
            Method::Command {
                command: "'/home/u/.local/bin/vastai' destroy instance '7' -y".into()
            }
        );
        let blocked = plan(&host(None, None), vast, &configured);
        assert!(matches!(blocked.method, Method::Blocked { why } if why.contains("instance_id")));
    }

    #[test]
    fn generic_ssh_is_manual_and_a_host_override_wins() {
        let profiles = load_all(None).expect("profiles");
        let generic = find(&profiles, "generic-ssh").expect("generic");
        assert!(matches!(
            plan(&host(None, None), generic, &ProviderPrograms::default()).method,
            Method::Manual { .. }
        ));
        let custom = plan(
            &host(Some("9"), Some("mycloud rm {instance_id}")),
            generic,
            &ProviderPrograms::default(),
        );
        assert_eq!(
            custom.method,
            Method::Command {
                command: "mycloud rm '9'".into()
            }
        );
    }
}

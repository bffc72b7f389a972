//! What a box bills per hour, running and stopped, and in which of those states it is billed
//! now. The provider's own figures win where its CLI answered: they are what the invoice uses,
//! while a `price_per_hour` in fleet.toml is what the user remembered when renting.

use serde::Serialize;

use super::Profile;
use super::cost::Billed;
use crate::config::Billing;
use crate::provider::{InstanceState, ProviderState};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateSource {
    Provider,
    Config,
    /// The profile's fraction of the running price (stopped rate only).
    Profile,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub running: Option<f64>,
    pub stopped: Option<f64>,
    pub running_source: RateSource,
    pub stopped_source: RateSource,
}

/// The rate a box bills at while stopped or out of sight, from the user's figures alone: the
/// user's stopped price, else the profile's fraction of the running price, else (no stop
/// state) the full price.
pub fn stopped_rate(profile: Option<&Profile>, billing: &Billing) -> Option<f64> {
    rates(profile, billing, None).stopped
}

pub fn rates(
    profile: Option<&Profile>,
    billing: &Billing,
    provider: Option<&ProviderState>,
) -> Rates {
    let (running, running_source) = match (
        provider.and_then(|p| p.price_per_hour),
        billing.price_per_hour,
    ) {
        (Some(p), _) => (Some(p), RateSource::Provider),
        (None, Some(c)) => (Some(c), RateSource::Config),
        (None, None) => (None, RateSource::Unknown),
    };
    let (stopped, stopped_source) = if let Some(p) = provider.and_then(|p| p.stopped_price_per_hour)
    {
        (Some(p), RateSource::Provider)
    } else if let Some(c) = billing.stopped_price_per_hour {
        (Some(c), RateSource::Config)
    } else {
        match (profile, running) {
            (Some(p), Some(price)) if !p.stop.exists => (Some(price), running_source),
            (Some(p), Some(price)) => match p.stop.billing_fraction {
                Some(f) => (Some(price * f), RateSource::Profile),
                None => (None, RateSource::Unknown),
            },
            _ => (None, RateSource::Unknown),
        }
    };
    Rates {
        running,
        stopped,
        running_source,
        stopped_source,
    }
}

/// How the time since the last accrual is billed. Out of sight, the provider's word decides
/// between "stopped" and "running where rigwatch cannot see it"; without it, unseen time is
/// billed as stopped (the cheaper guess, said to be a guess in the clocks).
pub fn billed(link_up: bool, idle: bool, provider: Option<&InstanceState>) -> Billed {
    match (link_up, provider) {
        (_, Some(InstanceState::Destroyed)) => Billed::Gone,
        (true, _) if idle => Billed::Idle,
        (true, _) | (false, Some(InstanceState::Running | InstanceState::Starting)) => {
            Billed::Running
        }
        (false, _) => Billed::Unseen,
    }
}

impl Rates {
    /// The rate the fleet's burn counts for a box in `billed`.
    pub fn now(&self, billed: Billed) -> Option<f64> {
        match billed {
            Billed::Running | Billed::Idle => self.running,
            Billed::Unseen => self.stopped,
            Billed::Gone => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clocks::load_all;
    use crate::clocks::profiles::find;

    fn vast(state: InstanceState) -> ProviderState {
        ProviderState {
            ssh: Vec::new(),
            instance_id: "1".into(),
            state,
            price_per_hour: Some(0.36),
            stopped_price_per_hour: Some(0.01),
            state_since: None,
            ends_at: None,
            label: None,
        }
    }

    #[test]
    fn the_provider_figure_wins_over_the_remembered_one() {
        let profiles = load_all(None).expect("profiles");
        let billing = Billing {
            price_per_hour: Some(0.5),
            stopped_price_per_hour: Some(0.2),
            ..Billing::default()
        };
        let provider = vast(InstanceState::Running);
        let r = rates(find(&profiles, "vastai"), &billing, Some(&provider));
        assert_eq!((r.running, r.stopped), (Some(0.36), Some(0.01)));
        assert_eq!(r.running_source, RateSource::Provider);
        let r = rates(find(&profiles, "vastai"), &billing, None);
        assert_eq!((r.running, r.stopped), (Some(0.5), Some(0.2)));
        assert_eq!(r.stopped_source, RateSource::Config);
    }

    #[test]
    fn without_a_stopped_figure_the_profile_decides() {
        let profiles = load_all(None).expect("profiles");
        let billing = Billing {
            price_per_hour: Some(1.5),
            ..Billing::default()
        };
        let lambda = rates(find(&profiles, "lambda"), &billing, None);
        assert_eq!(lambda.stopped, Some(1.5), "no stop state: full price");
        let unknown = rates(None, &billing, None);
        assert_eq!(
            (unknown.stopped, unknown.stopped_source),
            (None, RateSource::Unknown)
        );
    }

    #[test]
    fn out_of_sight_the_provider_says_whether_it_still_runs() {
        use InstanceState::*;
        assert_eq!(billed(false, false, Some(&Running)), Billed::Running);
        assert_eq!(billed(false, false, Some(&Stopped)), Billed::Unseen);
        assert_eq!(billed(false, false, None), Billed::Unseen);
        assert_eq!(billed(true, true, Some(&Running)), Billed::Idle);
        assert_eq!(billed(true, false, None), Billed::Running);
        assert_eq!(billed(false, false, Some(&Destroyed)), Billed::Gone);
        let r = rates(None, &Billing::default(), Some(&vast(Stopped)));
        assert_eq!(r.now(Billed::Unseen), Some(0.01));
        assert_eq!(r.now(Billed::Gone), None);
    }
}

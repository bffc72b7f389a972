//! The teardown guard on the demo fleet, so a newcomer sees it work: the zombie box (a dead run
//! on vast.ai, VRAM held, billing) has a verified pull on record and the guard accepts its typed
//! name; every other box has none and is refused. Nothing here reads the real ledger, and
//! nothing can run: the demo's I/O ([`DemoIo`]) walks the same dialog as a live box, and its
//! destroy says what a real box would have run.

use chrono::{DateTime, Duration, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::clocks::Profile;
use crate::config::{FinalCheck, HostConfig};
use crate::ledger::{PullRecord, PulledFile};
use crate::pull::{Currentness, NotCurrent};
use crate::teardown::{
    CheckFound, Description, Ending, Finished, Method, PlanLooks, RunLooks, TeardownIo, describe,
    plan,
};

/// The dialog's I/O on a demo box: the demo's record of pulls instead of the ledger, the
/// profile's plan without looking for its program, and a destroy that runs nothing.
pub struct DemoIo {
    pub host: HostConfig,
    pub profile: Option<Profile>,
}

impl DemoIo {
    /// The check as it would be taken at `now` (fixed for screenshots).
    pub fn check_at(&self, run: RunLooks, now: DateTime<Utc>) -> CheckFound {
        let (last, currentness) = check(&self.host.name, now);
        let Some(profile) = &self.profile else {
            let why = format!("unknown platform profile {}", self.host.profile);
            return CheckFound {
                words: Description::default(),
                plan: PlanLooks::Blocked(why),
                currentness,
            };
        };
        let plan = plan(&self.host, profile, &Default::default());
        let looks = match &plan.method {
            Method::Blocked { why } => PlanLooks::Blocked(why.clone()),
            Method::Manual { .. } => PlanLooks::ByHand,
            Method::Command { .. } | Method::OnHost { .. } => PlanLooks::Runs,
        };
        CheckFound {
            words: describe(&plan, last.as_ref(), run, FinalCheck::OnBox),
            plan: looks,
            currentness,
        }
    }
}

impl TeardownIo for DemoIo {
    fn check(&self, run: RunLooks) -> BoxFuture<'_, CheckFound> {
        futures::future::ready(self.check_at(run, Utc::now())).boxed()
    }

    fn final_check(&self) -> BoxFuture<'_, Currentness> {
        futures::future::ready(check(&self.host.name, Utc::now()).1).boxed()
    }

    /// Says what a real box would have run, and that nothing was.
    fn destroy(&self, _pull_id: i64) -> BoxFuture<'_, Finished> {
        let method = self
            .profile
            .as_ref()
            .map(|p| plan(&self.host, p, &Default::default()).method);
        // The dialog already shows the command as "will run"; only a manual destroy needs
        // saying, and the end says once that nothing happened.
        let output = match &method {
            Some(Method::Command { .. } | Method::OnHost { .. }) => Vec::new(),
            _ => vec!["on a real box you would destroy it at the provider now".to_string()],
        };
        futures::future::ready(Finished {
            ending: Ending::Rehearsed,
            output,
            last: "Demo: the guard let it through; nothing was destroyed or recorded".into(),
        })
        .boxed()
    }
}

/// The demo box whose results are home.
pub const READY: &str = "h100-zombie";
/// Its vast.ai instance, shown in the plan.
pub const READY_INSTANCE: &str = "21437001";

/// What the guard's check finds for a demo box at `now`: the pull on record, and whether the
/// box still holds exactly what it brought home.
pub fn check(host: &str, now: DateTime<Utc>) -> (Option<PullRecord>, Currentness) {
    if host != READY {
        return (None, Currentness::NotCurrent(vec![NotCurrent::NeverPulled]));
    }
    let finished = now - Duration::minutes(12);
    let file = |path: &str, size: u64, sha: &str| PulledFile {
        remote_path: format!("/workspace/run/{path}"),
        size,
        mtime: (finished - Duration::minutes(30)).timestamp(),
        stamp: Some("demo".into()),
        remote_sha256: Some(sha.into()),
        local_path: format!("~/results/h100-zombie/{path}"),
        local_sha256: Some(sha.into()),
        sent: size,
        verified: true,
        unproven: false,
        local_stat: None,
        settled_since: None,
        verification: "demo: a replayed record".into(),
        error: None,
        at: finished,
    };
    let files = vec![
        file("ckpt/step_4000.safetensors", 1_073_741_824, "9f2c"),
        file("metrics.jsonl", 48_213, "41ab"),
        file("config.yaml", 812, "07de"),
    ];
    let bytes = files.iter().map(|f| f.size).sum();
    let record = PullRecord {
        id: 7,
        host: host.into(),
        started: finished - Duration::minutes(3),
        finished,
        paths: vec!["/workspace/run".into()],
        unmatched: Vec::new(),
        instance_id: Some(READY_INSTANCE.into()),
        files,
        local_disk_full: false,
    };
    let current = Currentness::Current {
        pull_id: record.id,
        files: record.files.len(),
        bytes,
        fingerprint: 0,
    };
    (Some(record), current)
}

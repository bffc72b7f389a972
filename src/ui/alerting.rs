//! What the live dashboard keeps outside the screen: alerts sent as `rigwatch watch` sends
//! them, silences (`S`), and cost and last-seen saved every minute.

use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;

use super::app::App;
use super::event_loop::Source;
use super::jobs::JobMsg;
use crate::monitor::FleetState;

/// The live dashboard sends alerts as `rigwatch watch` does: the same conditions, engine,
/// rules and sinks, silences obeyed. It takes the alert states a watch saved (so it does not
/// repeat what was sent) but does not write them: a watch running beside it owns that file.
pub(super) struct Alerting {
    engine: crate::alerts::engine::Engine,
    notices: crate::alerts::notices::Notices,
    rules: Vec<crate::config::alerts::AlertRule>,
}

impl Alerting {
    pub(super) fn new(source: &Source) -> Option<Alerting> {
        let Source::Live { fleet, .. } = source else {
            return None;
        };
        let mut engine =
            crate::alerts::engine::Engine::new(crate::alerts::engine::Timing::of(&fleet.alerts));
        if let Some(path) = crate::config::paths::state_dir().map(|d| d.join("alerts.json")) {
            engine.load(&path);
        }
        Some(Alerting {
            engine,
            notices: Default::default(),
            rules: fleet.alerts.rules.clone(),
        })
    }

    /// Judges the fleet and sends what changed; a failed delivery reaches the status bar.
    pub(super) fn tick(&mut self, state: &FleetState, app: &App, tx: &mpsc::Sender<JobMsg>) {
        let a = self;
        let now = Utc::now();
        let seen = crate::alerts::conditions(state, now);
        let happened = a.notices.from_state(state, now);
        for event in a.engine.step(&seen, now).into_iter().chain(happened) {
            if app.silenced.contains_key(&event.host) {
                continue;
            }
            let event = event.placed(state.hosts.iter().map(|h| &h.config));
            let tx = tx.clone();
            crate::alerts::sinks::dispatch(&a.rules, &event, move |why| {
                let _ = tx.try_send(JobMsg::Notice(why));
            });
        }
    }
}

/// Silences a host for two hours in the file `rigwatch watch` reads, or lifts its silence.
/// The demo has no watch to silence and writes nothing.
pub(super) fn toggle_silence(app: &mut App, source: &Source, host: &str) {
    use crate::alerts::silences;
    let now = Utc::now();
    let Some(path) = silences::path().filter(|_| matches!(source, Source::Live { .. })) else {
        app.notice =
            Some("demo: nothing to silence; `rigwatch watch` obeys S on a live fleet".into());
        return;
    };
    let mut all = silences::load(&path, now);
    let notice = if all.remove(host).is_some() {
        format!("{host}: silence lifted")
    } else {
        let until = now + chrono::Duration::hours(2);
        all.insert(host.to_string(), until);
        format!(
            "{host}: alerts silenced until {} (S again lifts it)",
            until.format("%H:%M UTC")
        )
    };
    app.notice = Some(match silences::save(&path, &all) {
        Ok(()) => notice,
        Err(e) => format!("silence not saved to {}: {e}", path.display()),
    });
    app.silenced = all;
}

/// How often the live dashboard saves cost and last-seen.
pub(super) const SAVE_EVERY: Duration = Duration::from_secs(60);

pub(super) fn save_memory(state: &FleetState) {
    let path = crate::monitor::memory::path();
    let mut memory = crate::monitor::memory::load(path.as_deref());
    state.remember(&mut memory);
    if let Some(path) = path {
        // The quit path saves again and reports; a failed minute is tried again next minute.
        let _ = crate::monitor::memory::save(&path, &memory);
    }
}

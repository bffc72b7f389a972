//! `S`: a host's alerts silenced for two hours in the file every rigwatch reads, or lifted.

use chrono::Utc;

use super::app::App;

/// Silences a host for two hours in the file `rigwatch watch` reads, or lifts its silence.
/// The demo has no watch to silence and writes nothing.
pub(super) fn toggle_silence(app: &mut App, demo: bool, host: &str) {
    use crate::alerts::silences;
    let now = Utc::now();
    let Some(path) = silences::path().filter(|_| !demo) else {
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

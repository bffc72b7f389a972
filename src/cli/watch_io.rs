//! What `watch` does with a tick's events besides the runtime's sinks: one JSON line each on
//! stdout and in the events file; and the timers its loop waits on.

use std::io::Write as _;
use std::path::Path;

use crate::alerts::AlertEvent;

/// A tick that fires every `every`, or never.
pub(super) async fn every(timer: Option<&mut tokio::time::Interval>) {
    match timer {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

pub(super) async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One JSON line on stdout and in the events file. A file that cannot be written (a full disk)
/// is said once on stderr; watching goes on, and stdout still has every event.
pub(super) fn publish(event: &AlertEvent, file: Option<&Path>, failing: &mut bool) {
    let Ok(line) = crate::sanitize::json_line(event) else {
        return;
    };
    println!("{line}");
    let _ = std::io::stdout().flush();
    let Some(path) = file else {
        return;
    };
    let written = crate::config::paths::private_file(path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    match written {
        Ok(()) if *failing => {
            *failing = false;
            eprintln!("rigwatch: writing {} again", path.display());
        }
        Ok(()) => {}
        Err(e) if !*failing => {
            *failing = true;
            eprintln!(
                "rigwatch: cannot write {}: {e}; events still go to stdout",
                path.display()
            );
        }
        Err(_) => {}
    }
}

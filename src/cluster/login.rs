//! What rigwatch runs on a login node, bounded there: a read ends at its timeout or with its
//! channel, whichever comes first; a destroy at its timeout only.

use std::time::Duration;

/// `command` as the login node runs it: under `timeout` (GNU's ends the whole process group it
/// starts, so squeue and the shell around it go together, and KILL follows TERM after 2 s), a
/// second short of rigwatch's own `limit`, so the login node ends it before rigwatch gives up
/// on the channel; and ended with its channel too ([`with_the_channel`]). A hung squeue or sacct
/// never outlives the read (or the rigwatch) that started it: on a shared login node, piling
/// them up each period is what gets an account flagged. Without `timeout` there (not seen on a
/// Linux login node), the channel and rigwatch's own limit are the bounds. The command reads
/// no stdin: the channel's stdin is how its end is seen.
pub fn bounded(command: &str, limit: Duration) -> String {
    under_timeout(&with_the_channel(command), limit)
}

/// A destroy (`scancel`, a command a box's teardown runs on the box) as the host runs it: under
/// `timeout` as [`bounded`], but never ended with its channel: a destroy that began finishes
/// even if rigwatch is killed meanwhile, and the next start looks at what it did.
pub fn bounded_to_finish(command: &str, limit: Duration) -> String {
    under_timeout(command, limit)
}

fn under_timeout(command: &str, limit: Duration) -> String {
    let secs = (limit.as_secs_f64() - 1.0).floor().max(1.0);
    let quoted = crate::sanitize::shell_quote(command);
    format!(
        "if command -v timeout >/dev/null 2>&1; then exec timeout -k 2 {secs} sh -c {quoted}; \
         else exec sh -c {quoted}; fi"
    )
}

/// `command` in a shell that ends its whole process group when the channel's stdin ends: sshd
/// closes a command's stdin when the channel closes or the connection drops, and signals
/// nothing. The group is `timeout`'s own (it makes one), else the session's (sshd makes each
/// session its own), so nothing outside the command is touched. A background list's stdin is
/// /dev/null in a shell without job control, hence the copy on fd 3 first.
fn with_the_channel(command: &str) -> String {
    let quoted = crate::sanitize::shell_quote(command);
    format!(
        "exec 3<&0; {{ cat <&3; kill -TERM 0; }} >/dev/null 2>&1 & w=$!; \
         sh -c {quoted} </dev/null 3<&-; s=$?; kill $w 2>/dev/null; exit $s"
    )
}

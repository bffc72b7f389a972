//! What a pull still asks of a far box once its copy has ended. On a 100 ms link each round
//! trip after the last byte is a tenth of a second of every pull: a checkpoint's pull waited for
//! its SFTP handle's close to be answered, then asked the box for its second look at the file.
//! The look now follows the file's hash on the box, in the hashing's own command, while the
//! copy still runs; the close is sent and not waited for.

mod support;

use std::time::Duration;

use rigwatch::config::fleet;
use support::Lab;
use support::results::{box_to_pull, pull_on};

/// The box's own record of a pull of one checkpoint over a 200 ms link: sftp-server logs the
/// file's open and close, a `find` shim each second look (`find … -maxdepth 0`), all appended
/// to one log in the order they happened. The look comes before the close, so nothing is asked
/// after the copy's last read: the hash (16 MiB, a few ms on the box) and its look end while the
/// copy's reads still cross the link (at least two round trips, 0.4 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_s_second_look_is_asked_while_it_is_copied_not_after() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    let events = sshd.dir.join("events.log");
    sshd.external_sftp_logging(&events);
    sshd.shim_script(
        "find",
        &format!(
            "#!/bin/sh\ncase \" $* \" in *' -maxdepth 0 '*) echo look >> '{}';; esac\n\
             PATH=/usr/local/bin:/usr/bin:/bin exec find \"$@\"\n",
            events.display()
        ),
    );
    let ckpt = sshd.dir.join("workspace/run/final_ckpts/ckpt.bin");
    support::write_random(&ckpt, 16 << 20, 5);
    let proxy = support::delay::DelayProxy::start(sshd.port, Duration::from_millis(100));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry_via(&sshd, proxy.port),
        ckpt.parent().expect("folder").display(),
        lab.path("results/box").display()
    );
    let config = fleet::load(&lab.fleet("far.toml", "", &[("box", body)])).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    // The close is sent, not waited for: it reaches the box half a round trip later.
    let name = ckpt.display().to_string();
    let read = || std::fs::read_to_string(&events).unwrap_or_default();
    let closed = || read().contains(&format!("close \"{name}\""));
    support::wait_until(Duration::from_secs(10), closed).await;
    pool.shutdown().await;

    let log = read();
    assert!(
        record.files.iter().all(|f| f.is_good()),
        "{record:?}\n{log}"
    );
    assert_eq!(record.files.len(), 1, "{record:?}");
    let seen: Vec<&str> = log
        .lines()
        .filter_map(|l| match l {
            "look" => Some("look"),
            _ if l.contains(&format!("close \"{name}\"")) => Some("close"),
            _ if l.contains(&format!("open \"{name}\"")) => Some("open"),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen.iter().filter(|e| **e == "look").count(),
        1,
        "one second look at the checkpoint:\n{log}"
    );
    assert_eq!(
        seen.last(),
        Some(&"close"),
        "the box was asked something after the copy ended:\n{log}"
    );
}

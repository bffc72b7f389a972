//! A private tmux server per test: the real binary in a real terminal.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A private tmux server per test (`name` keeps parallel tests apart).
    pub fn start(name: &str, command: &str) -> Tmux {
        let socket = format!("rigwatch-e2e-{}-{name}", std::process::id());
        let out = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "48",
                command,
            ])
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmux { socket }
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("tmux")
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p"]).stdout).to_string()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }

    /// Waits until the screen satisfies `check`; panics with the last screen after `limit`.
    pub fn wait_for(&self, what: &str, limit: Duration, check: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < limit,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Escape alone, waited on until `shown` (what it closes) is gone: a key sent at once after
    /// it reaches the program with it, and the terminal reads the pair as Alt and that key.
    pub fn escape_closing(&self, shown: &str) {
        self.keys(&["Escape"]);
        self.wait_for(
            &format!("Escape to close {shown:?}"),
            Duration::from_secs(10),
            |s| !s.contains(shown),
        );
    }

    /// From now on, every byte the program writes to its terminal is appended to `path`.
    pub fn pipe_to(&self, path: &std::path::Path) {
        let out = self.run(&["pipe-pane", "-o", &format!("cat >> '{}'", path.display())]);
        assert!(out.status.success(), "pipe-pane failed");
    }

    pub fn alternate_screen_on(&self) -> bool {
        String::from_utf8_lossy(
            &self
                .run(&["display-message", "-p", "#{alternate_on}"])
                .stdout,
        )
        .trim()
            == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

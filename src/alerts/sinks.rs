//! Where an event goes: the terminal bell, a desktop notification, a program, a webhook, an
//! ntfy topic, Prometheus's Alertmanager. Every delivery runs in its own task, bounded by the rule's timeout and killed at
//! it, so a failing or hanging sink is reported and never holds up another or the watch.
//! HTTP goes through curl, which every box and laptop has, with its TLS, proxies and
//! certificates, rather than an HTTP stack built into rigwatch for one POST.

use tokio::process::Command;

use super::{AlertEvent, AlertState};
use crate::config::alerts::{AlertRule, Level, Sink};
use crate::process::Ended;
use crate::signals::Severity;

/// Whether `rule` wants `event` (kind, host, severity); quiet hours and silences are checked
/// by the caller, who knows the time and the silences.
pub fn wants(rule: &AlertRule, event: &AlertEvent) -> bool {
    let level = match event.severity {
        Severity::Info => Level::Info,
        Severity::Warn => Level::Warn,
        Severity::Crit => Level::Crit,
    };
    // A resolve is as loud as the alert it ends: a rule that sent the firing sends the end.
    let loud_enough = level >= rule.min_severity || event.state == AlertState::Resolved;
    let any = |globs: &[String], text: &str| {
        globs.is_empty() || globs.iter().any(|g| crate::glob::matches(g, text))
    };
    loud_enough && any(&rule.kinds, &event.kind.to_string()) && any(&rule.hosts, &event.host)
}

/// Each rule that wants the event gets it from its own task, outside its quiet hours; a
/// delivery that fails is told to `report` (stderr for `watch`, the status bar for the
/// dashboard, where stderr would tear the screen).
pub fn dispatch(
    rules: &[AlertRule],
    event: &AlertEvent,
    report: impl Fn(String) + Clone + Send + 'static,
) {
    let local = chrono::Local::now().time();
    for rule in rules {
        if !wants(rule, event) || rule.is_quiet(local) {
            continue;
        }
        let (rule, event, report) = (rule.clone(), event.clone(), report.clone());
        tokio::spawn(async move {
            if let Err(e) = deliver(&rule, &event).await {
                report(format!(
                    "alert {} {} not delivered: {}",
                    crate::sanitize::line(&event.host, 60),
                    event.kind,
                    crate::sanitize::line(&e, 400)
                ));
            }
        });
    }
}

/// Delivers `event` to the rule's sink; the error says what failed, for stderr.
pub async fn deliver(rule: &AlertRule, event: &AlertEvent) -> Result<(), String> {
    let json = serde_json::to_string(event).map_err(|e| e.to_string())?;
    let title = format!(
        "rigwatch: {} {} {}",
        crate::sanitize::line(&event.host, 60),
        event.kind,
        match event.state {
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
            AlertState::Notice => "",
        }
    );
    let message = crate::sanitize::words(&event.message, 500);
    match &rule.sink {
        Sink::Bell => {
            eprint!("\x07");
            Ok(())
        }
        Sink::Desktop => {
            let (program, args) = if which("notify-send") {
                ("notify-send", vec![title, message])
            } else if which("osascript") {
                let script = format!("display notification {:?} with title {:?}", message, title);
                ("osascript", vec!["-e".to_string(), script])
            } else {
                return Err("desktop sink: neither notify-send nor osascript is installed".into());
            };
            run(program, &args, None, &[], rule).await.map(drop)
        }
        Sink::Command(argv) => {
            let env = [
                ("RIGWATCH_HOST", event.host.clone()),
                ("RIGWATCH_KIND", event.kind.to_string()),
                ("RIGWATCH_SEVERITY", event.severity.name().to_string()),
                ("RIGWATCH_STATE", event.state.name().to_string()),
                ("RIGWATCH_MESSAGE", message),
            ];
            run(&argv[0], &argv[1..], Some(&json), &env, rule)
                .await
                .map(drop)
        }
        Sink::Webhook(url) => {
            let config = curl_config(rule, &[JSON], url, &json, Answer::Fail);
            run("curl", &curl_argv(), Some(&config), &[], rule)
                .await
                .map(drop)
        }
        Sink::Ntfy(url) => {
            let priority = match (event.state, event.severity) {
                (AlertState::Firing, Severity::Crit) => "Priority: high",
                _ => "Priority: default",
            };
            let title = format!("Title: {title}");
            let config = curl_config(rule, &[&title, priority], url, &message, Answer::Fail);
            run("curl", &curl_argv(), Some(&config), &[], rule)
                .await
                .map(drop)
        }
        Sink::Alertmanager { url, labels, hold } => {
            let body = super::alertmanager::body(event, labels, *hold).to_string();
            let endpoint = format!("{}/api/v2/alerts", url.trim_end_matches('/'));
            let config = curl_config(rule, &[JSON], &endpoint, &body, Answer::Status);
            let stdout = run("curl", &curl_argv(), Some(&config), &[], rule).await?;
            super::alertmanager::answer(&stdout)
        }
    }
}

const JSON: &str = "Content-Type: application/json";

/// What curl makes of the server's answer.
#[derive(Clone, Copy)]
enum Answer {
    /// A non-2xx status fails curl (exit 22, the status on stderr); the body is dropped.
    Fail,
    /// The body and then, on its own line, the status on stdout, for an error that quotes the
    /// server's own words (Alertmanager says which field it refused).
    Status,
}

/// curl reads its whole request from stdin as a config file: a webhook's or ntfy's URL carries
/// its token, and an argument is readable by every local user in `ps`.
fn curl_argv() -> Vec<String> {
    vec!["-K".into(), "-".into()]
}

/// The request as curl's config: quoted values (backslash, quote and line breaks escaped), the
/// body as `data-raw` so text starting with `@` is never read as a file name.
fn curl_config(
    rule: &AlertRule,
    headers: &[&str],
    url: &str,
    body: &str,
    answer: Answer,
) -> String {
    let quoted = |s: &str| {
        let escaped = s
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t");
        format!("\"{escaped}\"")
    };
    let answer = match answer {
        Answer::Fail => "fail",
        Answer::Status => "write-out = \"\\n%{http_code}\"",
    };
    let mut config = format!(
        "silent\nshow-error\n{answer}\nrequest = \"POST\"\nmax-time = {}\nurl = {}\n",
        rule.timeout.as_secs_f64(),
        quoted(url)
    );
    for header in headers {
        config.push_str(&format!("header = {}\n", quoted(header)));
    }
    config.push_str(&format!("data-raw = {}\n", quoted(body)));
    config
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Runs a sink program without a shell, `stdin` on its stdin; at the rule's timeout its whole
/// process group is ended (a script's own children too). Its stdout when it exits 0.
async fn run(
    program: &str,
    args: &[String],
    stdin: Option<&str>,
    env: &[(&str, String)],
    rule: &AlertRule,
) -> Result<Vec<u8>, String> {
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let done = crate::process::run(command, stdin.map(str::as_bytes), rule.timeout, STDERR_CAP)
        .await
        .map_err(|e| format!("{program}: cannot start: {e}"))?;
    let said = || crate::sanitize::words(&String::from_utf8_lossy(&done.stderr), 300);
    match done.ended {
        Ended::TimedOut(after) => Err(format!(
            "{program}: no answer within {}s; its process group was ended",
            after.as_secs_f64()
        )),
        Ended::Exited(status) if status.success() => Ok(done.stdout),
        Ended::Exited(status) => Err(format!(
            "{program} exited {}: {}",
            status
                .code()
                .map_or("by a signal".into(), |c| c.to_string()),
            said()
        )),
    }
}

/// Enough of a failing sink's stderr for its last words; the rest is drained.
const STDERR_CAP: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    /// The URL and its token reach curl on stdin, never in its arguments (`ps` shows those to
    /// every local user); the body goes whole, quotes and line breaks included.
    #[test]
    fn a_sink_url_never_appears_in_curls_arguments() {
        let url = "https://ntfy.sh/secret-topic-tk_0123456789";
        let rule = AlertRule {
            sink: Sink::Ntfy(url.into()),
            kinds: vec![],
            hosts: vec![],
            min_severity: crate::config::alerts::Level::Warn,
            timeout: std::time::Duration::from_secs(10),
            quiet: None,
        };
        let argv = curl_argv();
        assert!(argv.iter().all(|a| !a.contains("secret-topic")), "{argv:?}");
        let config = curl_config(
            &rule,
            &["Title: a \"b\""],
            url,
            "{\"m\": \"x\\ny\"}\n@no",
            Answer::Fail,
        );
        assert!(config.contains(&format!("url = \"{url}\"")), "{config}");
        assert!(config.contains(r#"header = "Title: a \"b\"""#), "{config}");
        assert!(
            config.contains(r#"data-raw = "{\"m\": \"x\\ny\"}\n@no""#),
            "{config}"
        );
        // Alertmanager's answer is kept for the error: no `fail`, the status after the body.
        let config = curl_config(&rule, &[JSON], "http://u:pw@am:9093", "[]", Answer::Status);
        assert!(!config.contains("\nfail\n"), "{config}");
        assert!(
            config.contains("write-out = \"\\n%{http_code}\"\n"),
            "{config}"
        );
    }
}

//! `:` opens a command line for the views and actions, as in k9s and vim: `:pull [TARGET]`,
//! `:teardown [TARGET]`, `:silence [TARGET]`, `:sort util`, `:filter TEXT`, `:roster`,
//! `:fleet`, `:detail [TARGET]`, `:ssh [TARGET]`, `:log [TARGET]`, `:pane [TARGET]`,
//! `:refresh`, `:help`, `:q`. A target is a box's name or a job's `cluster/id`; without one, a
//! command acts on what its key would (the focused pane's selection). Tab completes the
//! command, then the target; ↑/↓ recall the commands run before. A command names the same
//! action a key does; nothing here runs by itself.

use crossterm::event::{KeyCode, KeyEvent};

use super::app::{Action, App, SortKey, View};
use crate::fleet::FleetState;
use crate::target::Target;
use crate::transport::Handover;

/// Every command, completed in this order.
const COMMANDS: [&str; 15] = [
    "detail", "filter", "fleet", "help", "log", "pane", "pull", "q", "quit", "refresh", "roster",
    "silence", "sort", "ssh", "teardown",
];

/// Commands kept for ↑/↓.
const HISTORY: usize = 100;

/// The sort words `:sort` takes.
const SORTS: [(&str, SortKey); 4] = [
    ("worst", SortKey::Worst),
    ("name", SortKey::Name),
    ("util", SortKey::Gpu),
    ("platform", SortKey::Profile),
];

/// The longest common start of `words`.
fn common_prefix<'a>(words: &[&'a str]) -> &'a str {
    let Some(first) = words.first() else {
        return "";
    };
    let mut end = first.len();
    for w in &words[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(w.chars())
                .take_while(|((_, a), b)| a == b)
                .count(),
        );
    }
    first
        .get(
            ..first
                .char_indices()
                .nth(end)
                .map_or(first.len(), |(i, _)| i),
        )
        .unwrap_or("")
}

impl App {
    /// A key while the command line is open.
    pub(super) fn command_key(&mut self, key: KeyEvent, state: &FleetState) -> Action {
        let Some(line) = self.command.as_mut() else {
            return Action::None;
        };
        match key.code {
            // Backspace on an empty line closes it, as in vim.
            KeyCode::Esc => self.close_command(),
            KeyCode::Backspace if line.is_empty() => self.close_command(),
            KeyCode::Tab => {
                let (done, candidates) = complete(line, state);
                *line = done;
                self.prompt_cursor = None;
                // More than one way on: show them, as a shell's second Tab does.
                if candidates.len() > 1 {
                    const SHOWN: usize = 12;
                    let mut said = candidates[..candidates.len().min(SHOWN)].join("  ");
                    if candidates.len() > SHOWN {
                        said.push_str(&format!("  … {} more", candidates.len() - SHOWN));
                    }
                    self.notice = Some(crate::sanitize::line(&said, 300));
                }
            }
            KeyCode::Up | KeyCode::Down => {
                let last = self.command_history.len().checked_sub(1);
                self.history_at = match (key.code, self.history_at) {
                    (KeyCode::Up, None) => last,
                    (KeyCode::Up, Some(i)) => Some(i.saturating_sub(1)),
                    (_, Some(i)) if Some(i) < last => Some(i + 1),
                    _ => None,
                };
                *line = self
                    .history_at
                    .and_then(|i| self.command_history.get(i))
                    .cloned()
                    .unwrap_or_default();
                self.prompt_cursor = None;
            }
            KeyCode::Enter => {
                let text = std::mem::take(line);
                self.command = None;
                self.history_at = None;
                self.prompt_cursor = None;
                let text = text.trim();
                if !text.is_empty() && self.command_history.last().map(String::as_str) != Some(text)
                {
                    self.command_history.push(text.to_string());
                    // A session's worth; the oldest go first.
                    if self.command_history.len() > HISTORY {
                        self.command_history.remove(0);
                    }
                }
                return self.run_command(text, state);
            }
            _ => {
                let mut cursor = self.prompt_cursor;
                super::line_edit::edit(line, &mut cursor, key, 120);
                self.prompt_cursor = cursor;
            }
        }
        Action::None
    }

    fn close_command(&mut self) {
        self.command = None;
        self.history_at = None;
        self.prompt_cursor = None;
    }

    fn run_command(&mut self, text: &str, state: &FleetState) -> Action {
        let (word, arg) = match text.split_once(' ') {
            Some((w, a)) => (w, a.trim()),
            None => (text, ""),
        };
        // No name: what a key would act on (the focused pane's selection, or the open detail's).
        let target = |app: &App| -> Result<Target, String> {
            if arg.is_empty() {
                app.target(state)
            } else {
                named(state, arg).ok_or_else(|| {
                    format!(
                        "no box or cluster/job named {:?}",
                        crate::sanitize::line(arg, 40)
                    )
                })
            }
        };
        match word {
            "" => Action::None,
            "q" | "quit" => Action::Quit,
            "refresh" => Action::Refresh,
            "help" => {
                self.help = true;
                Action::None
            }
            "fleet" => {
                self.view = View::Fleet;
                Action::None
            }
            "roster" => {
                self.view = View::Roster;
                self.detail_scroll = 0;
                Action::None
            }
            "filter" => {
                self.filter = arg.chars().take(40).collect();
                self.view = View::Fleet;
                Action::None
            }
            "sort" => match SORTS.iter().find(|(w, _)| *w == arg) {
                Some((_, key)) => {
                    self.sort = *key;
                    self.notice = Some(format!("sorted by {}", key.word()));
                    Action::None
                }
                None => {
                    self.notice = Some("sort by: worst, name, util or platform".into());
                    Action::None
                }
            },
            "pull" | "teardown" | "silence" | "detail" | "ssh" | "log" | "pane" => {
                match target(self) {
                    Err(why) => {
                        self.notice = Some(why);
                        Action::None
                    }
                    Ok(target) => self.run_on(word, target, state),
                }
            }
            other => {
                self.notice = Some(format!(
                    "unknown command :{}; there are: {}",
                    crate::sanitize::line(other, 40),
                    COMMANDS.join(", ")
                ));
                Action::None
            }
        }
    }
}

impl App {
    /// A command that takes a target, on `target`.
    fn run_on(&mut self, word: &str, target: Target, state: &FleetState) -> Action {
        let what = match word {
            "pull" => return Action::Pull(target),
            "teardown" => return Action::Teardown(target),
            "silence" => return Action::Silence(target),
            "ssh" => Handover::Shell,
            "log" => Handover::Log,
            "pane" => Handover::Pane,
            _ => {
                self.detail_scroll = 0;
                match target {
                    Target::Box(host) => {
                        if !self.filter.is_empty()
                            && !self.visible(state).iter().any(|h| h.config.name == host)
                        {
                            self.notice = Some(format!(
                                "{host} is hidden in the fleet by the filter {:?} (Esc there \
                                 clears it)",
                                self.filter
                            ));
                        }
                        self.selected = Some(host);
                        self.view = View::Detail;
                    }
                    Target::Job(job) => {
                        self.job_selected = Some((job.cluster, job.id));
                        self.view = View::Job;
                    }
                }
                return Action::None;
            }
        };
        Action::Handover { target, what }
    }
}

/// A box by its name, or a job as the jobs pane names it: `cluster/id`.
fn named(state: &FleetState, name: &str) -> Option<Target> {
    if let Some(h) = state.host(name) {
        return Some(Target::Box(h.config.name.clone()));
    }
    let (cluster, id) = name.split_once('/')?;
    let c = state.cluster(cluster)?;
    c.jobs
        .iter()
        .any(|j| j.id == id)
        .then(|| Target::job(&c.name, c.scheduler, id))
}

/// `line` completed as far as it is unambiguous: the command word, then (for the commands that
/// take one) a host's name, a job's `cluster/id` or a sort word; with the candidates left.
fn complete(line: &str, state: &FleetState) -> (String, Vec<String>) {
    let owned = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match line.split_once(' ') {
        None => {
            let matches: Vec<&str> = COMMANDS
                .iter()
                .copied()
                .filter(|c| c.starts_with(line))
                .collect();
            let done = match matches.as_slice() {
                [one] => format!("{one} "),
                [] => line.to_string(),
                many => common_prefix(many).to_string(),
            };
            (done, owned(&matches))
        }
        Some((word, arg)) => {
            let mut targets: Vec<String> =
                state.hosts.iter().map(|h| h.config.name.clone()).collect();
            targets.extend(
                state
                    .clusters
                    .iter()
                    .flat_map(|c| c.jobs.iter().map(move |j| format!("{}/{}", c.name, j.id))),
            );
            let sorts: Vec<String> = SORTS.iter().map(|(w, _)| w.to_string()).collect();
            let choices = match word {
                "pull" | "teardown" | "silence" | "detail" | "ssh" | "log" | "pane" => targets,
                "sort" => sorts,
                _ => return (line.to_string(), Vec::new()),
            };
            let matches: Vec<&str> = choices
                .iter()
                .map(String::as_str)
                .filter(|c| c.starts_with(arg))
                .collect();
            let done = match matches.as_slice() {
                [one] => format!("{word} {one}"),
                [] => line.to_string(),
                many => format!("{word} {}", common_prefix(many)),
            };
            (done, owned(&matches))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn the_common_start_of_names() {
        assert_eq!(common_prefix(&["h100-idle", "h100-inodes"]), "h100-i");
        assert_eq!(common_prefix(&["quit", "q"]), "q");
        assert_eq!(common_prefix(&["roster"]), "roster");
        assert_eq!(common_prefix(&[]), "");
    }
}

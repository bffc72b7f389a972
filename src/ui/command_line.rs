//! `:` opens a command line for the views and actions, as in k9s and vim: `:pull [HOST]`,
//! `:teardown [HOST]`, `:silence [HOST]`, `:sort util`, `:filter TEXT`, `:roster`, `:fleet`,
//! `:detail [HOST]`, `:ssh [HOST]`, `:log [HOST]`, `:pane [HOST]`, `:refresh`, `:help`, `:q`. Tab completes the command, then a host's name.
//! A command names the same action a key does; nothing here runs by itself.

use crossterm::event::KeyCode;

use super::app::{Action, App, SortKey, View};
use crate::fleet::FleetState;
use crate::transport::Handover;

/// Every command, completed in this order.
const COMMANDS: [&str; 15] = [
    "detail", "filter", "fleet", "help", "log", "pane", "pull", "q", "quit", "refresh", "roster",
    "silence", "sort", "ssh", "teardown",
];

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
    pub(super) fn command_key(&mut self, code: KeyCode, state: &FleetState) -> Action {
        let Some(line) = self.command.as_mut() else {
            return Action::None;
        };
        match code {
            KeyCode::Esc => self.command = None,
            // Backspace on an empty line closes it, as in vim.
            KeyCode::Backspace if line.is_empty() => self.command = None,
            KeyCode::Backspace => {
                line.pop();
            }
            KeyCode::Tab => {
                let done = complete(line, state);
                *line = done;
            }
            KeyCode::Enter => {
                let text = std::mem::take(line);
                self.command = None;
                return self.run_command(text.trim(), state);
            }
            KeyCode::Char(c) if !c.is_control() && line.chars().count() < 120 => line.push(c),
            _ => {}
        }
        Action::None
    }

    fn run_command(&mut self, text: &str, state: &FleetState) -> Action {
        let (word, arg) = match text.split_once(' ') {
            Some((w, a)) => (w, a.trim()),
            None => (text, ""),
        };
        let host = |app: &App| -> Option<String> {
            if arg.is_empty() {
                app.selected_host(state).map(|h| h.config.name.clone())
            } else {
                state.host(arg).map(|h| h.config.name.clone())
            }
        };
        let no_host = |app: &mut App| {
            app.notice = Some(if arg.is_empty() {
                "no host selected".to_string()
            } else {
                format!("no host named {:?}", crate::sanitize::line(arg, 40))
            });
            Action::None
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
            "pull" | "teardown" | "silence" | "detail" | "ssh" | "log" | "pane" => match host(self)
            {
                None => no_host(self),
                Some(name) => match word {
                    "pull" => Action::Pull(name),
                    "ssh" | "log" | "pane" => Action::Handover {
                        host: name,
                        what: match word {
                            "ssh" => Handover::Shell,
                            "log" => Handover::Log,
                            _ => Handover::Pane,
                        },
                    },
                    "teardown" => Action::Teardown(name),
                    "silence" => Action::Silence(name),
                    _ => {
                        self.selected = Some(name);
                        self.detail_scroll = 0;
                        self.view = View::Detail;
                        Action::None
                    }
                },
            },
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

/// `line` completed as far as it is unambiguous: the command word, then (for the commands that
/// take one) a host's name or a sort word.
fn complete(line: &str, state: &FleetState) -> String {
    match line.split_once(' ') {
        None => {
            let matches: Vec<&str> = COMMANDS
                .iter()
                .copied()
                .filter(|c| c.starts_with(line))
                .collect();
            match matches.as_slice() {
                [one] => format!("{one} "),
                [] => line.to_string(),
                many => common_prefix(many).to_string(),
            }
        }
        Some((word, arg)) => {
            let hosts: Vec<&str> = state.hosts.iter().map(|h| h.config.name.as_str()).collect();
            let sorts: Vec<&str> = SORTS.iter().map(|(w, _)| *w).collect();
            let choices = match word {
                "pull" | "teardown" | "silence" | "detail" | "ssh" | "log" | "pane" => hosts,
                "sort" => sorts,
                _ => return line.to_string(),
            };
            let matches: Vec<&str> = choices.into_iter().filter(|c| c.starts_with(arg)).collect();
            match matches.as_slice() {
                [one] => format!("{word} {one}"),
                [] => line.to_string(),
                many => format!("{word} {}", common_prefix(many)),
            }
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

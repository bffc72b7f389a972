//! What the screen is showing and what keys do to it. Keys become actions, never I/O: the event
//! loop carries the action out and reports back.

use std::collections::BTreeMap;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::teardown_modal::{TeardownModal, event_of};
use crate::pull::Progress;
use crate::teardown::{Effect, Stage};
use crate::transport::Handover;

use crate::fleet::{FleetState, HostState};
use crate::signals::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Fleet,
    Detail,
    /// Every queue's cells across the fleet.
    Roster,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Hosts,
    /// The clusters' jobs (only when the fleet has a cluster).
    Jobs,
    Alerts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Worst,
    Name,
    Gpu,
    Profile,
}

impl SortKey {
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Worst => SortKey::Name,
            SortKey::Name => SortKey::Gpu,
            SortKey::Gpu => SortKey::Profile,
            SortKey::Profile => SortKey::Worst,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            SortKey::Worst => "worst first",
            SortKey::Name => "name",
            SortKey::Gpu => "GPU util",
            SortKey::Profile => "platform",
        }
    }
}

/// What the event loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    Quit,
    /// Poll now instead of at the next period.
    Refresh,
    Pull(String),
    Teardown(String),
    /// Pull a cluster's results for the job under the cursor: a Slurm cluster's login node, a
    /// Kubernetes Job's running pod.
    PullJob {
        cluster: String,
        job: String,
    },
    /// Cancel a cluster's job, through the same guard.
    TeardownJob {
        cluster: String,
        job: String,
    },
    /// The person's own `ssh` to the host (a shell, the log, the run's pane), run in the
    /// terminal while the dashboard waits.
    Handover {
        host: String,
        what: Handover,
    },
    /// End the processes holding a zombie GPU's VRAM (`K`, the host's name typed).
    Kill {
        host: String,
        targets: Vec<crate::probe::GpuProcess>,
    },
    /// Silence the host's alerts for two hours, or lift its silence.
    Silence(String),
    /// What the teardown dialog asks for (a check, the final look, the destroy), for the
    /// executor.
    Dialog {
        host: String,
        effects: Vec<Effect>,
    },
}

#[derive(Debug, Clone)]
pub struct App {
    pub view: View,
    pub pane: Pane,
    /// Selected host, by name, so a re-sort does not move the selection to another box.
    pub selected: Option<String>,
    pub filter: String,
    pub editing_filter: bool,
    /// The `:` command line while it is open.
    pub command: Option<String>,
    pub sort: SortKey,
    pub help: bool,
    /// How far the help is scrolled (it scrolls where it does not fit).
    pub help_scroll: u16,
    pub alerts_scroll: usize,
    /// The jobs pane's cursor, over every cluster's jobs in order.
    pub job_cursor: usize,
    pub detail_scroll: u16,
    /// The last scroll position with something left to show, as the last frame measured it:
    /// scrolling stops there, and `G` goes there. Written by the view that knows the wrapped
    /// height (a Cell, so drawing stays a read of the app).
    pub scroll_end: std::cell::Cell<u16>,
    /// A one-line message for the status bar (what a key did, or why it did nothing).
    pub notice: Option<String>,
    pub demo: bool,
    pub modal: Option<TeardownModal>,
    /// `K`'s dialog while it is open.
    pub kill: Option<super::kill_modal::KillModal>,
    /// Pulls in flight, by host, for the progress gauge.
    pub pulls: BTreeMap<String, Arc<Progress>>,
    /// How many times the teardown dialog was opened: each opening's checks are its own.
    pub openings: u64,
    /// Silenced hosts and until when (`rigwatch silence`, `S`), read each tick.
    pub silenced: crate::alerts::silences::Silences,
    /// Hosts and clusters another action holds (who, in a line), read each tick.
    pub holders: BTreeMap<String, String>,
    /// Where the last frame drew each pane, for the mouse (a Cell, so drawing stays a read).
    pub areas: std::cell::Cell<super::mouse::Areas>,
}

impl App {
    pub fn new(demo: bool) -> App {
        App {
            view: View::Fleet,
            pane: Pane::Hosts,
            selected: None,
            filter: String::new(),
            editing_filter: false,
            command: None,
            sort: SortKey::Worst,
            help: false,
            help_scroll: 0,
            alerts_scroll: 0,
            job_cursor: 0,
            detail_scroll: 0,
            scroll_end: std::cell::Cell::new(u16::MAX),
            notice: None,
            demo,
            modal: None,
            kill: None,
            pulls: BTreeMap::new(),
            openings: 0,
            silenced: BTreeMap::new(),
            holders: BTreeMap::new(),
            areas: std::cell::Cell::new(super::mouse::Areas::default()),
        }
    }

    /// Hosts in display order: filtered, then sorted.
    pub fn visible<'a>(&self, state: &'a FleetState) -> Vec<&'a HostState> {
        let needle = self.filter.to_lowercase();
        let mut hosts: Vec<&HostState> = state
            .hosts
            .iter()
            .filter(|h| {
                needle.is_empty()
                    || h.config.name.to_lowercase().contains(&needle)
                    || h.config.profile.to_lowercase().contains(&needle)
                    || h.link.word().contains(&needle)
                    // Refused logins and host keys are as unreachable as a dead network.
                    || (h.link.is_settled() && !h.link.is_usable() && "down".contains(&needle))
                    || h.signals
                        .iter()
                        .any(|s| format!("{:?}", s.kind).to_lowercase().contains(&needle))
            })
            .collect();
        let util = |h: &HostState| {
            h.history.latest_gpu().map_or(-1, |g| {
                g.gpus
                    .iter()
                    .filter_map(|x| x.util_gpu_pct)
                    .map(i64::from)
                    .max()
                    .unwrap_or(-1)
            })
        };
        match self.sort {
            SortKey::Worst => hosts.sort_by(|a, b| {
                rank(b)
                    .cmp(&rank(a))
                    .then_with(|| a.config.name.cmp(&b.config.name))
            }),
            SortKey::Name => hosts.sort_by(|a, b| a.config.name.cmp(&b.config.name)),
            SortKey::Gpu => hosts.sort_by_key(|h| std::cmp::Reverse(util(h))),
            SortKey::Profile => hosts.sort_by(|a, b| {
                a.config
                    .profile
                    .cmp(&b.config.profile)
                    .then_with(|| a.config.name.cmp(&b.config.name))
            }),
        }
        hosts
    }

    pub fn selected_index(&self, visible: &[&HostState]) -> usize {
        self.selected
            .as_ref()
            .and_then(|name| visible.iter().position(|h| &h.config.name == name))
            .unwrap_or(0)
    }

    pub fn selected_host<'a>(&self, state: &'a FleetState) -> Option<&'a HostState> {
        let visible = self.visible(state);
        visible.get(self.selected_index(&visible)).copied()
    }

    fn select(&mut self, visible: &[&HostState], index: usize) {
        self.selected = visible.get(index).map(|h| h.config.name.clone());
        self.detail_scroll = 0;
    }

    pub fn handle_key(&mut self, key: KeyEvent, state: &FleetState) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        if self.command.is_some() {
            return self.command_key(key.code, state);
        }
        if self.editing_filter {
            match key.code {
                KeyCode::Enter => self.editing_filter = false,
                KeyCode::Esc => {
                    self.editing_filter = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) if !c.is_control() && self.filter.chars().count() < 40 => {
                    self.filter.push(c)
                }
                _ => {}
            }
            return Action::None;
        }
        if self.kill.is_some() {
            return self.kill_key(key);
        }
        if let Some(modal) = &mut self.modal {
            let lines = match key.code {
                KeyCode::Up => -1,
                KeyCode::Down => 1,
                KeyCode::PageUp => -10,
                KeyCode::PageDown => 10,
                _ => 0,
            };
            if lines != 0 {
                modal.scroll_by(lines);
                return Action::None;
            }
            let Some(event) = event_of(key) else {
                return Action::None;
            };
            let effects = modal.dialog.handle(event);
            let host = modal.host().to_string();
            if modal.dialog.stage() == &Stage::Closed {
                self.modal = None;
            }
            return if effects.is_empty() {
                Action::None
            } else {
                Action::Dialog { host, effects }
            };
        }
        if self.help {
            match key.code {
                KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') => {
                    self.help = false;
                    self.help_scroll = 0;
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    self.help_scroll = self.help_scroll.saturating_add(1);
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    self.help_scroll = self.help_scroll.saturating_sub(1);
                }
                _ => {}
            }
            return Action::None;
        }
        self.notice = None;
        let visible = self.visible(state);
        let index = self.selected_index(&visible);
        let last = visible.len().saturating_sub(1);
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Esc if matches!(self.view, View::Detail | View::Roster) => {
                self.view = View::Fleet
            }
            KeyCode::Char('R') => {
                self.view = View::Roster;
                self.detail_scroll = 0;
            }
            KeyCode::Esc if !self.filter.is_empty() => self.filter.clear(),
            // In the events pane, Enter opens the host the event under the cursor is about.
            KeyCode::Enter if self.view == View::Fleet && self.pane == Pane::Alerts => {
                let last = state.events.len().saturating_sub(1);
                if let Some(event) = state.events.get(self.alerts_scroll.min(last))
                    && state.host(&event.host).is_some()
                {
                    self.selected = Some(event.host.clone());
                    self.detail_scroll = 0;
                    self.view = View::Detail;
                }
            }
            KeyCode::Enter if !visible.is_empty() => {
                self.select(&visible, index);
                self.view = View::Detail;
            }
            KeyCode::Tab | KeyCode::BackTab if self.view == View::Fleet => {
                let jobs = !state.clusters.is_empty();
                self.pane = match self.pane {
                    Pane::Hosts if jobs => Pane::Jobs,
                    Pane::Hosts | Pane::Jobs => Pane::Alerts,
                    Pane::Alerts => Pane::Hosts,
                };
            }
            KeyCode::Down
            | KeyCode::Up
            | KeyCode::Home
            | KeyCode::End
            | KeyCode::Char('j' | 'k' | 'g' | 'G' | 'T' | 'p')
                if self.view == View::Fleet && self.pane == Pane::Jobs =>
            {
                return self.job_key(key.code, state);
            }
            KeyCode::Down | KeyCode::Char('j') => self.move_by(&visible, index, 1),
            KeyCode::Up | KeyCode::Char('k') => self.move_by(&visible, index, -1),
            KeyCode::Right if self.view == View::Fleet && !visible.is_empty() => {
                self.select(&visible, index);
                self.view = View::Detail;
            }
            KeyCode::Left | KeyCode::Char('h') => self.view = View::Fleet,
            // In a scrolling view, first and last are its top and its end.
            KeyCode::Char('g') | KeyCode::Home if self.view != View::Fleet => {
                self.detail_scroll = 0;
            }
            KeyCode::Char('G') | KeyCode::End if self.view != View::Fleet => {
                self.detail_scroll = self.scroll_end.get();
            }
            KeyCode::Char('g') | KeyCode::Home => self.jump(&visible, 0),
            KeyCode::Char('G') | KeyCode::End => self.jump(&visible, last),
            KeyCode::Char(':') => self.command = Some(String::new()),
            KeyCode::Char('/') => {
                self.editing_filter = true;
                self.view = View::Fleet;
            }
            KeyCode::Char('s') => return self.handover(&visible, index, Handover::Shell),
            KeyCode::Char('l') => return self.handover(&visible, index, Handover::Log),
            KeyCode::Char('L') => return self.handover(&visible, index, Handover::Pane),
            KeyCode::Char('o') => {
                self.sort = self.sort.next();
                self.notice = Some(format!("sorted by {}", self.sort.word()));
            }
            KeyCode::Char('r') => return Action::Refresh,
            KeyCode::Char('p') => return self.host_action(&visible, index, Action::Pull),
            KeyCode::Char('T') => return self.host_action(&visible, index, Action::Teardown),
            KeyCode::Char('S') => return self.host_action(&visible, index, Action::Silence),
            KeyCode::Char('K') => {
                if let Some(h) = visible.get(index) {
                    match super::kill_modal::open(h) {
                        Ok(modal) => self.kill = Some(modal),
                        Err(why) => self.notice = Some(why),
                    }
                }
            }
            _ => {}
        }
        Action::None
    }

    fn host_action(
        &self,
        visible: &[&HostState],
        index: usize,
        make: fn(String) -> Action,
    ) -> Action {
        visible
            .get(index)
            .map_or(Action::None, |h| make(h.config.name.clone()))
    }

    /// A key while `K`'s dialog is open: Esc closes it (the answer of a kill already sent still
    /// reaches the status bar), Enter closes it once answered.
    fn kill_key(&mut self, key: KeyEvent) -> Action {
        use super::kill_modal::KillStage;
        let Some(modal) = self.kill.as_mut() else {
            return Action::None;
        };
        match (key.code, &modal.stage) {
            (KeyCode::Esc, _) | (KeyCode::Enter, KillStage::Done { .. }) => self.kill = None,
            _ => {
                if let Some(event) = event_of(key)
                    && modal.key(event)
                {
                    return Action::Kill {
                        host: modal.host.clone(),
                        targets: modal.targets.clone(),
                    };
                }
            }
        }
        Action::None
    }

    fn handover(&self, visible: &[&HostState], index: usize, what: Handover) -> Action {
        visible
            .get(index)
            .map_or(Action::None, |h| Action::Handover {
                host: h.config.name.clone(),
                what,
            })
    }

    fn move_by(&mut self, visible: &[&HostState], index: usize, delta: i64) {
        match (self.view, self.pane) {
            (View::Detail | View::Roster, _) => {
                self.detail_scroll = if delta > 0 {
                    self.detail_scroll
                        .saturating_add(1)
                        .min(self.scroll_end.get())
                } else {
                    self.detail_scroll.saturating_sub(1)
                };
            }
            // The events pane's cursor: the event Enter opens.
            (View::Fleet, Pane::Alerts) => {
                self.alerts_scroll = if delta > 0 {
                    self.alerts_scroll.saturating_add(1)
                } else {
                    self.alerts_scroll.saturating_sub(1)
                };
            }
            // Its keys are the jobs pane's own (`job_key`).
            (View::Fleet, Pane::Jobs) => {}
            (View::Fleet, Pane::Hosts) => {
                let next = (index as i64 + delta).clamp(0, visible.len().saturating_sub(1) as i64)
                    as usize;
                self.select(visible, next);
            }
        }
    }

    fn jump(&mut self, visible: &[&HostState], index: usize) {
        match (self.view, self.pane) {
            (View::Fleet, Pane::Alerts) => {
                self.alerts_scroll = if index == 0 { 0 } else { usize::MAX / 2 }
            }
            (View::Detail | View::Roster, _) => {
                self.detail_scroll = if index == 0 { 0 } else { u16::MAX / 2 }
            }
            _ => self.select(visible, index),
        }
    }
}

/// Sort rank: worst signal first, a lost link counts as critical.
fn rank(h: &HostState) -> (Option<Severity>, usize) {
    (h.worst(), h.signals.len())
}

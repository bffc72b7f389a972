//! What the screen is showing and what keys do to it. Keys become actions, never I/O: the event
//! loop carries the action out and reports back.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::teardown_modal::TeardownModal;
use crate::pull::Progress;
use crate::target::Target;
use crate::teardown::Effect;
use crate::transport::Handover;

use crate::fleet::{Event, FleetState, HostState};
use crate::signals::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Fleet,
    /// The selected box's detail.
    Detail,
    /// The selected job's detail.
    Job,
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

    /// The column whose header carries the sort's marker, and which stays while sorted by it.
    pub fn column(self) -> super::fleet_table::columns::Col {
        use super::fleet_table::columns::Col;
        match self {
            SortKey::Worst => Col::Signal,
            SortKey::Name => Col::Name,
            SortKey::Gpu => Col::Util,
            SortKey::Profile => Col::Platform,
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
    /// Pull the target's results: a box's, a Slurm cluster's (its login node), a Kubernetes
    /// Job's (its running pod).
    Pull(Target),
    /// Open the teardown dialog for the target: destroy a box, cancel a job, delete a Job.
    Teardown(Target),
    /// The person's own command for the target (a shell, the log, the run's pane: `ssh` to a
    /// box or a login node, `kubectl` for a Job), run in the terminal while the dashboard waits.
    Handover {
        target: Target,
        what: Handover,
    },
    /// End the processes holding a zombie GPU's VRAM (`K`, the host's name typed).
    Kill {
        host: String,
        targets: Vec<crate::probe::GpuProcess>,
    },
    /// Silence the target's alerts for two hours, or lift its silence (a job's are its
    /// cluster's).
    Silence(Target),
    /// `y`: the target's name to the terminal's clipboard (OSC 52).
    Copy(Target),
    /// What the teardown dialog asks for (a check, the final look, the destroy), for the
    /// executor.
    Dialog {
        target: Target,
        effects: Vec<Effect>,
    },
}

#[derive(Debug, Clone)]
pub struct App {
    pub view: View,
    pub pane: Pane,
    /// Selected host, by name, so a re-sort does not move the selection to another box.
    pub selected: Option<String>,
    /// The boxes' filter (`/` in the boxes pane).
    pub filter: String,
    /// The jobs pane's filter.
    pub job_filter: String,
    /// The events pane's filter.
    pub event_filter: String,
    /// `/` is being typed, into the focused pane's filter.
    pub editing_filter: bool,
    /// The `:` command line while it is open.
    pub command: Option<String>,
    /// Commands run before, oldest first, and where ↑/↓ stand in them (None: a new line).
    pub command_history: Vec<String>,
    pub history_at: Option<usize>,
    /// Where the open prompt's cursor is, as a character index; None: at the end.
    pub prompt_cursor: Option<usize>,
    pub sort: SortKey,
    pub help: bool,
    /// How far the help is scrolled (it scrolls where it does not fit).
    pub help_scroll: u16,
    pub alerts_scroll: usize,
    /// The selected job, by cluster and id: the jobs pane's cursor and the job detail's job.
    pub job_selected: Option<(String, String)>,
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
    /// The host on each line of the fleet table's body as last drawn (a row may take several
    /// lines), for the mouse.
    pub table_lines: std::cell::RefCell<Vec<String>>,
}

impl App {
    pub fn new(demo: bool) -> App {
        App {
            view: View::Fleet,
            pane: Pane::Hosts,
            selected: None,
            filter: String::new(),
            job_filter: String::new(),
            event_filter: String::new(),
            editing_filter: false,
            command: None,
            command_history: Vec::new(),
            history_at: None,
            prompt_cursor: None,
            sort: SortKey::Worst,
            help: false,
            help_scroll: 0,
            alerts_scroll: 0,
            job_selected: None,
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
            table_lines: std::cell::RefCell::new(Vec::new()),
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
                        .any(|s| s.kind.name().contains(&needle))
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

    /// The box the detail shows: the selected one by name, filter or not (`:detail NAME` may
    /// name a box the filter hides); the first shown when none was picked yet.
    pub fn detail_host<'a>(&self, state: &'a FleetState) -> Option<&'a HostState> {
        match &self.selected {
            Some(name) => state.host(name),
            None => self.selected_host(state),
        }
    }

    pub(super) fn select(&mut self, visible: &[&HostState], index: usize) {
        self.selected = visible.get(index).map(|h| h.config.name.clone());
        self.detail_scroll = 0;
    }

    /// The events the events filter lets through, newest first: by box or cluster, job, text
    /// or severity.
    pub fn visible_events<'a>(&self, state: &'a FleetState) -> Vec<&'a Event> {
        let needle = self.event_filter.to_lowercase();
        state
            .events
            .iter()
            .filter(|e| {
                needle.is_empty()
                    || [e.host.as_str(), e.job.as_deref().unwrap_or(""), &e.text]
                        .iter()
                        .any(|w| w.to_lowercase().contains(&needle))
                    || e.severity.word().to_lowercase().contains(&needle)
            })
            .collect()
    }
}

/// Sort rank: worst signal first, a lost link counts as critical.
fn rank(h: &HostState) -> (Option<Severity>, usize) {
    (h.worst(), h.signals.len())
}

//! Keys become actions. Every key that acts takes one [`Target`]: the focused pane's selection
//! (a box, a job, the subject of the event under the cursor) or the open detail's. A key that
//! does not apply to that kind of target says so in one line; none falls through to another
//! pane's selection, which the person cannot see.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{Action, App, Pane, View};
use super::jobs_pane::{Move, target_of};
use crate::fleet::{Event, FleetState};
use crate::target::Target;
use crate::teardown::Stage;
use crate::transport::Handover;

impl App {
    pub fn handle_key(&mut self, key: KeyEvent, state: &FleetState) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        if self.command.is_some() {
            return self.command_key(key, state);
        }
        if self.editing_filter {
            self.filter_key(key);
            return Action::None;
        }
        if self.kill.is_some() {
            return self.kill_key(key);
        }
        if self.modal.is_some() {
            return self.modal_key(key);
        }
        if self.help {
            self.help_key(key.code);
            return Action::None;
        }
        self.notice = None;
        match key.code {
            // No Ctrl or Alt chord is a plain key here (Ctrl-H is not h).
            KeyCode::Char(_)
                if key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {}
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Esc if self.view != View::Fleet => self.view = View::Fleet,
            KeyCode::Esc => self.filter_mut().clear(),
            KeyCode::Char('R') => {
                self.view = View::Roster;
                self.detail_scroll = 0;
            }
            KeyCode::Tab | KeyCode::BackTab if self.view == View::Fleet => {
                let jobs = !state.clusters.is_empty();
                self.pane = match self.pane {
                    Pane::Hosts if jobs => Pane::Jobs,
                    Pane::Hosts | Pane::Jobs => Pane::Alerts,
                    Pane::Alerts => Pane::Hosts,
                };
            }
            KeyCode::Down | KeyCode::Char('j') => self.move_cursor(state, Move::By(1)),
            KeyCode::Up | KeyCode::Char('k') => self.move_cursor(state, Move::By(-1)),
            KeyCode::Char('g') | KeyCode::Home => self.move_cursor(state, Move::First),
            KeyCode::Char('G') | KeyCode::End => self.move_cursor(state, Move::Last),
            KeyCode::Left | KeyCode::Char('h') => self.view = View::Fleet,
            KeyCode::Enter | KeyCode::Right if self.view == View::Fleet => self.open(state),
            KeyCode::Char(':') => {
                self.command = Some(String::new());
                self.prompt_cursor = None;
            }
            KeyCode::Char('/') => {
                // The detail's own list: a box's detail filters the boxes, a job's the jobs.
                match self.view {
                    View::Detail => self.pane = Pane::Hosts,
                    View::Job => self.pane = Pane::Jobs,
                    View::Fleet | View::Roster => {}
                }
                self.editing_filter = true;
                self.prompt_cursor = None;
                self.view = View::Fleet;
            }
            KeyCode::Char('o') => {
                self.sort = self.sort.next();
                self.notice = Some(format!("boxes sorted by {}", self.sort.word()));
            }
            KeyCode::Char('r') => return Action::Refresh,
            KeyCode::Char(c @ ('p' | 'T' | 'S' | 'K' | 's' | 'l' | 'L' | 'y')) => {
                return self.act(c, state);
            }
            _ => {}
        }
        Action::None
    }

    /// What a key that acts is aimed at: the open detail's box or job, or in the overview the
    /// focused pane's selection. Why there is none, in a line.
    pub fn target(&self, state: &FleetState) -> Result<Target, String> {
        match (self.view, self.pane) {
            (View::Detail, _) => self
                .detail_host(state)
                .map(|h| Target::Box(h.config.name.clone()))
                .ok_or_else(|| "the box shown is no longer in the fleet".to_string()),
            (View::Job, _) => self
                .detail_job(state)
                .map(target_of)
                .ok_or_else(|| "the job shown is no longer in its cluster's queue".to_string()),
            (View::Roster, _) => Err(
                "the roster is every box's queue: Esc, then pick a box or a \
                 job to act on"
                    .to_string(),
            ),
            (View::Fleet, Pane::Hosts) => self
                .selected_host(state)
                .map(|h| Target::Box(h.config.name.clone()))
                .ok_or_else(|| "no box is shown (/ filters the boxes; Esc clears it)".to_string()),
            (View::Fleet, Pane::Jobs) => self
                .selected_job(state)
                .map(target_of)
                .ok_or_else(|| "no job is shown (/ filters the jobs; Esc clears it)".to_string()),
            (View::Fleet, Pane::Alerts) => {
                let events = self.visible_events(state);
                let event = events
                    .get(self.alerts_scroll.min(events.len().saturating_sub(1)))
                    .ok_or_else(|| "no event is shown".to_string())?;
                event_target(state, event)
            }
        }
    }

    /// A key that acts, on the target; or why it does not apply to that kind of target.
    fn act(&mut self, key: char, state: &FleetState) -> Action {
        let target = match self.target(state) {
            Ok(target) => target,
            Err(why) => {
                self.notice = Some(why);
                return Action::None;
            }
        };
        let handover = |what| Action::Handover {
            target: target.clone(),
            what,
        };
        match key {
            'p' => Action::Pull(target),
            'S' => Action::Silence(target),
            'y' => Action::Copy(target),
            's' => handover(Handover::Shell),
            'l' => handover(Handover::Log),
            'L' => handover(Handover::Pane),
            'T' if target.kind() == crate::target::Kind::KaggleCommit => {
                self.notice = Some(format!(
                    "{target}: {}",
                    crate::cluster::kaggle::NOTHING_TO_TEAR_DOWN
                ));
                Action::None
            }
            'T' => match ended(state, &target) {
                Some(state_word) => {
                    self.notice = Some(format!(
                        "{target} has ended ({state_word}): nothing to {}",
                        target.kind().teardown_verb()
                    ));
                    Action::None
                }
                None => Action::Teardown(target),
            },
            'K' => {
                match &target {
                    Target::Box(host) => match state.host(host).map(super::kill_modal::open) {
                        Some(Ok(modal)) => self.kill = Some(modal),
                        Some(Err(why)) => self.notice = Some(why),
                        None => {}
                    },
                    Target::Job(_) => {
                        self.notice = Some(format!(
                            "K ends a zombie's processes on a box; {target} is not one: T will \
                             {} it, through the guard",
                            target.kind().teardown_verb()
                        ));
                    }
                }
                Action::None
            }
            _ => Action::None,
        }
    }

    /// Enter: the detail of the focused pane's selection.
    fn open(&mut self, state: &FleetState) {
        match self.target(state) {
            Ok(Target::Box(host)) => {
                self.selected = Some(host);
                self.detail_scroll = 0;
                self.view = View::Detail;
            }
            Ok(Target::Job(job)) => {
                self.job_selected = Some((job.cluster, job.id));
                self.detail_scroll = 0;
                self.view = View::Job;
            }
            Err(why) => self.notice = Some(why),
        }
    }

    fn move_cursor(&mut self, state: &FleetState, to: Move) {
        match (self.view, self.pane) {
            (View::Detail | View::Job | View::Roster, _) => {
                self.detail_scroll = match to {
                    Move::By(d) if d > 0 => self
                        .detail_scroll
                        .saturating_add(1)
                        .min(self.scroll_end.get()),
                    Move::By(_) => self.detail_scroll.saturating_sub(1),
                    Move::First => 0,
                    Move::Last => self.scroll_end.get(),
                }
            }
            // The events pane's cursor: the event Enter opens.
            (View::Fleet, Pane::Alerts) => {
                let last = self.visible_events(state).len().saturating_sub(1);
                let here = self.alerts_scroll.min(last);
                self.alerts_scroll = match to {
                    Move::By(d) => (here as i64 + d).clamp(0, last as i64) as usize,
                    Move::First => 0,
                    Move::Last => last,
                };
            }
            (View::Fleet, Pane::Jobs) => self.move_job(state, to),
            (View::Fleet, Pane::Hosts) => {
                let visible = self.visible(state);
                let here = self.selected_index(&visible) as i64;
                let last = visible.len().saturating_sub(1) as i64;
                let next = match to {
                    Move::By(d) => (here + d).clamp(0, last),
                    Move::First => 0,
                    Move::Last => last,
                };
                self.select(&visible, next as usize);
            }
        }
    }

    /// The focused pane's filter, which `/` edits and Esc clears.
    fn filter_mut(&mut self) -> &mut String {
        match self.pane {
            Pane::Hosts => &mut self.filter,
            Pane::Jobs => &mut self.job_filter,
            Pane::Alerts => &mut self.event_filter,
        }
    }

    fn filter_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Enter => {
                self.editing_filter = false;
                self.prompt_cursor = None;
            }
            KeyCode::Esc => {
                self.editing_filter = false;
                self.prompt_cursor = None;
                self.filter_mut().clear();
            }
            _ => {
                let mut cursor = self.prompt_cursor;
                super::line_edit::edit(self.filter_mut(), &mut cursor, key, 40);
                self.prompt_cursor = cursor;
            }
        }
    }

    fn help_key(&mut self, code: KeyCode) {
        match code {
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
    }

    /// A key while the teardown dialog is open: it scrolls the files or goes to the driver.
    fn modal_key(&mut self, key: KeyEvent) -> Action {
        let Some(modal) = &mut self.modal else {
            return Action::None;
        };
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
        let effects = modal.key(key);
        let target = modal.dialog.target().clone();
        if modal.dialog.stage() == &Stage::Closed {
            self.modal = None;
        }
        if effects.is_empty() {
            Action::None
        } else {
            Action::Dialog { target, effects }
        }
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
                if modal.key(key) {
                    return Action::Kill {
                        host: modal.host.clone(),
                        targets: modal.targets.clone(),
                    };
                }
            }
        }
        Action::None
    }
}

/// What an event is about: its job, its box; an event about a cluster's queue as a whole is
/// about no one target.
fn event_target(state: &FleetState, event: &Event) -> Result<Target, String> {
    if let (Some(job), Some(cluster)) = (&event.job, state.cluster(&event.host)) {
        return Ok(Target::job(&cluster.name, cluster.scheduler, job));
    }
    if state.host(&event.host).is_some() {
        return Ok(Target::Box(event.host.clone()));
    }
    let name = crate::sanitize::line(&event.host, 40);
    Err(if state.cluster(&event.host).is_some() {
        format!("this event is about {name}'s queue, not one job: pick a job in the jobs pane")
    } else {
        format!("{name} is no longer in the fleet")
    })
}

/// A job that has ended: its state word (there is nothing left to tear down).
fn ended(state: &FleetState, target: &Target) -> Option<String> {
    let job = target.as_job()?;
    let row = state
        .cluster(&job.cluster)?
        .jobs
        .iter()
        .find(|j| j.id == job.id)?;
    row.phase.is_over().then(|| row.state.clone())
}

//! Whether the run lives, from what one reading shows: the session by its exact name, the
//! process without its bystanders, a shell left at its prompt, and readings too old to say.

use super::*;
use crate::probe::ProcessLine;
use crate::probe::sample::TmuxPane;

fn pane(command: &str, has_children: Option<bool>) -> TmuxPane {
    TmuxPane {
        session: "train".into(),
        pid: 700,
        dead: false,
        command: command.into(),
        has_children,
    }
}

fn procs(lines: &[(u32, &str)]) -> Vec<ProcessLine> {
    lines
        .iter()
        .map(|(pid, cmdline)| ProcessLine {
            pid: *pid,
            cmdline: (*cmdline).into(),
        })
        .collect()
}

fn state(case: &Case) -> RunState {
    case.run().0
}

fn dead_why(run: &RunState) -> &str {
    match run {
        RunState::Dead { why, .. } => why,
        other => panic!("expected dead, got {other:?}"),
    }
}

/// The tmux server keeps `new -s train` after the session ends; an editor and a pager hold the
/// name; none of them is the run, whichever way the run is named.
#[test]
fn a_tmux_server_an_editor_or_a_pager_is_never_the_run() {
    let bystanders = procs(&[
        (100, "tmux new -s train"),
        (101, "tmux: server"),
        (102, "vim train.py"),
        (103, "/usr/bin/less train.log"),
        (104, "sshd: root@notty"),
        (105, "sh -c M='@@rw-0123' train"),
        (106, "tail -f train.log"),
    ]);
    let mut case = Case::new(Some("train"));
    case.host_sample(HostSample {
        run_processes: bystanders.clone(),
        ..HostSample::default()
    });
    let run = state(&case);
    assert!(
        dead_why(&run).contains("no tmux session named exactly"),
        "{run:?}"
    );

    let mut case = Case::new(None);
    case.host.run_process = Some("train".into());
    case.host_sample(HostSample {
        run_processes: bystanders.clone(),
        ..HostSample::default()
    });
    let run = state(&case);
    assert!(dead_why(&run).contains("run_process \"train\""), "{run:?}");

    let mut with_run = bystanders;
    with_run.push(ProcessLine {
        pid: 4242,
        cmdline: "python train.py --lr 3e-4".into(),
    });
    case.host_sample(HostSample {
        run_processes: with_run,
        ..HostSample::default()
    });
    match state(&case) {
        RunState::Alive { how } => {
            assert_eq!(how, "process 4242: python train.py --lr 3e-4");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_session_left_at_its_shell_prompt_is_a_dead_run() {
    let mut case = Case::new(Some("train"));
    case.host_sample(HostSample {
        tmux_panes: vec![pane("bash", Some(false))],
        ..HostSample::default()
    });
    let run = state(&case);
    assert!(
        dead_why(&run).contains("at a bash prompt (pid 700)"),
        "{run:?}"
    );

    for (command, children) in [
        ("bash", Some(true)),
        ("bash", None),
        ("python3", Some(false)),
    ] {
        case.host_sample(HostSample {
            tmux_panes: vec![pane(command, children)],
            ..HostSample::default()
        });
        match state(&case) {
            RunState::Alive { how } => assert!(how.contains(command), "{how}"),
            other => panic!("{command} {children:?}: {other:?}"),
        }
    }
}

#[test]
fn without_tmux_on_the_box_the_session_is_unknown_not_dead() {
    let mut case = Case::new(Some("train"));
    case.host_sample(HostSample {
        tmux_missing: true,
        ..HostSample::default()
    });
    match state(&case) {
        RunState::Unknown { reason, .. } => assert!(reason.contains("tmux is not installed")),
        other => panic!("{other:?}"),
    }
}

/// A box that stops answering (its sshd frozen, the link not yet timed out) keeps its last
/// reading: past three periods that reading no longer says "alive".
#[test]
fn a_reading_older_than_three_periods_makes_the_run_unknown() {
    let mut case = Case::new(Some("train"));
    case.host_sample(HostSample {
        tmux_panes: vec![pane("python3", None)],
        ..HostSample::default()
    });
    assert!(matches!(state(&case), RunState::Alive { .. }));
    case.now += Duration::seconds(6);
    assert!(
        matches!(state(&case), RunState::Alive { .. }),
        "6 s is three periods"
    );
    case.now += Duration::seconds(1);
    let (run, signals) = case.run();
    match &run {
        RunState::Unknown { since, reason } => {
            assert_eq!(*since, Some(t0()));
            assert_eq!(reason, "no reading for 7s");
        }
        other => panic!("{other:?}"),
    }
    assert!(find(&signals, SignalKind::RunUnknown).is_some());
}

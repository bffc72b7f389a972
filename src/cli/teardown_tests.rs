//! The CLI's walk of the dialog with a scripted box and a scripted person: it says what the
//! destroy said even when its outcome could not be recorded, and a refused box is never asked
//! for its name, its final look or its destroy.

use super::*;
use crate::pull::{Currentness, NotCurrent};
use crate::teardown::Description;
use crate::teardown::scripted::ScriptedIo;

const CURRENT: Currentness = Currentness::Current {
    pull_id: 7,
    files: 1,
    bytes: 1,
    fingerprint: 5,
};

struct Typist {
    lines: VecDeque<String>,
}

impl Person for Typist {
    fn present(&self) -> bool {
        true
    }

    fn answer(&mut self, prompt: &str, out: &mut dyn Write) -> std::io::Result<String> {
        write!(out, "{prompt}")?;
        Ok(self.lines.pop_front().unwrap_or_default())
    }

    fn wait<'a>(
        &'a mut self,
        destroy: BoxFuture<'a, Event>,
        _out: &'a mut dyn Write,
    ) -> LocalBoxFuture<'a, std::io::Result<Event>> {
        async move { Ok(destroy.await) }.boxed_local()
    }
}

fn io(currentness: Currentness) -> ScriptedIo {
    let words = Description {
        head: vec!["Destroy box (vast.ai, instance 4242)".into()],
        action: "  will run: vastai destroy instance '4242' -y".into(),
        command: Some("vastai destroy instance '4242' -y".into()),
        ..Description::default()
    };
    ScriptedIo::unrecorded_destroy(words, currentness)
}

async fn walked(io: &ScriptedIo, typed: &[&str]) -> (Option<Finished>, String) {
    let (mut dialog, opened) = Dialog::open(
        crate::target::Target::Box("box".into()),
        OPENING,
        crate::teardown::RunLooks::Unknown,
        None,
    );
    let mut person = Typist {
        lines: typed.iter().map(|l| format!("{l}\n")).collect(),
    };
    let mut out = Vec::new();
    let finished = walk((&mut dialog, opened), io, &mut person, &mut out)
        .await
        .expect("walk");
    (finished, String::from_utf8_lossy(&out).into_owned())
}

#[tokio::test]
async fn what_the_destroy_said_is_printed_even_when_its_outcome_is_not_recorded() {
    let io = io(CURRENT);
    let (finished, text) = walked(&io, &["box"]).await;
    assert_eq!(
        finished.map(|f| f.ending),
        Some(Ending::Ran(DestroyOutcome::Confirmed))
    );
    assert!(text.contains("will run: vastai destroy"), "{text}");
    assert!(
        text.contains("running: vastai destroy instance '4242' -y\n"),
        "{text}"
    );
    assert!(text.contains("destroying instance 4242.\n"), "{text}");
    assert!(
        text.contains("OUTCOME NOT RECORDED: database is locked"),
        "{text}"
    );
    assert_eq!(io.asked(), vec!["check", "final check", "destroy #7"]);
}

#[tokio::test]
async fn a_refused_box_is_never_asked_for_its_name_or_destroyed() {
    let io = io(Currentness::NotCurrent(vec![NotCurrent::NeverPulled]));
    let (finished, text) = walked(&io, &["box"]).await;
    assert_eq!(finished, None);
    assert!(text.contains("REFUSED: not until:"), "{text}");
    assert!(!text.contains("Type the box's name"), "{text}");
    assert_eq!(io.asked(), vec!["check"]);
}

#[tokio::test]
async fn a_mistyped_name_or_a_declined_second_confirm_runs_nothing() {
    let io = io(CURRENT);
    let (finished, text) = walked(&io, &["bxo"]).await;
    assert_eq!(finished, None);
    assert!(
        text.contains("type the box's name, box, to confirm"),
        "{text}"
    );
    assert_eq!(io.asked(), vec!["check"]);
}

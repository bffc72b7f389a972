//! The pull's book on a thread of its own. A re-pull of 100 000 unchanged files spent ~2 s of
//! one core on the pull's own task, ~40 % of it in SQLite (each chunk's last records read, its
//! new ones written: 18 and 21 ms a chunk of 3 800 files), while the box had long finished
//! listing: the records now go to the book, and come from it, while the pull's task looks at
//! the next chunk's local copies. A chunk's last records are asked for as the chunk is made,
//! ahead of its turn to look at home.

use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::PullError;
use super::book::Book;
use crate::ledger::{LedgerError, PulledFile};

type Job = Box<dyn FnOnce(&mut dyn Book) + Send>;

/// Chunks of records handed over and not yet written: the pull waits beyond this, so a book
/// slower than the pull holds a few chunks (~1.5 MB each), not the whole pull.
const WRITES_AHEAD: usize = 2;

pub(super) struct Scribe {
    jobs: mpsc::UnboundedSender<Job>,
    writes: Arc<Semaphore>,
    /// The first write the book refused (the pull goes on: its files are on disk either way).
    failed: Arc<Mutex<Option<PullError>>>,
}

/// The book, back from its thread once every job handed over was done.
pub(super) struct Done<B>(oneshot::Receiver<B>);

impl Scribe {
    /// `book` moved to a thread of its own (Err: no thread could be started).
    pub fn start<B: Book + 'static>(book: B) -> std::io::Result<(Scribe, Done<B>)> {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let (back, done) = oneshot::channel();
        std::thread::Builder::new()
            .name("rigwatch-book".into())
            .spawn(move || {
                let mut book = book;
                while let Some(job) = queue.blocking_recv() {
                    job(&mut book);
                }
                let _ = back.send(book);
            })?;
        let scribe = Scribe {
            jobs,
            writes: Arc::new(Semaphore::new(WRITES_AHEAD)),
            failed: Arc::default(),
        };
        Ok((scribe, Done(done)))
    }

    /// `ask` run on the book, after every job handed over before it. Handed over now, not when
    /// the answer is first awaited.
    pub fn ask<T, F>(&self, ask: F) -> impl Future<Output = Result<T, PullError>> + use<T, F>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Book) -> Result<T, LedgerError> + Send + 'static,
    {
        let (tell, told) = oneshot::channel();
        let sent = self.jobs.send(Box::new(move |book: &mut dyn Book| {
            let _ = tell.send(ask(book));
        }));
        async move {
            sent.map_err(|_| gone())?;
            told.await.map_err(|_| gone())?.map_err(PullError::from)
        }
    }

    /// `files` handed to the book in the order written; waits while the book is behind.
    pub async fn write(&self, files: Vec<PulledFile>) {
        let Ok(permit) = self.writes.clone().acquire_owned().await else {
            return;
        };
        let failed = self.failed.clone();
        let job = move |book: &mut dyn Book| {
            if let Err(e) = book.write(&files) {
                first(&failed, e.into());
            }
            drop(permit);
        };
        if self.jobs.send(Box::new(job)).is_err() {
            first(&self.failed, gone());
        }
    }

    /// Every job handed over done: the book back, or the first write it refused.
    pub async fn finish<B>(self, done: Done<B>) -> Result<B, PullError> {
        let failed = self.failed.clone();
        drop(self);
        let book = done.0.await.map_err(|_| gone())?;
        match failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(book),
        }
    }
}

/// `e` kept unless an earlier error was.
fn first(failed: &Mutex<Option<PullError>>, e: PullError) {
    failed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert(e);
}

fn gone() -> PullError {
    PullError::Book("the ledger's thread ended early".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A book that keeps what it is given and refuses the write of a record named "refused".
    #[derive(Default)]
    struct Shelf {
        written: Vec<String>,
    }

    impl Book for Shelf {
        fn recorded(&mut self, paths: &[&str]) -> Result<Vec<PulledFile>, LedgerError> {
            let had = self.written.iter().filter(|w| paths.contains(&w.as_str()));
            Ok(had.map(|w| file(w)).collect())
        }

        fn write(&mut self, files: &[PulledFile]) -> Result<(), LedgerError> {
            if let Some(f) = files.iter().find(|f| f.remote_path == "refused") {
                return Err(LedgerError::TooNew {
                    path: f.remote_path.clone().into(),
                    found: 0,
                });
            }
            self.written
                .extend(files.iter().map(|f| f.remote_path.clone()));
            Ok(())
        }

        fn last_largest(&mut self) -> Option<u64> {
            None
        }

        fn previous_id(&self) -> Option<i64> {
            None
        }
    }

    fn file(path: &str) -> PulledFile {
        super::super::engine::failed_file(
            &super::super::remote::RemoteFile {
                path: path.into(),
                ..Default::default()
            },
            std::path::Path::new(path),
            String::new(),
        )
    }

    #[tokio::test]
    async fn the_book_answers_after_every_write_handed_over_before_and_comes_back_whole() {
        let (scribe, done) = Scribe::start(Shelf::default()).expect("thread");
        for i in 0..20 {
            scribe.write(vec![file(&format!("f{i}"))]).await;
        }
        let asked = scribe.ask(|book| book.recorded(&["f0", "f19", "nowhere"]));
        let found = asked.await.expect("answered");
        let found: Vec<&str> = found.iter().map(|f| f.remote_path.as_str()).collect();
        assert_eq!(found, ["f0", "f19"]);
        let shelf = scribe.finish(done).await.expect("no write refused");
        assert_eq!(shelf.written.len(), 20);
        assert_eq!(shelf.written[7], "f7", "written in the order handed over");
    }

    #[tokio::test]
    async fn a_refused_write_ends_the_pull_with_the_first_error_and_later_writes_still_go() {
        let (scribe, done) = Scribe::start(Shelf::default()).expect("thread");
        scribe.write(vec![file("a")]).await;
        scribe.write(vec![file("refused")]).await;
        scribe.write(vec![file("b")]).await;
        let seen = scribe.ask(|book| book.recorded(&["a", "b"])).await;
        assert_eq!(seen.expect("answered").len(), 2, "later writes still went");
        match scribe.finish(done).await {
            Err(PullError::Ledger(LedgerError::TooNew { path, .. })) => {
                assert_eq!(path, std::path::Path::new("refused"))
            }
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("a refused write was lost"),
        }
    }
}

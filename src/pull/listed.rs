//! A pull's chunks, planned from the box's listing as it is read (`spool`): a chunk is handed
//! out once it holds `CHUNK_FILES` files, once the listing has ended, or, where no chunk is
//! running and the box has sent nothing more for a while (a slow `find`, a hung mount's
//! timeout), with what it holds, so the pull never idles holding files.

use std::sync::atomic::{AtomicBool, Ordering};

use super::chunk::CHUNK_FILES;
use super::engine::PullJob;
use super::plan::{Plan, Planner, Refused};
use super::progress::{Progress, Stage};
use super::remote::{Listing, RemoteFile};
use super::spool::{Reader, Spool, Step};

/// What the pull does next.
pub(super) enum Next {
    Chunk(Plan, Refused),
    /// Nothing to hand out until the box sends more (`Listed::grew`).
    Wait,
    /// The listing has ended and every file of it was handed out, or it cannot be read on.
    Done,
}

pub(super) struct Listed<'s, 'j> {
    reader: Reader<'s, 'j>,
    job: &'j PullJob<'j>,
    /// Made at the first chunk: the listing's first record (the box's `$HOME`) is read by then.
    planner: Option<Planner<'j>>,
    progress: &'s Progress,
    /// Set once the listing is read to its end: until then the pull's files in all are not
    /// known.
    listed: &'s AtomicBool,
    files: Vec<RemoteFile>,
    /// The spool could not be read back.
    unread: Option<std::io::Error>,
    stopped: bool,
}

impl<'s, 'j> Listed<'s, 'j> {
    pub(super) fn new(
        spool: &'s Spool,
        job: &'j PullJob<'j>,
        progress: &'s Progress,
        listed: &'s AtomicBool,
    ) -> Listed<'s, 'j> {
        Listed {
            reader: spool.reader(&job.spec.paths),
            job,
            planner: None,
            progress,
            listed,
            files: Vec::with_capacity(CHUNK_FILES),
            unread: None,
            stopped: false,
        }
    }

    /// The next chunk; `idle`: no chunk is running and the box has been quiet, so the files
    /// held are handed out now rather than when a whole chunk is read.
    pub(super) fn next(&mut self, idle: bool) -> Next {
        if self.stopped {
            return Next::Done;
        }
        let (mut count, mut bytes) = (0, 0);
        let step = loop {
            if self.files.len() >= CHUNK_FILES {
                break Ok(Step::Read);
            }
            let files = &mut self.files;
            let read = self.reader.next_files(&mut |f| {
                count += 1;
                bytes += f.size;
                files.push(f);
            });
            match read {
                Ok(Step::Read) => {}
                other => break other,
            }
        };
        // Every listed byte to begin with; each chunk takes off what it need not send.
        self.progress
            .files_total
            .fetch_add(count, Ordering::Relaxed);
        self.progress
            .bytes_total
            .fetch_add(bytes, Ordering::Relaxed);
        match step {
            Ok(Step::Read) => self.chunk(),
            Ok(Step::Waiting) if idle && !self.files.is_empty() => self.chunk(),
            Ok(Step::Waiting) => Next::Wait,
            Ok(Step::Ended) => {
                self.listed.store(true, Ordering::Relaxed);
                self.stopped = true;
                if self.files.is_empty() {
                    Next::Done
                } else {
                    self.chunk()
                }
            }
            Ok(Step::Failed) => {
                self.stopped = true;
                Next::Done
            }
            Err(e) => {
                self.unread = Some(e);
                self.stopped = true;
                Next::Done
            }
        }
    }

    fn chunk(&mut self) -> Next {
        if self.progress.stage() == Stage::Listing {
            self.progress.set_stage(Stage::Copying);
        }
        let (job, reader) = (self.job, &self.reader);
        let planner = self
            .planner
            .get_or_insert_with(|| Planner::new(job, reader.home().map(String::from)));
        let files = std::mem::replace(&mut self.files, Vec::with_capacity(CHUNK_FILES));
        let (plan, refused) = planner.plan(files);
        Next::Chunk(plan, refused)
    }

    /// Ends once the box may have sent more, or its listing ended.
    pub(super) async fn grew(&self) {
        self.reader.grew().await;
    }

    /// Everything the listing said but its files, or why the spool could not be read back.
    pub(super) fn finish(self) -> std::io::Result<Listing> {
        match self.unread {
            Some(e) => Err(e),
            None => Ok(self.reader.finish()),
        }
    }
}

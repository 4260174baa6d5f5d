//! Files that appear complete or not at all: written under a temporary name in the same
//! directory and renamed into place once finished.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

/// How many bytes a file grows by between two requests that what it holds so far be written to
/// the disk (see [`Syncer`]). The unit tests ask every few KiB.
const SYNC_STEP: u64 = if cfg!(test) { 16 << 10 } else { 32 << 20 };

/// A file being written; it takes its final name only in [`AtomicFile::commit`]. Dropped
/// without a commit, the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temporary: PathBuf,
    out: Option<BufWriter<File>>,
    /// Bytes written since the disk was last asked to catch up.
    unsynced: u64,
    syncer: Option<Syncer>,
}

/// A thread that writes a large file's bytes to the disk while it is still being written, so
/// that the sync before its rename waits for the last few bytes only, not for all of them.
/// Each request it is sent syncs what the file holds by then; it blocks only this thread.
#[derive(Debug)]
struct Syncer {
    ask: SyncSender<()>,
    thread: JoinHandle<io::Result<()>>,
}

impl Syncer {
    fn start(file: &File) -> io::Result<Syncer> {
        let file = file.try_clone()?;
        // One request waits at most: one asked while a sync runs is met by the next.
        let (ask, asked) = sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("rtl-pmc-sync".into())
            .spawn(move || asked.iter().try_for_each(|()| file.sync_data()))?;
        Ok(Syncer { ask, thread })
    }

    /// Waits for the syncs asked so far, with the first one's error.
    fn finish(self) -> io::Result<()> {
        drop(self.ask);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the thread syncing the file stopped")))
    }
}

/// The temporary name used while `target` is written.
pub fn temporary_path(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    target.with_file_name(name)
}

impl AtomicFile {
    /// Starts writing `target` (under a temporary name).
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let temporary = temporary_path(target);
        let file = File::create(&temporary).map_err(|e| named(&temporary, e))?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temporary,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            unsynced: 0,
            syncer: None,
        })
    }

    /// Flushes, syncs and renames the file to its final name; on failure the temporary file is
    /// removed.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        let committed = self.sync_and_rename();
        if committed.is_err() {
            let _ = std::fs::remove_file(&self.temporary);
        }
        committed
    }

    fn sync_and_rename(&mut self) -> io::Result<PathBuf> {
        if let Some(out) = self.out.take() {
            let syncer = self.syncer.take().map(Syncer::finish);
            let file = out
                .into_inner()
                .map_err(|e| named(&self.temporary, e.into_error()))?;
            syncer
                .unwrap_or(Ok(()))
                .and_then(|()| file.sync_all())
                .map_err(|e| named(&self.temporary, e))?;
        }
        std::fs::rename(&self.temporary, &self.target).map_err(|e| named(&self.target, e))?;
        Ok(self.target.clone())
    }
}

impl AtomicFile {
    /// Counts `n` more bytes written; every [`SYNC_STEP`] of them, asks the disk to catch up.
    fn wrote(&mut self, n: usize) {
        self.unsynced += n as u64;
        if self.unsynced < SYNC_STEP {
            return;
        }
        self.unsynced = 0;
        if self.syncer.is_none() {
            // Without a thread (none could be made), the sync before the rename does it all.
            self.syncer = self
                .out
                .as_ref()
                .and_then(|out| Syncer::start(out.get_ref()).ok());
        }
        if let Some(syncer) = &self.syncer {
            // A request already waiting covers this one.
            let _ = syncer.ask.try_send(());
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match self.out.as_mut() {
            Some(out) => out.write(buf)?,
            None => return Err(io::Error::other("file already committed")),
        };
        self.wrote(n);
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.out.as_mut() {
            Some(out) => out.write_all(buf)?,
            None => return Err(io::Error::other("file already committed")),
        }
        self.wrote(buf.len());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// An I/O error whose message names the file.
pub fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty directory of this process's, for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn only_committed_files_take_their_name() {
        let dir = scratch("atomic");
        let target = dir.join("a.csv");
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"x\n").unwrap();
        assert!(!target.exists());
        drop(f);
        assert!(!target.exists());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "temporary removed"
        );
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"y\n").unwrap();
        assert_eq!(f.commit().unwrap(), target);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "y\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_large_file_is_synced_while_written_and_complete_once_committed() {
        let dir = scratch("synced");
        let target = dir.join("large.csv");
        let line: Vec<u8> = (0..=255u8).collect();
        let mut f = AtomicFile::create(&target).unwrap();
        (0..1000).for_each(|_| f.write_all(&line).unwrap());
        assert!(f.syncer.is_some(), "a thread syncs the file while it grows");
        assert!(!target.exists());
        f.commit().unwrap();
        let written = std::fs::read(&target).unwrap();
        assert_eq!(written.len(), 256_000);
        assert!(written.chunks(256).all(|c| c == line.as_slice()));
        // Dropped uncommitted while its thread syncs: the temporary goes all the same.
        let mut f = AtomicFile::create(&dir.join("dropped.csv")).unwrap();
        (0..200).for_each(|_| f.write_all(&line).unwrap());
        assert!(f.syncer.is_some());
        drop(f);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["large.csv"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_sync_fails_the_commit_naming_the_file_and_leaves_nothing() {
        let dir = scratch("unsynced");
        let target = dir.join("lost.csv");
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"x\n").unwrap();
        // Syncing /dev/null fails (EINVAL), as a disk that lost the bytes would.
        let syncer = Syncer::start(&File::open("/dev/null").unwrap()).unwrap();
        syncer.ask.send(()).unwrap();
        f.syncer = Some(syncer);
        let e = f.commit().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let named = format!("{}: ", temporary_path(&target).display());
        assert!(e.to_string().starts_with(&named), "{e}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

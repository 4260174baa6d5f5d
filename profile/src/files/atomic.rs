//! Files that appear complete or not at all: written under a temporary name in the same
//! directory and renamed into place once finished.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; it takes its final name only in [`AtomicFile::commit`]. Dropped
/// without a commit, the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temporary: PathBuf,
    out: Option<BufWriter<File>>,
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
        })
    }

    /// Flushes, syncs and renames the file to its final name.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        if let Some(out) = self.out.take() {
            let file = out
                .into_inner()
                .map_err(|e| named(&self.temporary, e.into_error()))?;
            file.sync_all().map_err(|e| named(&self.temporary, e))?;
        }
        std::fs::rename(&self.temporary, &self.target).map_err(|e| named(&self.target, e))?;
        Ok(self.target.clone())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.out.as_mut() {
            Some(out) => out.write(buf),
            None => Err(io::Error::other("file already committed")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.out.as_mut() {
            Some(out) => out.write_all(buf),
            None => Err(io::Error::other("file already committed")),
        }
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

    #[test]
    fn only_committed_files_take_their_name() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
}

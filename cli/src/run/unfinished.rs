//! What an interrupted profile needs to be finished by `rtl-pmc finish DIR`.
//!
//! While a profile runs, its output directory holds [`MARKER`]: how rtl-pmc was started (its
//! arguments, working directory and environment), which of the profiles of that command this
//! directory is, and each pass whose application ended, with its exit code. It is removed when
//! the profile ends, whatever way rtl-pmc ends it; it stays only when rtl-pmc itself was killed
//! (SIGKILL, the OOM killer, a preempted batch job). `rtl-pmc finish` then plans the same
//! profile again from the saved command line and turns the pass directories' raw records into
//! the usual results, without running the application.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CliError;

/// The file, in the output directory, of a profile still running or interrupted.
pub const MARKER: &str = ".rtl-pmc-unfinished.json";

/// How the profile was started, and how far it got.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved {
    /// rtl-pmc's process id.
    pub pid: u32,
    /// rtl-pmc's arguments, its own name first.
    pub argv: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Its environment.
    pub environment: Vec<(String, String)>,
    /// Which of the command's profiles (one per output directory) this is, from 0.
    pub profile: usize,
    /// The passes whose application ended, with its exit code.
    pub passes: Vec<(u32, i32)>,
}

/// The marker of a running profile; removed when dropped.
pub struct Marker {
    path: PathBuf,
    saved: Saved,
}

impl Marker {
    /// Writes the marker of profile `profile` of this command into `directory`; `None` if it
    /// cannot be written (the profile runs anyway; only finishing it after a kill needs it).
    pub fn create(directory: &Path, profile: usize) -> Option<Marker> {
        let saved = Saved {
            pid: std::process::id(),
            argv: std::env::args().collect(),
            cwd: std::env::current_dir().ok()?,
            environment: std::env::vars().collect(),
            profile,
            passes: Vec::new(),
        };
        let marker = Marker {
            path: directory.join(MARKER),
            saved,
        };
        marker.write().then_some(marker)
    }

    /// Notes that the application of `pass` ended with `code`.
    pub fn pass_ran(&mut self, pass: u32, code: i32) {
        self.saved.passes.push((pass, code));
        self.write();
    }

    /// Writes the marker in one piece (a new file renamed over the old one); whether it was.
    fn write(&self) -> bool {
        let Ok(text) = serde_json::to_string(&self.saved) else {
            return false;
        };
        let partial = self
            .path
            .with_extension(format!("partial-{}", std::process::id()));
        let written =
            std::fs::write(&partial, text).and_then(|_| std::fs::rename(&partial, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        written.is_ok()
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The saved start of the interrupted profile in `directory`, once nothing writes it any more.
pub fn read(directory: &Path) -> Result<Saved, CliError> {
    let path = directory.join(MARKER);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let finished = directory.is_dir()
                && std::fs::read_dir(directory).is_ok_and(|mut entries| {
                    entries.any(|e| {
                        e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("pass_"))
                    })
                });
            let why = match (directory.is_dir(), finished) {
                (false, _) => "no such directory",
                (true, true) => "its profile was not interrupted (it has its results)",
                (true, false) => "no profile was started there",
            };
            return Err(CliError::input(format!(
                "finish: {}: nothing to finish: {why}",
                directory.display()
            )));
        }
        Err(e) => {
            return Err(CliError {
                message: format!("finish: {}: {e}", path.display()),
                exit_code: 1,
            })
        }
    };
    let saved: Saved = serde_json::from_str(&text)
        .map_err(|e| CliError::input(format!("finish: {}: not readable: {e}", path.display())))?;
    if running(saved.pid) {
        return Err(CliError::input(format!(
            "finish: {}: rtl-pmc (process {}) is still writing this profile; it finishes it itself",
            directory.display(),
            saved.pid
        )));
    }
    Ok(saved)
}

/// Whether process `pid` is an rtl-pmc still running.
fn running(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
        return false;
    };
    let mine = std::env::current_exe().ok();
    mine.as_deref() == Some(exe.as_path())
        || exe
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("rtl-pmc"))
}

/// Removes the files an interrupted profile left half-written in `directory` and its pass
/// directories (`*.partial-<pid>`), and its merged files of base `base`; the names removed.
pub fn clean(directory: &Path, base: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let mut dirs = vec![directory.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(directory) {
        dirs.extend(
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("pass_"))
                }),
        );
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let partial = name.contains(".partial-");
            let merged = dir == directory
                && name.rsplit_once('.').is_some_and(|(stem, extension)| {
                    stem == base && crate::inputs::MERGED_EXTENSIONS.contains(&extension)
                });
            if (partial || merged) && path.is_file() && std::fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed.sort();
    removed
}

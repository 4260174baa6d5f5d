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

use super::destination::PassLayout;
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
                        e.is_ok_and(|e| {
                            PassLayout::is_pass_directory(&e.file_name().to_string_lossy())
                        })
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
    // Pass directories, and with rocprofv3's layout for text inputs (`pmc_N/<hostname>/`) the
    // directories in them.
    let subdirectories = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default()
    };
    for pass in subdirectories(directory).into_iter().filter(|p| {
        p.file_name()
            .is_some_and(|n| PassLayout::is_pass_directory(&n.to_string_lossy()))
    }) {
        dirs.extend(subdirectories(&pass));
        dirs.push(pass);
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

/// What `rtl-pmc finish` says of the profile it finished: that it was interrupted, and which
/// of its `total` passes are complete (`passes`: those read, each with its application's exit
/// code, or None when it was still running).
pub fn note(passes: &[(u32, Option<i32>)], total: usize) -> String {
    let complete: Vec<String> = passes
        .iter()
        .filter(|(_, ran)| ran.is_some())
        .map(|(p, _)| p.to_string())
        .collect();
    let mut note = format!(
        "this profile was interrupted (rtl-pmc ended before writing its results); finished from its raw records: {} of {total} passes complete",
        complete.len()
    );
    if !complete.is_empty() {
        note.push_str(&format!(" ({})", complete.join(", ")));
    }
    let cut: Vec<String> = passes
        .iter()
        .filter(|(_, ran)| ran.is_none())
        .map(|(p, _)| p.to_string())
        .collect();
    let named = |list: &[String]| match list.len() {
        1 => format!("pass {}", list[0]),
        _ => format!("passes {}", list.join(", ")),
    };
    if !cut.is_empty() {
        note.push_str(&format!(
            "; {} cut short, with the dispatches {} application completed",
            named(&cut),
            if cut.len() == 1 { "its" } else { "their" }
        ));
    }
    let next = passes.last().map_or(1, |(p, _)| *p as usize + 1);
    if next <= total {
        let missing: Vec<String> = (next..=total).map(|p| p.to_string()).collect();
        note.push_str(&format!("; {} never ran", named(&missing)));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_says_which_passes_are_complete_cut_short_or_never_ran() {
        let head = "this profile was interrupted (rtl-pmc ended before writing its results); finished from its raw records: ";
        assert_eq!(
            note(&[(1, Some(0)), (2, None)], 3),
            format!("{head}1 of 3 passes complete (1); pass 2 cut short, with the dispatches its application completed; pass 3 never ran")
        );
        assert_eq!(
            note(&[(1, None), (2, None)], 2),
            format!("{head}0 of 2 passes complete; passes 1, 2 cut short, with the dispatches their application completed")
        );
        assert_eq!(
            note(&[(1, Some(0)), (2, Some(139))], 4),
            format!("{head}2 of 4 passes complete (1, 2); passes 3, 4 never ran")
        );
    }

    #[test]
    fn the_marker_lives_as_long_as_the_profile_and_clean_removes_half_written_files() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-unfinished-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("pass_1")).unwrap();
        std::fs::create_dir_all(dir.join("pmc_2/host")).unwrap();
        let mut marker = Marker::create(&dir, 2).unwrap();
        marker.pass_ran(1, 0);
        let saved: Saved =
            serde_json::from_str(&std::fs::read_to_string(dir.join(MARKER)).unwrap()).unwrap();
        assert_eq!(saved.profile, 2);
        assert_eq!(saved.passes, [(1, 0)]);
        assert_eq!(saved.pid, std::process::id());
        assert_eq!(saved.argv, std::env::args().collect::<Vec<_>>());
        // Written by this very process: not another rtl-pmc still running.
        assert_eq!(read(&dir).unwrap().passes, [(1, 0)]);
        drop(marker);
        assert!(!dir.join(MARKER).exists());
        for name in [
            "results.db.partial-7",
            "results.csv",
            "other.csv",
            "pass_1/7_counter_collection.csv.partial-7",
            "pass_1/7.rtlraw",
            "pmc_2/8.rtlraw",
            "pmc_2/host/8_counter_collection.csv.partial-8",
        ] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        assert_eq!(
            clean(&dir, "results"),
            [
                dir.join("pass_1/7_counter_collection.csv.partial-7"),
                dir.join("pmc_2/host/8_counter_collection.csv.partial-8"),
                dir.join("results.csv"),
                dir.join("results.db.partial-7"),
            ]
        );
        assert!(dir.join("other.csv").exists() && dir.join("pass_1/7.rtlraw").exists());
        assert!(dir.join("pmc_2/8.rtlraw").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

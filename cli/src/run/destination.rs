//! Where a profile writes, and the refusal to write where an earlier profile lies: a profile
//! never deletes, rewrites or mixes with another's files.

use std::path::{Path, PathBuf};

use crate::error::CliError;
use crate::inputs::MERGED_EXTENSIONS;
use crate::planning::ProfilePlan;

use super::paths;

/// The output directory without `-d`: like rocprofv3's `%hostname%/%pid%`, under the current
/// directory, so every run gets a new one.
pub const DEFAULT_DIRECTORY: &str = "%hostname%/%pid%";

/// The base name of the merged files without `-o`.
pub const DEFAULT_BASE: &str = "results";

/// Where one profile's files go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The output directory, absolute (the application may change its working directory).
    pub directory: PathBuf,
    /// The base name of the merged files.
    pub base: String,
}

impl Destination {
    /// The destination of `plan`'s runs (they share it), for application `app`.
    pub fn of(plan: &ProfilePlan, app: &[String]) -> Result<Destination, CliError> {
        let settings = plan.runs.first().map(|r| &r.settings);
        let directory = settings
            .and_then(|s| s.output_directory.clone())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIRECTORY));
        let directory = PathBuf::from(paths::expand_here(&directory.display().to_string(), app));
        let directory = std::path::absolute(&directory).map_err(|e| CliError {
            message: format!("{}: {e}", directory.display()),
            exit_code: 1,
        })?;
        let template = settings
            .and_then(|s| s.output_file.as_deref())
            .unwrap_or(DEFAULT_BASE);
        let base = paths::expand_here(template, app);
        if base.contains('/') || base.trim().is_empty() {
            return Err(CliError::input(format!(
                "-o/--output-file: '{template}' expands to '{base}', not a file name; give the directory with -d"
            )));
        }
        Ok(Destination { directory, base })
    }
}

/// The file `kind` (`counter_collection`, `agent_info`, ...) of application process `pid` in
/// `dir`, named as rocprofv3 names it: `<pid>_<kind>.csv`, or with `-o NAME`,
/// `NAME_<kind>.csv` (the name's keys expanded for that process, so `%pid%` is its pid).
pub fn process_file(
    dir: &Path,
    output_file: Option<&str>,
    app: &[String],
    pid: u32,
    kind: &str,
) -> PathBuf {
    process_path(dir, output_file.unwrap_or("%pid%"), app, pid, kind, "csv")
}

/// The file `<name>_<kind>.<extension>` of application process `pid` in `dir`, `name` the
/// template `template` expanded for that process.
pub fn process_path(
    dir: &Path,
    template: &str,
    app: &[String],
    pid: u32,
    kind: &str,
    extension: &str,
) -> PathBuf {
    let name = paths::expand_for_process(template, app, pid);
    dir.join(format!("{name}_{kind}.{extension}"))
}

/// How a profile's pass directories and per-process files are named: as rocprofv3 names them
/// for the input kind, where rocprof-compute looks for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PassLayout {
    /// `pass_N/<pid>_<table>.csv`: `--pmc` groups and YAML/JSON jobs.
    #[default]
    Pass,
    /// `pmc_N/<hostname>/<pid>_<table>.csv`, with each process's `<pid>_results.json` and
    /// `<pid>_results.db`: a rocprof `.txt` input alone. rtl-pmc's own files of the pass (plan,
    /// raw records) stay in `pmc_N/`, out of the per-process directory.
    Pmc,
}

impl PassLayout {
    /// The layout for input file `input`, if any, with `--pmc` groups or not.
    pub fn of_input(input: Option<&Path>, pmc_groups: bool) -> PassLayout {
        match input.and_then(|p| p.extension()).and_then(|e| e.to_str()) {
            Some("txt") if !pmc_groups => PassLayout::Pmc,
            _ => PassLayout::Pass,
        }
    }

    /// Whether `name` is the name of a pass directory of either layout.
    pub fn is_pass_directory(name: &str) -> bool {
        [PassLayout::Pass, PassLayout::Pmc].iter().any(|layout| {
            let prefix = match layout {
                PassLayout::Pass => "pass_",
                PassLayout::Pmc => "pmc_",
            };
            name.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    }

    /// The directory of pass `pass` in output directory `directory`.
    pub fn directory(self, directory: &Path, pass: u32) -> PathBuf {
        match self {
            PassLayout::Pass => directory.join(format!("pass_{pass}")),
            PassLayout::Pmc => directory.join(format!("pmc_{pass}")),
        }
    }

    /// The per-process file name template without `-o`.
    pub fn process_name(self) -> &'static str {
        match self {
            PassLayout::Pass => "%pid%",
            PassLayout::Pmc => "%hostname%/%pid%",
        }
    }
}

/// What in `directory` shows an earlier profile: `pass_N` and `pmc_N` entries and merged files
/// of any of `bases`, by name, sorted.
fn earlier_profile(directory: &Path, bases: &[&str]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| {
            let pass = ["pass_", "pmc_"].iter().any(|prefix| {
                name.strip_prefix(prefix)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            });
            let merged = name.rsplit_once('.').is_some_and(|(stem, extension)| {
                bases.contains(&stem) && MERGED_EXTENSIONS.contains(&extension)
            });
            pass || merged
        })
        .collect();
    found.sort();
    found
}

/// Refuses destinations that hold an earlier profile (a `pass_N` or `pmc_N` entry, or a merged file of a
/// profile about to be written there) or that are not directories; checked for every profile
/// before the application first runs.
pub fn check_unused(destinations: &[Destination]) -> Result<(), CliError> {
    for (i, d) in destinations.iter().enumerate() {
        if destinations[..i].iter().any(|e| e.directory == d.directory) {
            continue;
        }
        if d.directory.exists() && !d.directory.is_dir() {
            return Err(CliError::input(format!(
                "output directory {} is not a directory",
                d.directory.display()
            )));
        }
        let bases: Vec<&str> = destinations
            .iter()
            .filter(|e| e.directory == d.directory)
            .map(|e| e.base.as_str())
            .collect();
        let found = earlier_profile(&d.directory, &bases);
        if found.is_empty() {
            continue;
        }
        let mut shown: Vec<String> = found.iter().take(3).cloned().collect();
        if found.len() > 3 {
            shown.push("...".into());
        }
        return Err(CliError::input(format!(
            "output directory {} already holds a profile ({}); give another with -d (without -d each run gets a new {DEFAULT_DIRECTORY}) or remove it",
            d.directory.display(),
            shown.join(", ")
        )));
    }
    Ok(())
}

/// The output directories of a command, each locked against other rtl-pmc runs until dropped.
#[derive(Debug)]
pub struct Claimed {
    /// Open handles of the directories, holding their locks.
    _locks: Vec<std::fs::File>,
}

/// Claims every directory of `destinations` for this run: each is made when missing and locked
/// (an advisory lock, released when the process ends however it ends), then checked as
/// [`check_unused`] checks it, so of two runs started at once into one directory one profiles
/// and the other is refused with exit 2, before its application runs.
pub fn claim(destinations: &[Destination]) -> Result<Claimed, CliError> {
    check_unused(destinations)?;
    let mut locks = Vec::new();
    for (i, d) in destinations.iter().enumerate() {
        if destinations[..i].iter().any(|e| e.directory == d.directory) {
            continue;
        }
        let io = |e: std::io::Error| CliError {
            message: format!("{}: {e}", d.directory.display()),
            exit_code: 1,
        };
        std::fs::create_dir_all(&d.directory).map_err(io)?;
        let handle = std::fs::File::open(&d.directory).map_err(io)?;
        match handle.try_lock() {
            Ok(()) => locks.push(handle),
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(CliError::input(format!(
                    "output directory {} is in use by another rtl-pmc run; give another with -d (without -d each run gets a new {DEFAULT_DIRECTORY})",
                    d.directory.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
    }
    // A run that held a directory until a moment ago has left its profile there.
    check_unused(destinations)?;
    Ok(Claimed { _locks: locks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_with_an_earlier_profile_are_refused() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-destination-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("notes.csv"), "").unwrap();
        std::fs::write(dir.join("pass_x"), "").unwrap();
        let at = |base: &str| Destination {
            directory: dir.clone(),
            base: base.into(),
        };
        // Other files do not count.
        assert_eq!(check_unused(&[at("results"), at("other")]), Ok(()));
        std::fs::write(dir.join("other.db"), "").unwrap();
        assert_eq!(check_unused(&[at("results")]), Ok(()));
        let refused = check_unused(&[at("results"), at("other")]).unwrap_err();
        assert_eq!(refused.exit_code, 2);
        assert_eq!(
            refused.message,
            format!(
                "output directory {} already holds a profile (other.db); give another with -d (without -d each run gets a new %hostname%/%pid%) or remove it",
                dir.display()
            )
        );
        for pass in ["pass_1", "pass_2", "pass_3", "pass_10"] {
            std::fs::create_dir(dir.join(pass)).unwrap();
        }
        assert!(check_unused(&[at("results")])
            .unwrap_err()
            .message
            .contains("(pass_1, pass_10, pass_2, ...)"));
        let file = dir.join("notes.csv");
        let not_a_directory = check_unused(&[Destination {
            directory: file.clone(),
            base: "results".into(),
        }]);
        assert_eq!(
            not_a_directory.unwrap_err().message,
            format!("output directory {} is not a directory", file.display())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

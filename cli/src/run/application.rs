//! Finding the application before anything is written: a name without a `/` is looked up on
//! `PATH` as the shell does, a path must name an executable file.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why the application cannot be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplicationError {
    /// A path that names nothing.
    #[error("application '{0}' not found")]
    Missing(String),
    /// A path that names a directory or another non-file.
    #[error("application '{0}' is not a file")]
    NotAFile(String),
    /// A file without execute permission.
    #[error("application '{0}' is not executable (chmod +x it)")]
    NotExecutable(String),
    /// A bare name that no `PATH` directory holds as an executable file.
    #[error("application '{0}' not found on PATH (give its path, e.g. ./{0})")]
    NotOnPath(String),
}

fn executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The file `program` runs, searching `path` (the value of `PATH`) for a bare name.
pub fn locate(program: &str, path: Option<&OsStr>) -> Result<PathBuf, ApplicationError> {
    if program.is_empty() {
        return Err(ApplicationError::Missing(program.to_string()));
    }
    if program.contains('/') {
        let file = Path::new(program);
        return match file.metadata() {
            Err(_) => Err(ApplicationError::Missing(program.to_string())),
            Ok(m) if !m.is_file() => Err(ApplicationError::NotAFile(program.to_string())),
            Ok(_) if !executable(file) => Err(ApplicationError::NotExecutable(program.to_string())),
            Ok(_) => Ok(file.to_path_buf()),
        };
    }
    std::env::split_paths(path.unwrap_or_default())
        // An empty entry means the current directory, as for the shell.
        .map(|dir| match dir.as_os_str().is_empty() {
            true => Path::new(".").join(program),
            false => dir.join(program),
        })
        .find(|candidate| executable(candidate))
        .ok_or_else(|| ApplicationError::NotOnPath(program.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applications_are_found_or_named_in_one_message() {
        let dir = std::env::temp_dir().join(format!("rtl-pmc-app-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tool = dir.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = dir.join("plain");
        std::fs::write(&plain, "data").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let search = std::env::join_paths([Path::new("/nonexistent"), &dir]).unwrap();
        let at = |p: &Path| p.display().to_string();

        assert_eq!(locate("tool", Some(&search)), Ok(tool.clone()));
        assert_eq!(locate(&at(&tool), None), Ok(tool.clone()));
        assert_eq!(
            locate("plain", Some(&search)).unwrap_err().to_string(),
            "application 'plain' not found on PATH (give its path, e.g. ./plain)"
        );
        assert_eq!(
            locate(&at(&plain), None).unwrap_err().to_string(),
            format!(
                "application '{}' is not executable (chmod +x it)",
                plain.display()
            )
        );
        assert_eq!(
            locate(&at(&dir), None).unwrap_err().to_string(),
            format!("application '{}' is not a file", dir.display())
        );
        let missing = dir.join("missing");
        assert_eq!(
            locate(&at(&missing), None).unwrap_err().to_string(),
            format!("application '{}' not found", missing.display())
        );
        assert_eq!(
            locate("tool", None),
            Err(ApplicationError::NotOnPath("tool".into()))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

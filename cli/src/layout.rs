//! Where `rtl-pmc` finds the files that come with it: beside the executable (a cargo build's
//! `target/<profile>/`), else in `../lib/rtl-pmc/` relative to it (an installed prefix:
//! `PREFIX/bin/rtl-pmc`, `PREFIX/lib/rtl-pmc/`, as `install.sh` lays it out).

use std::path::{Path, PathBuf};

/// The installed library directory, relative to the executable's directory.
pub const INSTALLED_LIBRARY_DIR: &str = "../lib/rtl-pmc";

/// The directories searched, in order, for the files that come with the executable `exe`.
pub fn directories(exe: &Path) -> Vec<PathBuf> {
    let Some(dir) = exe.parent() else {
        return Vec::new();
    };
    vec![dir.to_path_buf(), dir.join(INSTALLED_LIBRARY_DIR)]
}

/// The first of [`directories`] holding a file `name`.
pub fn find(exe: &Path, name: &str) -> Option<PathBuf> {
    directories(exe)
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// What a search for `name` that found nothing looked through: `NAME not found in DIR or DIR`.
pub fn searched(exe: &Path, name: &str) -> String {
    let dirs = directories(exe);
    let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!("{name} not found in {}", shown.join(" or "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_beside_the_executable_come_first_then_the_installed_directory() {
        let root = std::env::temp_dir().join(format!("rtl-pmc-layout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let bin = root.join("bin");
        let lib = root.join("lib/rtl-pmc");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        let exe = bin.join("rtl-pmc");
        assert_eq!(find(&exe, "librtl_pmc.so"), None);
        std::fs::write(lib.join("librtl_pmc.so"), b"").unwrap();
        assert_eq!(
            find(&exe, "librtl_pmc.so"),
            Some(bin.join("../lib/rtl-pmc/librtl_pmc.so"))
        );
        std::fs::write(bin.join("librtl_pmc.so"), b"").unwrap();
        assert_eq!(find(&exe, "librtl_pmc.so"), Some(bin.join("librtl_pmc.so")));
        assert_eq!(
            searched(&exe, "x.so"),
            format!(
                "x.so not found in {} or {}",
                bin.display(),
                bin.join("../lib/rtl-pmc").display()
            )
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}

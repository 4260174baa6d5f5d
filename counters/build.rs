//! Embeds every architecture definition file of `../arch-defs` into the library, so the
//! catalog never reads the file system at run time.

use std::{env, fs, path::Path};

fn yaml_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| {
            let stem = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let absolute = fs::canonicalize(&path).unwrap_or(path);
            (stem, absolute.display().to_string())
        })
        .collect();
    files.sort();
    files
}

fn table(name: &str, files: &[(String, String)]) -> String {
    let mut out = format!("static {name}: &[(&str, &str)] = &[\n");
    for (stem, path) in files {
        out.push_str(&format!("    ({stem:?}, include_str!({path:?})),\n"));
    }
    out.push_str("];\n");
    out
}

fn main() {
    let manifest = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let defs = Path::new(&manifest).join("../arch-defs");
    let shared = defs.join("shared");
    println!("cargo:rerun-if-changed={}", defs.display());
    println!("cargo:rerun-if-changed={}", shared.display());
    let arch_files = yaml_files(&defs);
    let shared_files = yaml_files(&shared);
    for (_, path) in arch_files.iter().chain(&shared_files) {
        println!("cargo:rerun-if-changed={path}");
    }
    let code = table("ARCH_FILES", &arch_files) + &table("SHARED_FILES", &shared_files);
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin_files.rs");
    fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

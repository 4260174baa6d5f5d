//! Links the demo against `libhsa-runtime64.so.1` the way programs built with ROCm are: against
//! a library whose SONAME is `libhsa-runtime64.so.1` and whose `hsa_*` symbols carry the version
//! `ROCR_1`. A stub with exactly those properties is compiled here (from the function list of
//! `src/hsa_api.rs`), so building needs no ROCm; at run time `LD_LIBRARY_PATH` picks the simulated
//! runtime or a real one.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let api = std::fs::read_to_string("src/hsa_api.rs").expect("src/hsa_api.rs is readable");
    let names: Vec<&str> = api
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub fn "))
        .filter_map(|rest| rest.split('(').next())
        .collect();
    assert!(
        names.len() > 10,
        "no `pub fn hsa_*` declarations found in src/hsa_api.rs"
    );
    let stub: String = names
        .iter()
        .map(|name| format!("int {name}(void) {{ return 0x1000; }}\n"))
        .collect();
    std::fs::write(out.join("hsa_stub.c"), stub).expect("OUT_DIR is writable");
    std::fs::write(
        out.join("rocr.map"),
        "ROCR_1 { global: hsa_*; local: *; };\n",
    )
    .expect("OUT_DIR is writable");
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-o"])
        .arg(out.join("libhsa-runtime64.so"))
        .arg(out.join("hsa_stub.c"))
        .arg("-Wl,-soname,libhsa-runtime64.so.1")
        .arg(format!(
            "-Wl,--version-script={}",
            out.join("rocr.map").display()
        ))
        .status()
        .expect("a C compiler (cc) is needed to build the link stub");
    assert!(
        status.success(),
        "compiling the libhsa-runtime64 link stub failed"
    );
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=dylib=hsa-runtime64");
    println!("cargo:rerun-if-changed=src/hsa_api.rs");
    println!("cargo:rerun-if-changed=build.rs");
}

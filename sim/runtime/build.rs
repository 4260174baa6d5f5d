//! Gives `libhsa_runtime64.so` ROCr's identity: SONAME `libhsa-runtime64.so.1` and every exported
//! `hsa_*` symbol in the version node `ROCR_1` (the `.symver` directives next to each trampoline
//! make the definitions `@@ROCR_1`; the script declares the node and hides everything else).

use std::path::PathBuf;

fn main() {
    let dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let script = dir.join("rocr.map");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhsa-runtime64.so.1");
    // Every binary linking this crate defines `hsa_*@@ROCR_1`, so every link needs the node.
    println!(
        "cargo:rustc-link-arg=-Wl,--version-script={}",
        script.display()
    );
}

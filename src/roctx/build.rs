//! Gives the library the identity of ROCm's roctx library: the soname `libroctx64.so.4`, so that
//! once preloaded it also satisfies the application's `DT_NEEDED` entry and `dlopen` by that
//! name, and the symbol version `ROCTX_4.1` its roctx functions carry in ROCm.

fn main() {
    let map = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("roctx.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libroctx64.so.4");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    println!("cargo:rerun-if-changed=roctx.map");
    println!("cargo:rerun-if-changed=build.rs");
}

//! One library answers under both of libdrm's names (`--sim` links it as `libdrm.so.2` and
//! `libdrm_amdgpu.so.1`); its SONAME is the second, so a program needing both loads it once.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdrm_amdgpu.so.1");
}

//! Integration tests stand in for the HSA runtime by exporting `hsa_agent_get_info` from the test
//! executable, which the library finds with `dlsym(RTLD_DEFAULT, ...)`.

fn main() {
    println!("cargo:rustc-link-arg-tests=-rdynamic");
}

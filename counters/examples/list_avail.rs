//! Prints rocprofv3-style `--list-avail` output for one architecture's reference GPU.
//!
//! `cargo run -p rtl-pmc-counters --example list_avail -- gfx942 '^TCC_HIT'`

use regex::Regex;
use rtl_pmc_counters::{format_list_avail, list_avail, Catalog};

fn main() {
    let mut args = std::env::args().skip(1);
    let arch = args.next().unwrap_or_else(|| "gfx942".to_string());
    let pattern = args.next().unwrap_or_default();
    let filter = match Regex::new(&pattern) {
        Ok(filter) => filter,
        Err(e) => {
            eprintln!("bad pattern '{pattern}': {e}");
            std::process::exit(2);
        }
    };
    let catalog = match Catalog::builtin(&arch) {
        Ok(catalog) => catalog,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let reference = catalog.reference_gpu();
    match reference {
        Some(gpu) => println!("Name:{arch} (dimensions of a {})", gpu.product),
        None => println!("Name:{arch} (no reference GPU: dimensions omitted)"),
    }
    let listings = list_avail(&catalog, reference.map(|g| &g.topology), &|name| {
        filter.is_match(name)
    });
    print!("{}", format_list_avail(&listings));
}

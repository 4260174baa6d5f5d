//! Extra-counter files (`Catalog::add_extra_text`): any text is added or refused, and a refused
//! file leaves the catalog as it was; every counter it adds resolves to hardware events or
//! says why not.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rtl_pmc_counters::Catalog;

fn base() -> &'static Catalog {
    static BASE: OnceLock<Catalog> = OnceLock::new();
    BASE.get_or_init(|| Catalog::builtin("gfx942").expect("the gfx942 catalog loads"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut catalog = base().clone();
    match catalog.add_extra_text(Path::new("fuzz.yaml"), text) {
        Ok(()) => {
            let added: Vec<String> = catalog
                .counter_names()
                .filter(|n| base().counter(n).is_none())
                .map(str::to_string)
                .collect();
            for name in added {
                let _ = catalog.hardware_events(&name);
            }
        }
        Err(_) => assert_eq!(catalog.len(), base().len(), "a refused file added counters"),
    }
});

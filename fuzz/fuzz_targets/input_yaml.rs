//! rocprofv3 YAML job files (`jobs:` with `pmc` or `pmc_groups`, filters, outputs), parsed as
//! `rtl-pmc -i input.yaml` parses them; `input_file.rs` says what must hold.
#![no_main]

mod input_file;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        input_file::check("input.yaml", text);
    }
});

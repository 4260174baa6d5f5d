//! rocprofv3 JSON job files, parsed as `rtl-pmc -i input.json` parses them (by the YAML parser,
//! from JSON seeds); `input_file.rs` says what must hold.
#![no_main]

mod input_file;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        input_file::check("input.json", text);
    }
});

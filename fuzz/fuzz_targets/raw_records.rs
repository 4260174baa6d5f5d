//! Raw record files (`rtl_pmc::dispatch::records::read`): any bytes give records or errors,
//! and reading ends after the first error; their header's tally reads or is an error.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rtl_pmc::dispatch::records;

fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("rtl-pmc-fuzz-{}.rtlraw", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(path, data).expect("the scratch file is writable");
    let _ = records::read_tally(path);
    let mut errors = 0;
    for item in records::read(path) {
        assert_eq!(errors, 0, "an item after an error");
        if item.is_err() {
            errors += 1;
        }
    }
});

//! Counter expressions (`rtl_pmc_counters::Expr::parse`): any text is parsed or refused with an
//! error naming a column inside it, and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtl_pmc_counters::{Error, Expr};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Expr::parse("FUZZ", text) {
        Ok(expr) => {
            let mut names = 0usize;
            expr.for_each_name(&mut |_| names += 1);
        }
        Err(Error::Syntax { column, .. }) => {
            assert!(
                column >= 1 && column <= text.chars().count() + 1,
                "column {column}"
            );
        }
        Err(e) => panic!("a parse error that is not a syntax error: {e}"),
    }
});

//! The fast hash maps of the tables looked up per dispatch, shared with the interposer.

pub use rtl_pmc::fast_map::FastMap;

//! The counter engine of rtl-pmc.
#![deny(missing_docs)]

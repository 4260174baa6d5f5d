//! A simulated aqlprofile library.

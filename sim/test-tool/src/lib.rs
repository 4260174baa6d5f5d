//! A tools library for testing how the simulated runtime loads tools.

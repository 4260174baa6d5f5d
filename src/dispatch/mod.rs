//! The interposer: the `OnLoad`/`OnUnload` entry points the ROCm runtime calls.

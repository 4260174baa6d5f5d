//! `amd_signal_t`: the memory behind an `hsa_signal_t` in ROCr (the handle is its address).

use super::queue::amd_queue_t;

/// `amd_signal_kind64_t`.
pub type amd_signal_kind64_t = i64;
/// Invalid signal.
pub const AMD_SIGNAL_KIND_INVALID: amd_signal_kind64_t = 0;
/// A user (memory-backed) signal.
pub const AMD_SIGNAL_KIND_USER: amd_signal_kind64_t = 1;
/// A queue doorbell.
pub const AMD_SIGNAL_KIND_DOORBELL: amd_signal_kind64_t = -1;
/// A legacy (gfx7/8) queue doorbell.
pub const AMD_SIGNAL_KIND_LEGACY_DOORBELL: amd_signal_kind64_t = -2;

/// `amd_signal_t` (64 bytes, 64-byte aligned). The command processor decrements `value` by 1
/// on completion, after writing `start_ts`/`end_ts` (agent ticks) when profiling is enabled on
/// the queue.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct amd_signal_t {
    /// `AMD_SIGNAL_KIND_*`.
    pub kind: amd_signal_kind64_t,
    /// The signal value (for doorbells: the hardware doorbell pointer in ROCr).
    pub value: i64,
    /// Address the completion writes `event_id` to, waking interrupt waiters (0 = none).
    pub event_mailbox_ptr: u64,
    /// Event id written to the mailbox.
    pub event_id: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Dispatch start, agent ticks.
    pub start_ts: u64,
    /// Dispatch end, agent ticks.
    pub end_ts: u64,
    /// The queue of a doorbell signal.
    pub queue_ptr: *mut amd_queue_t,
    /// Reserved.
    pub reserved3: [u32; 2],
}

super::packets::zeroed_default!(amd_signal_t);

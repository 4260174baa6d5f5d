//! Kernel replay: one dispatch run once per event group, its memory saved before the first pass
//! and restored before each later one.
//!
//! The interposer submits, in place of the application's dispatch:
//! ```text
//! barrier-AND (waits for the previous counted dispatch on this GPU; completes `ready`)
//! barrier-AND (waits for gate 0)   start 0   kernel (completes K0)   read 0   stop 0 (D0)
//! barrier-AND (waits for gate 1)   start 1   kernel (completes K1)   read 1   stop 1 (D1)
//! ...
//! barrier-AND (waits for gate P; completes `link`, which the next counted dispatch waits for)
//! ```
//! Every packet has the barrier bit. The completion worker moves the dispatch on as its signals
//! complete, never blocking on one of them: once `ready` completed (everything before the
//! dispatch on its queue has finished, and so has the previous counted dispatch of the GPU) it
//! copies every allocation the GPU can reach ([`super::memory`]) to host memory and opens
//! gate 0. After pass 0 it copies the same memory again and keeps the byte ranges the kernel
//! changed; before every later pass it writes the saved bytes back over those ranges, and after
//! the last pass it writes pass 0's bytes there, so the application keeps exactly what pass 0
//! left. Then the application's completion signal completes, once, with pass 0's timestamps,
//! and gate P opens.
//!
//! Host memory (of a CPU agent's pools, locked for the GPUs, or of a region the host reaches) is
//! written back byte-exact: only the bytes that changed, because the application's other threads
//! may write the bytes between them at any time. Device memory changes only through kernels and
//! DMA copies, which do not run while a dispatch is replayed ([`super::copies`]), so changed
//! ranges a few bytes apart are written back as one copy, the bytes between them with the values
//! they had.
//!
//! Snapshots and device memory go through `hsa_memory_copy`, host memory of the snapshots comes
//! from a host memory pool of the runtime; nothing here knows which runtime it runs on.

use std::sync::{Arc, Mutex};

use super::copies::CopyOrder;
use super::memory::{changed_ranges, write_changed, MemoryMap, PoolAccess, Reach, Span};
use super::runtime::Hsa;
use crate::hsa::*;

/// Changed ranges of device memory closer than this are restored as one copy.
const MERGE_GAP: usize = 256;

/// The application's allocations and the runtime calls to read and write them.
pub struct Memory {
    hsa: Arc<Hsa>,
    map: Mutex<MemoryMap>,
    access: Mutex<PoolAccess>,
    /// Host buffers for snapshots, reused: (address, capacity).
    spare: Mutex<Vec<HostBuffer>>,
    /// The host pools (of CPU agents), snapshots allocated from the first (set once, when the
    /// session starts).
    host_pools: std::sync::OnceLock<Vec<hsa_amd_memory_pool_t>>,
    /// DMA copies, kept out of replay windows.
    copies: Arc<CopyOrder>,
}

/// Host memory from the runtime holding one snapshot.
pub struct HostBuffer {
    ptr: usize,
    capacity: usize,
}

impl HostBuffer {
    fn bytes(&self, len: usize) -> &[u8] {
        // SAFETY: `ptr` holds `capacity` bytes allocated by the runtime for this buffer only;
        // callers never ask beyond the capacity.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, len.min(self.capacity)) }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Memory {
    /// Empty bookkeeping.
    pub fn new(hsa: Arc<Hsa>) -> Memory {
        Memory {
            copies: Arc::new(CopyOrder::new(Arc::clone(&hsa))),
            hsa,
            map: Mutex::new(MemoryMap::default()),
            access: Mutex::new(PoolAccess::default()),
            spare: Mutex::new(Vec::new()),
            host_pools: std::sync::OnceLock::new(),
        }
    }

    /// The DMA copies in flight, ordered around replay windows.
    pub fn copies(&self) -> &Arc<CopyOrder> {
        &self.copies
    }

    /// Sets the host pools: what memory the process's threads write directly, and where
    /// snapshots come from (the first).
    pub fn set_host_pools(&self, pools: &[hsa_amd_memory_pool_t]) {
        let _ = self.host_pools.set(pools.to_vec());
    }

    /// Records an allocation.
    pub fn add(&self, base: usize, size: usize, reach: Reach) {
        lock(&self.map).add(base, size, reach);
    }

    /// Forgets an allocation.
    pub fn remove(&self, base: usize) {
        lock(&self.map).remove(base);
    }

    /// Records access given to `agents`.
    pub fn allow(&self, address: usize, agents: &[u64]) {
        lock(&self.map).allow(address, agents);
    }

    /// Whether `address` is inside a tracked allocation.
    pub fn contains(&self, address: usize) -> bool {
        lock(&self.map).contains(address)
    }

    /// The memory `agent`'s kernels can reach.
    pub fn reachable(&self, agent: hsa_agent_t) -> Vec<Span> {
        let map = lock(&self.map);
        self.reachable_in(&map, agent)
    }

    fn reachable_in(&self, map: &MemoryMap, agent: hsa_agent_t) -> Vec<Span> {
        let mut access = lock(&self.access);
        let host = self.host_pools.get().map_or(&[][..], Vec::as_slice);
        map.reachable(
            agent.handle,
            |pool| {
                access.reaches(pool, agent.handle, || {
                    self.hsa
                        .pool_access(agent, hsa_amd_memory_pool_t { handle: pool })
                        .is_none_or(|a| a == HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT)
                })
            },
            |pool| host.iter().any(|p| p.handle == pool),
        )
    }

    /// A host buffer of at least `capacity` bytes, or `None` if the runtime has none.
    pub fn take_buffer(&self, capacity: usize) -> Option<HostBuffer> {
        let capacity = capacity.max(1);
        {
            let mut spare = lock(&self.spare);
            if let Some(at) = spare.iter().position(|b| b.capacity >= capacity) {
                return Some(spare.swap_remove(at));
            }
        }
        let pool = *self.host_pools.get()?.first()?;
        let ptr = self.hsa.pool_allocate(pool, capacity)?;
        Some(HostBuffer {
            ptr: ptr as usize,
            capacity,
        })
    }

    /// Returns a buffer for reuse.
    pub fn give_buffer(&self, buffer: HostBuffer) {
        lock(&self.spare).push(buffer);
    }

    /// Frees every spare buffer (at unload).
    pub fn release_buffers(&self) {
        for buffer in lock(&self.spare).drain(..) {
            // SAFETY: spare buffers come from `pool_allocate` and nobody holds them.
            unsafe { self.hsa.pool_free(buffer.ptr as *mut std::ffi::c_void) };
        }
    }

    /// Copies between a tracked allocation and a snapshot buffer. Callers hold the map's lock
    /// and have checked that the allocation is still live and holds the range, and that the
    /// snapshot buffer is large enough.
    fn copy(&self, dst: usize, src: usize, len: usize) -> bool {
        // SAFETY: see above: both ranges are live memory of `len` bytes the runtime knows, and no
        // free of the allocation can run while the caller holds the map's lock.
        len == 0 || unsafe { self.hsa.memory_copy(dst as *mut _, src as *const _, len) }
    }
}

/// Why a dispatch cannot be replayed because of its arguments: a word of its argument segment
/// that is the address of `mapped` memory outside every tracked allocation.
///
/// # Safety
/// `kernarg` must be NULL or valid for reading `kernarg_size` bytes.
pub unsafe fn untracked_argument(
    memory: &Memory,
    kernarg: *const u8,
    kernarg_size: u32,
    mapped: impl Fn(usize) -> bool,
) -> Option<String> {
    if kernarg.is_null() {
        return None;
    }
    let words = kernarg_size as usize / 8;
    for i in 0..words {
        // SAFETY: see the function's contract; read unaligned.
        let word = unsafe { std::ptr::read_unaligned(kernarg.add(i * 8) as *const u64) } as usize;
        if !(0x10000..0x8000_0000_0000).contains(&word) || memory.contains(word) {
            continue;
        }
        if mapped(word) {
            return Some(format!(
                "argument bytes {}..{} hold the address 0x{word:x}, which lies outside every allocation rtl-pmc tracks",
                i * 8,
                i * 8 + 8
            ));
        }
    }
    None
}

/// Whether `address` lies in a page mapped in this process.
pub fn is_mapped(address: usize) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let base = address & !(page - 1);
    let mut residency = [0u8; 1];
    // SAFETY: mincore on one page-aligned page with a one-byte vector; it only reports whether
    // the page is mapped (ENOMEM when not).
    unsafe { libc::mincore(base as *mut libc::c_void, 1, residency.as_mut_ptr()) == 0 }
}

/// Byte counts of one replayed dispatch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bytes {
    /// Bytes saved before the first pass.
    pub saved: u64,
    /// Bytes written back, over all passes.
    pub restored: u64,
}

/// Where a replayed dispatch's window (from its snapshot to the last write-back) stands against
/// DMA copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Window {
    NotAsked,
    /// Waiting for the copies running to complete; new ones are held.
    Waiting,
    /// Open: copies are held until it closes.
    Open,
    Closed,
}

/// The host-side state of one replayed dispatch.
pub struct Replay {
    /// Completed when the queue reached the dispatch.
    pub ready: hsa_signal_t,
    /// Gate `i` holds pass `i`; the last holds the packets after the dispatch.
    pub gates: Vec<hsa_signal_t>,
    /// The GPU.
    pub agent: hsa_agent_t,
    memory: Arc<Memory>,
    spans: Vec<Span>,
    before: Option<HostBuffer>,
    after: Option<HostBuffer>,
    /// Changed ranges: where, and their offset in the snapshots.
    changed: Vec<(Span, usize)>,
    /// Gates opened so far.
    pub opened: usize,
    /// Whether memory was saved.
    pub saved: bool,
    /// Byte counts.
    pub bytes: Bytes,
    /// Problems to report once the dispatch completes.
    pub problems: Vec<String>,
    /// When the dispatch last moved on, and whether a stall was reported since.
    progress: (std::time::Instant, bool),
    /// How long it may wait for one step before that is reported.
    stall: std::time::Duration,
    window: Window,
}

impl Replay {
    /// A replay with its signals and a snapshot buffer pair sized for `capacity` bytes, that
    /// reports a wait of `stall` or longer for one step.
    pub fn new(
        memory: Arc<Memory>,
        agent: hsa_agent_t,
        ready: hsa_signal_t,
        gates: Vec<hsa_signal_t>,
        buffers: (HostBuffer, HostBuffer),
        stall: std::time::Duration,
    ) -> Replay {
        Replay {
            ready,
            gates,
            agent,
            memory,
            spans: Vec::new(),
            before: Some(buffers.0),
            after: Some(buffers.1),
            changed: Vec::new(),
            opened: 0,
            saved: false,
            bytes: Bytes::default(),
            problems: Vec::new(),
            progress: (std::time::Instant::now(), false),
            stall,
            window: Window::NotAsked,
        }
    }

    /// Reports, once per stall, that the dispatch has waited its stall limit for `what`: the
    /// application's queue holds the dispatch's packets until then.
    pub fn check_stall(&mut self, dispatch: u64, kernel: &str, what: &str) {
        let (since, reported) = self.progress;
        if !reported && since.elapsed() >= self.stall {
            self.progress.1 = true;
            super::warn(&format!(
                "kernel replay of dispatch {dispatch} ({kernel}) has waited {} s for {what}; it goes on when that completes",
                self.stall.as_secs_f64()
            ));
        }
    }

    /// Opens the dispatch's window against DMA copies: whether it is open (no copy runs, and
    /// none starts until it closes). When not, new copies are held and it asks again once
    /// [`Replay::awaited_before_save`] falls below 1.
    pub fn open_window(&mut self) -> bool {
        match self.window {
            Window::NotAsked | Window::Waiting => {
                let asked = self.window == Window::Waiting;
                let open = self.memory.copies.request_window(asked);
                self.window = if open { Window::Open } else { Window::Waiting };
                open
            }
            Window::Open | Window::Closed => true,
        }
    }

    /// Closes the window (after the last write-back, or when the dispatch is given up): held
    /// copies go on.
    pub fn close_window(&mut self) {
        match self.window {
            Window::Waiting => self.memory.copies.close_window(false),
            Window::Open => self.memory.copies.close_window(true),
            Window::NotAsked | Window::Closed => {}
        }
        self.window = Window::Closed;
    }

    /// The signal that moves the dispatch on before its memory is saved: `ready`, or while the
    /// window waits for copies, the count of running copies.
    pub fn awaited_before_save(&self) -> hsa_signal_t {
        match self.window {
            Window::Waiting => self.memory.copies.busy().unwrap_or(self.ready),
            _ => self.ready,
        }
    }

    /// Opens the next gate.
    pub fn open_next(&mut self, hsa: &Hsa) {
        self.progress = (std::time::Instant::now(), false);
        if let Some(gate) = self.gates.get(self.opened) {
            hsa.signal_store(*gate, 0);
            self.opened += 1;
        }
    }

    /// Opens every gate not open yet (a dispatch given up).
    pub fn open_all(&mut self) {
        self.close_window();
        let hsa = Arc::clone(&self.memory.hsa);
        while self.opened < self.gates.len() {
            self.open_next(&hsa);
        }
    }

    /// Makes sure both buffers hold `len` bytes.
    fn fit(&mut self, len: usize) -> bool {
        for slot in [&mut self.before, &mut self.after] {
            if slot.as_ref().is_some_and(|b| b.capacity >= len) {
                continue;
            }
            if let Some(old) = slot.take() {
                self.memory.give_buffer(old);
            }
            *slot = self.memory.take_buffer(len);
            if slot.is_none() {
                return false;
            }
        }
        true
    }

    /// Saves every allocation the GPU can reach (before pass 0).
    pub fn save(&mut self) {
        self.saved = true;
        let memory = Arc::clone(&self.memory);
        let map = lock(&memory.map);
        self.spans = memory.reachable_in(&map, self.agent);
        let total: usize = self.spans.iter().map(|s| s.len).sum();
        if !self.fit(total) {
            self.problems.push(format!(
                "no host memory for a {total}-byte snapshot; passes after the first ran on the memory the previous pass left"
            ));
            self.spans.clear();
            return;
        }
        let before = self.before.as_ref().map_or(0, |b| b.ptr);
        let mut offset = 0;
        for span in &self.spans {
            if !memory.copy(before + offset, span.base, span.len) {
                self.problems.push(format!(
                    "hsa_memory_copy failed saving {} bytes at 0x{:x}",
                    span.len, span.base
                ));
            }
            offset += span.len;
        }
        self.bytes.saved = total as u64;
    }

    /// After pass 0: finds the ranges the kernel changed.
    pub fn compare(&mut self) {
        let memory = Arc::clone(&self.memory);
        let map = lock(&memory.map);
        let (Some(before), Some(after)) = (&self.before, &self.after) else {
            return;
        };
        let mut offset = 0;
        for span in &self.spans {
            if map.still_holds(*span) && memory.copy(after.ptr + offset, span.base, span.len) {
                let old = &before.bytes(offset + span.len)[offset..];
                let new = &after.bytes(offset + span.len)[offset..];
                self.changed
                    .extend(
                        changed_ranges(old, new, MERGE_GAP)
                            .into_iter()
                            .map(|(start, len)| {
                                let range = Span {
                                    base: span.base + start,
                                    len,
                                    ..*span
                                };
                                (range, offset + start)
                            }),
                    );
            }
            offset += span.len;
        }
    }

    /// Writes the saved bytes (`original`) or pass 0's bytes back over the changed ranges. In
    /// host memory only the bytes that changed are written: the application's threads may be
    /// writing the bytes between them.
    pub fn restore(&mut self, original: bool) {
        let memory = Arc::clone(&self.memory);
        let map = lock(&memory.map);
        let (Some(before), Some(after)) = (&self.before, &self.after) else {
            return;
        };
        let source = if original { before } else { after };
        for &(span, offset) in &self.changed {
            let (address, len) = (span.base, span.len);
            if !map.still_holds(span) {
                continue;
            }
            if span.host {
                let old = &before.bytes(offset + len)[offset..];
                let new = &after.bytes(offset + len)[offset..];
                let src = &source.bytes(offset + len)[offset..];
                // SAFETY: host memory is the process's own and live (the map says the
                // allocation still holds the range, and no free runs while its lock is held).
                self.bytes.restored += unsafe { write_changed(address as *mut u8, src, old, new) };
                continue;
            }
            if memory.copy(address, source.ptr + offset, len) {
                self.bytes.restored += len as u64;
            } else {
                self.problems.push(format!(
                    "hsa_memory_copy failed restoring {len} bytes at 0x{address:x}"
                ));
            }
        }
        // The host stores reach memory before the gate that lets the next pass run (a relaxed
        // signal store) opens.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    }

    /// Closes the window and returns the snapshot buffers for reuse.
    pub fn release(&mut self) {
        self.close_window();
        for buffer in [self.before.take(), self.after.take()]
            .into_iter()
            .flatten()
        {
            self.memory.give_buffer(buffer);
        }
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        self.release();
    }
}

//! Queues: the 256-byte `amd_queue_t` with its ring of 64-byte slots and doorbell signal, the
//! read/write index functions, queue creation and destruction, and profiling enablement.
//!
//! A hardware queue belongs to its GPU's device thread ([`crate::device`]); ringing its doorbell
//! wakes that thread. An intercept queue ([`crate::intercept`]) is a proxy ring whose doorbell
//! runs the registered handlers on the ringing thread, in front of a private hardware queue.

use crate::device;
use crate::ffi::guard;
use crate::hsa::*;
use crate::intercept::InterceptState;
use crate::settings::{injected_failure, settings};
use crate::signals::SignalObj;
use crate::system;
use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::collections::BTreeSet;
use std::ffi::c_void;
use std::mem::offset_of;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Mutex;

/// Largest queue, in packets.
pub const QUEUE_MAX_SIZE: u32 = 1 << 17;
/// Smallest queue the agent reports.
pub const QUEUE_MIN_SIZE: u32 = 64;

/// What kind of queue an object is.
pub enum QueueKind {
    /// A hardware queue processed by the device thread of `device`.
    Hardware,
    /// An intercept queue in front of the hardware queue `hw`.
    Intercept {
        /// The private hardware queue.
        hw: *mut QueueObj,
        /// Handlers and staging buffer, locked while handlers run.
        state: Mutex<InterceptState>,
    },
}

/// A queue. Its address is the `hsa_queue_t*` the application sees (`amd_queue_t` at 0).
#[repr(C, align(64))]
pub struct QueueObj {
    amd: UnsafeCell<amd_queue_t>,
    /// The ring (`size` slots).
    pub ring: *mut AqlPacket,
    /// `size - 1`.
    pub mask: u64,
    /// The doorbell signal.
    pub doorbell: *mut SignalObj,
    /// Index of the GPU (device) the queue runs on.
    pub device: usize,
    /// Queue id (`hsa_queue_t::id`).
    pub id: u64,
    /// Hardware or intercept.
    pub kind: QueueKind,
}

// SAFETY: the shared parts are accessed with atomics (indices, properties, ring headers) or under
// the intercept mutex; the raw pointers are owned by the queue and freed only by destroy.
unsafe impl Sync for QueueObj {}
// SAFETY: as above.
unsafe impl Send for QueueObj {}

static LIVE_QUEUES: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());
static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(0);
static QUEUES_CREATED: AtomicU64 = AtomicU64::new(0);

impl QueueObj {
    fn amd_field<T>(&self, offset: usize) -> *mut T {
        // SAFETY: offsets of fields inside the UnsafeCell'd amd_queue_t.
        unsafe { (self.amd.get() as *mut u8).add(offset) as *mut T }
    }

    /// The write index (`write_dispatch_id`).
    pub fn write_index(&self) -> &AtomicU64 {
        // SAFETY: an aligned u64 inside the queue, only accessed atomically.
        unsafe { AtomicU64::from_ptr(self.amd_field(offset_of!(amd_queue_t, write_dispatch_id))) }
    }

    /// The read index (`read_dispatch_id`).
    pub fn read_index(&self) -> &AtomicU64 {
        // SAFETY: as for the write index.
        unsafe { AtomicU64::from_ptr(self.amd_field(offset_of!(amd_queue_t, read_dispatch_id))) }
    }

    /// `queue_properties`.
    pub fn properties(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 inside the queue, only accessed atomically.
        unsafe { AtomicU32::from_ptr(self.amd_field(offset_of!(amd_queue_t, queue_properties))) }
    }

    /// Whether dispatch timestamps are written into completion signals.
    pub fn profiling(&self) -> bool {
        self.properties().load(SeqCst) & AMD_QUEUE_PROPERTIES_ENABLE_PROFILING != 0
    }

    /// Ring size in slots.
    pub fn size(&self) -> u64 {
        self.mask + 1
    }

    /// The slot of packet index `index`.
    pub fn slot(&self, index: u64) -> *mut AqlPacket {
        // SAFETY: masked into the ring.
        unsafe { self.ring.add((index & self.mask) as usize) }
    }

    /// The first dword (header | setup << 16) of a slot, as an atomic.
    pub fn slot_header(&self, index: u64) -> &AtomicU32 {
        // SAFETY: slots are 64-byte aligned; dword 0 is only accessed atomically once published.
        unsafe { AtomicU32::from_ptr(self.slot(index) as *mut u32) }
    }

    /// Writes a packet into slot `index`: body first, then the header dword (release).
    pub fn publish(&self, index: u64, packet: &AqlPacket) {
        // SAFETY: a packet reference is 64 readable bytes.
        unsafe { self.publish_from(index, packet) }
    }

    /// [`QueueObj::publish`] from a packet that may be unaligned.
    ///
    /// # Safety
    /// `packet` must point at 64 readable bytes.
    pub unsafe fn publish_from(&self, index: u64, packet: *const AqlPacket) {
        let slot = self.slot(index) as *mut u32;
        let from = packet as *const u32;
        // SAFETY: the slot belongs to the producer until its header is published; the caller
        // promises 64 readable bytes, copied bytewise (no alignment needed).
        unsafe {
            std::ptr::copy_nonoverlapping(from.add(1) as *const u8, slot.add(1) as *mut u8, 60);
            let header = std::ptr::read_unaligned(from);
            self.slot_header(index).store(header, SeqCst);
        }
    }

    /// Marks slot `index` INVALID (consumed).
    pub fn invalidate(&self, index: u64) {
        self.slot_header(index)
            .store(HSA_PACKET_TYPE_INVALID as u32, SeqCst);
    }

    /// The `hsa_queue_t*` of this queue.
    pub fn as_hsa(&self) -> *mut hsa_queue_t {
        self as *const QueueObj as *mut hsa_queue_t
    }

    /// The intercept state, for intercept queues.
    pub fn intercept(&self) -> Option<(&QueueObj, &Mutex<InterceptState>)> {
        match &self.kind {
            // SAFETY: the hardware queue lives as long as its intercept queue.
            QueueKind::Intercept { hw, state } => Some((unsafe { &**hw }, state)),
            QueueKind::Hardware => None,
        }
    }

    fn new(device: usize, size: u32, type_: hsa_queue_type32_t, kind: QueueKind) -> *mut QueueObj {
        let layout = ring_layout(size);
        // SAFETY: non-zero size layout.
        let ring = unsafe { std::alloc::alloc(layout) } as *mut AqlPacket;
        if ring.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        for i in 0..size as usize {
            // SAFETY: within the fresh allocation.
            unsafe { ring.add(i).write(AqlPacket::default()) };
        }
        let doorbell = SignalObj::create(AMD_SIGNAL_KIND_DOORBELL, -1);
        let id = NEXT_QUEUE_ID.fetch_add(1, SeqCst);
        let amd = amd_queue_t {
            hsa_queue: hsa_queue_t {
                type_,
                features: HSA_QUEUE_FEATURE_KERNEL_DISPATCH,
                base_address: ring as *mut c_void,
                // SAFETY: just created.
                doorbell_signal: unsafe { &*doorbell }.handle(),
                size,
                reserved1: 0,
                id,
            },
            queue_properties: AMD_QUEUE_PROPERTIES_IS_PTR64,
            ..Default::default()
        };
        let queue = Box::into_raw(Box::new(QueueObj {
            amd: UnsafeCell::new(amd),
            ring,
            mask: size as u64 - 1,
            doorbell,
            device,
            id,
            kind,
        }));
        // SAFETY: just created.
        unsafe { &*doorbell }.set_doorbell_queue(queue);
        live().insert(queue as usize);
        queue
    }

    /// Frees the queue, its ring and doorbell.
    ///
    /// # Safety
    /// No thread may use the queue afterwards.
    unsafe fn free(queue: *mut QueueObj) {
        live().remove(&(queue as usize));
        // SAFETY: per the contract; the queue was made by `new`.
        unsafe {
            let q = Box::from_raw(queue);
            std::alloc::dealloc(q.ring as *mut u8, ring_layout(q.size() as u32));
            SignalObj::destroy(q.doorbell);
        }
    }
}

fn ring_layout(size: u32) -> Layout {
    Layout::from_size_align(size as usize * 64, 4096).unwrap_or_else(|_| Layout::new::<AqlPacket>())
}

fn live() -> std::sync::MutexGuard<'static, BTreeSet<usize>> {
    LIVE_QUEUES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The live queue behind an `hsa_queue_t*`, if it is one of ours.
pub fn lookup<'a>(queue: *const hsa_queue_t) -> Option<&'a QueueObj> {
    // SAFETY: only addresses of live queues are dereferenced.
    live()
        .contains(&(queue as usize))
        .then(|| unsafe { &*(queue as *const QueueObj) })
}

/// Announces new packets of `queue` (its doorbell was stored to).
pub fn ring_doorbell(queue: &QueueObj) {
    match &queue.kind {
        QueueKind::Hardware => device::wake(queue.device),
        QueueKind::Intercept { .. } => crate::intercept::process_doorbell(queue),
    }
}

/// Validates creation arguments; returns the device index of `agent`.
fn check_create(
    agent: hsa_agent_t,
    size: u32,
    queue: *mut *mut hsa_queue_t,
) -> Result<usize, hsa_status_t> {
    if !system::initialized() {
        return Err(HSA_STATUS_ERROR_NOT_INITIALIZED);
    }
    let device = system::gpu_index(agent).ok_or(HSA_STATUS_ERROR_INVALID_AGENT)?;
    if queue.is_null() || size == 0 || !size.is_power_of_two() || size > QUEUE_MAX_SIZE {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    if injected_failure(&QUEUES_CREATED, settings().fail_queue_create) {
        return Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    }
    Ok(device)
}

/// Creates a hardware queue on device `device` and hands it to the device thread.
pub fn create_hardware(device: usize, size: u32, type_: hsa_queue_type32_t) -> *mut QueueObj {
    let queue = QueueObj::new(device, size, type_, QueueKind::Hardware);
    // SAFETY: just created.
    device::attach(device, unsafe { &*queue });
    queue
}

/// `hsa_queue_create`.
pub(crate) unsafe extern "C" fn hsa_queue_create(
    agent: hsa_agent_t,
    size: u32,
    type_: hsa_queue_type32_t,
    _callback: hsa_queue_error_callback,
    _data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        match check_create(agent, size, queue) {
            Err(status) => status,
            Ok(device) => {
                let q = create_hardware(device, size, type_);
                // SAFETY: checked non-null.
                unsafe { *queue = (*q).as_hsa() };
                HSA_STATUS_SUCCESS
            }
        }
    })
}

/// `hsa_amd_queue_intercept_create`: a proxy queue in front of a private hardware queue.
pub(crate) unsafe extern "C" fn hsa_amd_queue_intercept_create(
    agent_handle: hsa_agent_t,
    size: u32,
    type_: hsa_queue_type32_t,
    _callback: hsa_queue_error_callback,
    _data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if settings().no_intercept {
            return HSA_STATUS_ERROR;
        }
        if size < 3 {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        match check_create(agent_handle, size, queue) {
            Err(status) => status,
            Ok(device) => {
                let hw = create_hardware(device, size, type_);
                let state = Mutex::new(InterceptState::new(size as usize));
                let proxy = QueueObj::new(device, size, type_, QueueKind::Intercept { hw, state });
                // SAFETY: checked non-null.
                unsafe { *queue = (*proxy).as_hsa() };
                HSA_STATUS_SUCCESS
            }
        }
    })
}

/// `hsa_queue_destroy` (an intercept queue takes its hardware queue with it).
pub(crate) unsafe extern "C" fn hsa_queue_destroy(queue: *mut hsa_queue_t) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(q) = lookup(queue) else {
            return HSA_STATUS_ERROR_INVALID_QUEUE;
        };
        match &q.kind {
            QueueKind::Hardware => {
                device::detach(q.device, q.id);
                // SAFETY: detached from its device; the application no longer uses it.
                unsafe { QueueObj::free(queue as *mut QueueObj) };
            }
            QueueKind::Intercept { hw, state } => {
                // Wait for handlers running on other threads to return.
                drop(state.lock().unwrap_or_else(|p| p.into_inner()));
                let hw = *hw;
                // SAFETY: the hardware queue is private to this intercept queue.
                unsafe {
                    device::detach((*hw).device, (*hw).id);
                    QueueObj::free(hw);
                    QueueObj::free(queue as *mut QueueObj);
                }
            }
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_queue_inactivate`.
pub(crate) unsafe extern "C" fn hsa_queue_inactivate(queue: *mut hsa_queue_t) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if lookup(queue).is_some() {
            HSA_STATUS_SUCCESS
        } else {
            HSA_STATUS_ERROR_INVALID_QUEUE
        }
    })
}

/// `hsa_amd_profiling_set_profiler_enabled`: bit 3 of `queue_properties` (of the hardware
/// queue too, for intercept queues).
pub(crate) unsafe extern "C" fn hsa_amd_profiling_set_profiler_enabled(
    queue: *mut hsa_queue_t,
    enable: i32,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(q) = lookup(queue) else {
            return HSA_STATUS_ERROR_INVALID_QUEUE;
        };
        let set = |q: &QueueObj| {
            if enable != 0 {
                q.properties()
                    .fetch_or(AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, SeqCst);
            } else {
                q.properties()
                    .fetch_and(!AMD_QUEUE_PROPERTIES_ENABLE_PROFILING, SeqCst);
            }
        };
        set(q);
        if let Some((hw, _)) = q.intercept() {
            set(hw);
        }
        HSA_STATUS_SUCCESS
    })
}

/// The queue object behind a pointer the application passes to an index function.
///
/// # Safety
/// `queue` must be a live queue of this runtime (index functions are not validated, like ROCr).
unsafe fn q<'a>(queue: *const hsa_queue_t) -> &'a QueueObj {
    // SAFETY: per the contract.
    unsafe { &*(queue as *const QueueObj) }
}

macro_rules! index_ops {
    (load $field:ident: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(queue: *const hsa_queue_t) -> u64 {
            // SAFETY: the application passes a live queue.
            guard(0, || unsafe { q(queue) }.$field().load(SeqCst))
        }
    )*};
    (store $field:ident: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(queue: *const hsa_queue_t, value: u64) {
            // SAFETY: the application passes a live queue.
            guard((), || unsafe { q(queue) }.$field().store(value, SeqCst))
        }
    )*};
    (cas: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(queue: *const hsa_queue_t, expected: u64, value: u64) -> u64 {
            // SAFETY: the application passes a live queue.
            guard(0, || match unsafe { q(queue) }.write_index().compare_exchange(expected, value, SeqCst, SeqCst) {
                Ok(v) | Err(v) => v,
            })
        }
    )*};
    (add: $($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        pub(crate) unsafe extern "C" fn $name(queue: *const hsa_queue_t, value: u64) -> u64 {
            // SAFETY: the application passes a live queue.
            guard(0, || unsafe { q(queue) }.write_index().fetch_add(value, SeqCst))
        }
    )*};
}

index_ops!(load read_index: hsa_queue_load_read_index_relaxed, hsa_queue_load_read_index_scacquire);
index_ops!(load write_index: hsa_queue_load_write_index_relaxed, hsa_queue_load_write_index_scacquire);
index_ops!(store write_index: hsa_queue_store_write_index_relaxed, hsa_queue_store_write_index_screlease);
index_ops!(store read_index: hsa_queue_store_read_index_relaxed, hsa_queue_store_read_index_screlease);
index_ops!(cas: hsa_queue_cas_write_index_relaxed, hsa_queue_cas_write_index_scacquire, hsa_queue_cas_write_index_screlease, hsa_queue_cas_write_index_scacq_screl);
index_ops!(add: hsa_queue_add_write_index_relaxed, hsa_queue_add_write_index_scacquire, hsa_queue_add_write_index_screlease, hsa_queue_add_write_index_scacq_screl);

/// `hsa_amd_runtime_queue_create_register`: the simulator creates no runtime-internal queues, so
/// the notifier is accepted and never called.
pub(crate) unsafe extern "C" fn hsa_amd_runtime_queue_create_register(
    callback: hsa_amd_runtime_queue_notifier,
    _user_data: *mut c_void,
) -> hsa_status_t {
    if callback.is_some() {
        HSA_STATUS_SUCCESS
    } else {
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    }
}

/// `hsa_amd_queue_priority_t`: low, normal, high.
const HSA_AMD_QUEUE_PRIORITY_HIGH: u32 = 2;

/// `hsa_amd_queue_set_priority`: validated as ROCr validates it, then, as in ROCr, a hint to the
/// hardware's arbitration between queues; the simulated device starts every queue's packets as
/// soon as they may run, so it changes nothing.
pub(crate) unsafe extern "C" fn hsa_amd_queue_set_priority(
    queue: *mut hsa_queue_t,
    priority: u32,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        if lookup(queue).is_none() {
            return HSA_STATUS_ERROR_INVALID_QUEUE;
        }
        if priority > HSA_AMD_QUEUE_PRIORITY_HIGH {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        HSA_STATUS_SUCCESS
    })
}

/// `hsa_amd_queue_cu_set_mask`: malformed masks are refused as ROCr refuses them (a count not a
/// multiple of 32, no mask with a count). A mask that leaves every compute unit of the device on,
/// or no mask (the default), succeeds. A mask that turns compute units off fails with
/// `HSA_STATUS_ERROR`: the simulated device always spreads work over all its compute units, and
/// timing or counting a masked queue as if it were not would be wrong without saying so.
pub(crate) unsafe extern "C" fn hsa_amd_queue_cu_set_mask(
    queue: *const hsa_queue_t,
    num_cu_mask_count: u32,
    cu_mask: *const u32,
) -> hsa_status_t {
    guard(HSA_STATUS_ERROR, || {
        let Some(q) = lookup(queue) else {
            return HSA_STATUS_ERROR_INVALID_QUEUE;
        };
        if !num_cu_mask_count.is_multiple_of(32) || (num_cu_mask_count > 0 && cu_mask.is_null()) {
            return HSA_STATUS_ERROR_INVALID_ARGUMENT;
        }
        if num_cu_mask_count == 0 {
            return HSA_STATUS_SUCCESS;
        }
        // SAFETY: non-null, `num_cu_mask_count` bits in 32-bit words, as the API requires.
        let words = unsafe { std::slice::from_raw_parts(cu_mask, num_cu_mask_count as usize / 32) };
        let cus = device::cu_count(q.device).unwrap_or(0) as usize;
        let on = |cu: usize| {
            words
                .get(cu / 32)
                .is_some_and(|w| w & (1 << (cu % 32)) != 0)
        };
        if (0..cus).all(on) {
            HSA_STATUS_SUCCESS
        } else {
            HSA_STATUS_ERROR
        }
    })
}

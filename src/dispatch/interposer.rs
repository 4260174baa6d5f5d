//! The installed wrappers: queue creation and destruction, executable freeze and destroy, and
//! the intercept handler that rewrites dispatches.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::agents::{Agents, Gpu};
use super::api::Tables;
use super::completion::{
    ChainLink, Completion, CountedPart, Incoming, Named, PassRun, Pending, QueueFacts, SignalPool,
    SignalStash, Submitted,
};
use super::config::Config;
use super::counters::{Aqlprofile, GpuCounters};
use super::descriptor::{kernel_resources, KernelResources, DESCRIPTOR_SIZE};
use super::kernel_names::{intern, KernelNames};
use super::records::{Record, ReplayStats};
use super::replay::{is_mapped, untracked_argument, HostBuffer, Memory, Replay};
use super::rewrite::{
    kernel_dispatches, order_uncounted, wrap, wrap_counted, wrap_replay, CountedAfter,
    ReplayWrapping, Uncounted, Wrapping,
};
use super::roctx::Roctx;
use super::runtime::Hsa;
use super::selection::{Decision, Enclosing, Selector};
use super::warn_once;
use crate::fast_map::FastMap;
use crate::hsa::*;

/// The key of the one chain of counted dispatches over every GPU (kernel replay); agent handles
/// are addresses, never 0.
const ALL_GPUS: u64 = 0;

/// How long queue destruction and unload wait for pending dispatches.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything the wrappers share, alive from `OnLoad` to process exit.
pub struct Interposer {
    pub(crate) tables: Tables,
    hsa: Arc<Hsa>,
    config: Config,
    selector: Selector,
    kernels: KernelNames,
    session: OnceLock<Session>,
    loader: OnceLock<Option<hsa_ven_amd_loader_1_03_pfn_t>>,
    queues: Mutex<FastMap<usize, usize>>,
    /// The application's allocations (tracked with kernel replay only).
    memory: Arc<Memory>,
    /// rtl-pmc's roctx library, when the application runs with it.
    roctx: Option<Arc<Roctx>>,
}

/// State created at the first queue creation, when the runtime is fully up.
struct Session {
    agents: Agents,
    signals: Arc<SignalPool>,
    completion: Arc<Completion>,
    aqlprofile: Option<Arc<Aqlprofile>>,
    counters: FastMap<u64, Arc<GpuCounters>>,
    chains: FastMap<u64, Mutex<Chain>>,
    dispatch_ids: AtomicU64,
    /// Per GPU agent handle, the queues created on it so far.
    queues_created: Mutex<HashMap<u64, u32>>,
}

/// The counted dispatches of a GPU (of every GPU with kernel replay) in the order they run, and
/// the dispatches not counted since the last one: no dispatch runs while a counted one does.
#[derive(Default)]
struct Chain {
    /// The last counted dispatch's link: its stop packet's signal, or with kernel replay the
    /// signal of the barrier after its last pass.
    last: Option<Arc<ChainLink>>,
    /// The queue `last` was submitted to.
    last_queue: usize,
    /// A signal whose value is how many of the dispatches not counted submitted since `last`
    /// still run (`None` before the first), which the next counted dispatch waits for.
    uncounted: Option<Arc<ChainLink>>,
}

/// One intercepted queue; the handler's user data.
struct QueueState {
    gpu: Gpu,
    key: usize,
    /// What each record of its dispatches repeats about it.
    facts: QueueFacts,
    /// The GPU's counters, looked up once here rather than per dispatch.
    counters: Option<Arc<GpuCounters>>,
    /// The chain of counted dispatches its GPU takes part in ([`Interposer::chain`]), likewise.
    chain: Option<&'static Mutex<Chain>>,
    /// Whether the GPU is meant to collect counters (even if that failed).
    wants_counters: bool,
    /// Whether every kernel dispatch of the queue is selected and run once with the same event
    /// group, if any: no filter, no kernel replay, at most one group, no roctx ranges to read,
    /// and counters on its GPU if it is meant to collect some.
    plain: bool,
}

static INTERPOSER: OnceLock<Interposer> = OnceLock::new();

fn interposer() -> Option<&'static Interposer> {
    INTERPOSER.get()
}

/// The runtime's original entries and the allocation bookkeeping, for the allocation wrappers.
pub(crate) fn memory() -> Option<(&'static Hsa, &'static Memory)> {
    interposer().map(|me| (&*me.hsa, &*me.memory))
}

/// Installs the wrappers into the runtime's tables.
pub fn install(tables: Tables, config: Config, selector: Selector) -> bool {
    let hsa = Arc::new(Hsa::new(tables.core_orig, tables.amd_orig));
    let roctx = Roctx::find(|| hsa.system_time_ns()).map(Arc::new);
    let state = Interposer {
        roctx,
        tables,
        memory: Arc::new(Memory::new(Arc::clone(&hsa))),
        hsa,
        config,
        selector,
        kernels: KernelNames::default(),
        session: OnceLock::new(),
        loader: OnceLock::new(),
        queues: Mutex::new(FastMap::default()),
    };
    if INTERPOSER.set(state).is_err() {
        super::warn(
            "the runtime was initialised again in this process; only its first run is profiled",
        );
        return false;
    }
    let Some(me) = interposer() else { return false };
    reset_ids_after_fork();
    // SAFETY: each wrapper has the exact signature of the entry it replaces.
    unsafe {
        me.tables
            .patch_core("hsa_queue_create_fn", queue_create as *const c_void);
        me.tables
            .patch_core("hsa_queue_destroy_fn", queue_destroy as *const c_void);
        me.tables.patch_core(
            "hsa_executable_freeze_fn",
            executable_freeze as *const c_void,
        );
        me.tables.patch_core(
            "hsa_executable_destroy_fn",
            executable_destroy as *const c_void,
        );
        if me.config.replay.is_some() {
            super::tracking::install(&me.tables);
        }
    }
    true
}

/// Restores the tables and finishes pending work (from `OnUnload`).
pub fn uninstall() {
    let Some(me) = interposer() else { return };
    for field in [
        "hsa_queue_create_fn",
        "hsa_queue_destroy_fn",
        "hsa_executable_freeze_fn",
        "hsa_executable_destroy_fn",
    ] {
        me.tables.restore_core(field);
    }
    if me.config.replay.is_some() {
        super::tracking::uninstall(&me.tables, DRAIN_TIMEOUT);
    }
    finish();
}

/// Completes and flushes everything pending, then deletes every packet set and releases
/// aqlprofile (unload and process exit).
pub fn finish() {
    static FINISHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(me) = interposer() else { return };
    if FINISHED.swap(true, Ordering::SeqCst) {
        return;
    }
    if let Some(session) = me.session.get() {
        let stopped = session.completion.stop(DRAIN_TIMEOUT);
        if me.config.env_mode {
            super::env_mode::write_results(&me.config.counter_names, session.completion.output());
        }
        release_aqlprofile(session, stopped);
        if stopped {
            me.memory.release_buffers();
            super::signals::uninstall();
        }
    }
}

/// Deletes every packet set and releases aqlprofile once the completion worker stopped, so that
/// no callback of ours is reachable from the library after unload (AMD's library calls
/// `dealloc_cb` for every set left alive from a static destructor at process exit, after the
/// runtime has unloaded this library). When that cannot be guaranteed (the worker still runs,
/// a set is still out, a creation failed), this library stays loaded until the process exits.
fn release_aqlprofile(session: &Session, worker_stopped: bool) {
    let Some(aqlprofile) = &session.aqlprofile else {
        return;
    };
    if !worker_stopped {
        super::keep_loaded();
        return;
    }
    for counters in session.counters.values() {
        counters.close();
    }
    if !aqlprofile.close() {
        super::keep_loaded();
    }
}

/// Warns, once per GPU, about other processes with queues on `gpu` when it collects counters:
/// their work is not kept out of the counting windows. Looked at whenever this process creates
/// a queue on it.
fn warn_about_other_processes(session: &Session, gpu: &Gpu) {
    if !session.counters.contains_key(&gpu.agent.handle) {
        return;
    }
    let topology = std::env::var(super::neighbours::TOPOLOGY_ENV).ok();
    let (topology, proc) = super::neighbours::kfd_dirs(topology.as_deref());
    let Some(id) = super::neighbours::gpu_id(&topology, gpu.node_id) else {
        return;
    };
    let others = super::neighbours::other_processes(&proc, id, pid());
    if !others.is_empty() {
        warn_once(
            &format!("other-processes-{}", gpu.index),
            &super::neighbours::warning(gpu.node_id, &gpu.arch, &others),
        );
    }
}

impl Interposer {
    fn session(&'static self) -> &'static Session {
        self.session.get_or_init(|| {
            let agents = Agents::discover(&self.hsa);
            let signals = Arc::new(SignalPool::new(Arc::clone(&self.hsa)));
            let outputs: Vec<std::path::PathBuf> = match &self.config.replay {
                Some(replay) => replay.pass_directories.iter().map(Into::into).collect(),
                None => vec![self.config.output_directory.clone()],
            };
            self.memory.set_host_pools(&agents.host_pools);
            let completion = Completion::start(
                Arc::clone(&self.hsa),
                Arc::clone(&signals),
                &outputs,
                self.roctx.clone(),
            );
            if !self.config.disable_signal_handlers {
                super::signals::install(&completion.tallies());
            }
            let (aqlprofile, counters) = self.gpu_counters(&agents);
            let mut chains: FastMap<u64, Mutex<Chain>> = agents
                .gpus
                .iter()
                .map(|g| (g.agent.handle, Mutex::default()))
                .collect();
            chains.insert(ALL_GPUS, Mutex::default());
            Session {
                agents,
                signals,
                completion,
                aqlprofile,
                counters,
                chains,
                dispatch_ids: AtomicU64::new(1),
                queues_created: Mutex::new(HashMap::new()),
            }
        })
    }

    /// aqlprofile and the counters of every GPU that collects some.
    fn gpu_counters(
        &self,
        agents: &Agents,
    ) -> (Option<Arc<Aqlprofile>>, FastMap<u64, Arc<GpuCounters>>) {
        let mut out = FastMap::default();
        let groups_of = |gpu: &Gpu| -> Vec<Vec<crate::passes::plan_file::PlanEvent>> {
            if let Some(groups) = self.config.groups.get(&gpu.arch) {
                return groups.clone();
            }
            if self.config.counter_names.is_empty() {
                return Vec::new();
            }
            match super::env_mode::resolve(&self.config.counter_names, gpu) {
                Ok(events) => vec![events],
                Err(e) => {
                    warn_once("counters", &format!("{e}; collecting timestamps only"));
                    Vec::new()
                }
            }
        };
        let wanted: Vec<(&Gpu, Vec<Vec<crate::passes::plan_file::PlanEvent>>)> = agents
            .gpus
            .iter()
            .filter(|g| self.config.filters.selects_gpu(g.index))
            .map(|g| (g, groups_of(g)))
            .filter(|(_, groups)| !groups.is_empty())
            .collect();
        if wanted.is_empty() {
            return (None, out);
        }
        let aqlprofile = match Aqlprofile::load(&self.hsa, self.config.api) {
            Ok(a) => Arc::new(a),
            Err(e) => {
                warn_once(
                    "aqlprofile",
                    &format!("{e}; counters are not collected, the application runs unprofiled"),
                );
                return (None, out);
            }
        };
        // Registered after aqlprofile was loaded, so that at an exit without `hsa_shut_down` it
        // runs before the library's own exit-time teardown.
        // SAFETY: registering a plain C function, tied to this library like the one of OnLoad.
        unsafe { libc::atexit(super::at_exit) };
        for (gpu, groups) in wanted {
            match GpuCounters::new(Arc::clone(&aqlprofile), Arc::clone(&self.hsa), agents, gpu, &groups) {
                Ok(c) => {
                    out.insert(gpu.agent.handle, Arc::new(c));
                }
                Err(e) => warn_once(
                    "aqlprofile",
                    &format!("{e}; counters are not collected on GPU {} ({}), its dispatches run unprofiled", gpu.node_id, gpu.arch),
                ),
            }
        }
        (Some(aqlprofile), out)
    }

    /// Whether dispatches on `gpu` are meant to collect counters (even if that failed).
    fn wants_counters(&self, gpu: &Gpu) -> bool {
        self.config.groups.contains_key(&gpu.arch) || !self.config.counter_names.is_empty()
    }

    fn loader(&self) -> Option<hsa_ven_amd_loader_1_03_pfn_t> {
        *self
            .loader
            .get_or_init(|| self.hsa.extension_table(HSA_EXTENSION_AMD_LOADER, 1))
    }

    /// The registers and wave size of the kernel at `kernel_object`, read through the loader.
    fn resources(&self, kernel_object: u64, arch: &str) -> KernelResources {
        let Some(query) = self
            .loader()
            .and_then(|l| l.hsa_ven_amd_loader_query_host_address)
        else {
            return KernelResources::default();
        };
        let mut host: *const c_void = std::ptr::null();
        // SAFETY: the loader maps a device address of a loaded code object to a host address.
        let status = unsafe { query(kernel_object as *const c_void, &mut host) };
        if status != HSA_STATUS_SUCCESS || host.is_null() {
            return KernelResources::default();
        }
        // SAFETY: the host copy of a loaded kernel descriptor is 64 readable bytes.
        let descriptor = unsafe { std::ptr::read_unaligned(host as *const [u8; DESCRIPTOR_SIZE]) };
        kernel_resources(&descriptor, arch).unwrap_or_default()
    }

    /// Decides for one kernel dispatch of `submission`: when selected, its wrapping, with its
    /// pending completion added to the submission's.
    fn prepare(
        &'static self,
        session: &'static Session,
        queue: &QueueState,
        kernel: &hsa_kernel_dispatch_packet_t,
        queue_index: u64,
        submission: &mut Submission<'_>,
    ) -> Option<Prepared> {
        let (tid, batch) = (submission.tid, submission.batch);
        let out = &mut *submission.pending;
        if !session.completion.is_running() {
            warn_once(
                "worker",
                "the completion thread is not running; dispatches run unprofiled",
            );
            return None;
        }
        let counters = queue.counters.as_ref();
        if counters.is_none() && queue.wants_counters {
            return None;
        }
        // The record's name is looked up by the worker; here only when the filters read it.
        let info = self
            .selector
            .reads_kernel_names()
            .then(|| self.kernels.get(kernel.kernel_object));
        let (name, symbol) = info.as_deref().map_or(("", ""), |i| (i.name, &i.symbol));
        let groups = counters.map_or(0, |c| c.group_count());
        let enclosing = self.enclosing();
        let thread = Submitter {
            tid,
            enclosing: &enclosing,
        };
        let Decision::Wrap { mut group } = self.selector.decide_kernel(
            name,
            symbol,
            queue.gpu.index,
            queue.gpu.node_id,
            groups,
            &enclosing,
        ) else {
            return None;
        };
        let mut declined = None;
        if let (Some(replay), Some(gpu_counters)) = (&self.config.replay, counters) {
            if groups > 1 {
                // A batch is never replayed: its other packets may depend on this dispatch.
                let buffers = if batch {
                    Err(MULTI_PACKET.to_string())
                } else {
                    let info = self.kernels.get(kernel.kernel_object);
                    self.snapshot_buffers(queue, kernel, &info, replay.memory_budget)
                };
                match buffers {
                    Ok(buffers) => {
                        let record = || {
                            let none = (hsa_signal_t::default(), None);
                            let mut submitted =
                                self.submitted(session, queue, kernel, queue_index, &thread, none);
                            record_of(&mut submitted)
                        };
                        let (prepared, pending) = self.prepare_replay(
                            session,
                            queue,
                            kernel,
                            record,
                            gpu_counters,
                            buffers,
                        )?;
                        out.push(Incoming::Pending(Box::new(pending)));
                        return Some(prepared);
                    }
                    Err(reason) => {
                        group = 0;
                        declined = Some(ReplayStats {
                            passes: 1,
                            declined: Some(reason),
                            ..ReplayStats::default()
                        });
                    }
                }
            }
        }
        let Some(kernel_signal) = session.signals.take_from(submission.signals) else {
            warn_once(
                "signals",
                "cannot create signals; dispatches run unprofiled",
            );
            return None;
        };
        let mut counted = None;
        let mut wrapping = Wrapping {
            kernel_signal,
            counters: None,
        };
        if let Some(gpu_counters) = counters {
            let signals = &mut *submission.signals;
            let Some((part, done, after)) =
                self.counted_part(session, queue, gpu_counters, group, signals)
            else {
                session.signals.give(kernel_signal);
                return None;
            };
            wrapping.counters = Some((part.set.template, done, after));
            counted = Some(part);
        }
        let submitted = self.submitted(
            session,
            queue,
            kernel,
            queue_index,
            &thread,
            (kernel_signal, counted),
        );
        match declined {
            None => out.push(Incoming::Submitted(submitted)),
            Some(declined) => {
                let mut submitted = submitted;
                let mut named = record_of(&mut submitted);
                named.record.replay = Some(declined);
                out.push(Incoming::Pending(Box::new(Pending::new(
                    named,
                    queue.gpu.agent,
                    kernel_signal,
                    kernel.completion_signal,
                    submitted.counted.take(),
                    queue.key,
                ))));
            }
        }
        Some(Prepared::Once(wrapping))
    }

    /// The counter part of a dispatch counted with group `group` of `gpu_counters` (its packet
    /// set and chain links), its stop packet's signal, and what it waits for first; `None` (with
    /// a warning) when a set or signal cannot be had.
    fn counted_part(
        &self,
        session: &'static Session,
        queue: &QueueState,
        gpu_counters: &Arc<GpuCounters>,
        group: usize,
        signals: &mut SignalStash,
    ) -> Option<(CountedPart, hsa_signal_t, CountedAfter)> {
        let set = match gpu_counters.take(group) {
            Ok(set) => set,
            Err(e) => {
                warn_once(
                    "packets",
                    &format!("{e}; affected dispatches run unprofiled"),
                );
                return None;
            }
        };
        let Some(done) = session.signals.take_link(signals) else {
            warn_once(
                "signals",
                "cannot create signals; dispatches run unprofiled",
            );
            gpu_counters.give_back(set);
            return None;
        };
        let done_signal = done.signal;
        let (previous, uncounted, same_queue) = self.chain_after(queue, &done);
        let mut chain_wait = waits(&previous, &uncounted);
        if same_queue {
            // The start packet's barrier bit waits for the previous counted dispatch's stop
            // packet, ahead of it on the same queue (the handler sees a queue's packets in
            // order).
            chain_wait[0] = hsa_signal_t::default();
        }
        let part = CountedPart {
            gpu: Arc::clone(gpu_counters),
            set,
            done,
            previous,
            uncounted,
        };
        Some((part, done_signal, chain_wait))
    }

    /// The chain of counted dispatches the queue's GPU takes part in, unless counted dispatches
    /// may overlap (`RTL_PMC_SERIALIZE=0`).
    ///
    /// With kernel replay counted dispatches of all GPUs take turns: a dispatch replayed on one
    /// GPU restores the memory its first pass changed, and a kernel running meanwhile on another
    /// GPU would change memory in that window too, and lose it.
    fn chain(&self, session: &'static Session, gpu: &Gpu) -> Option<&'static Mutex<Chain>> {
        let key = match self.config.replay {
            Some(_) => ALL_GPUS,
            None => gpu.agent.handle,
        };
        session.chains.get(&key).filter(|_| self.config.serialize)
    }

    /// Makes `link` the last counted dispatch of the queue's chain; the one before and the count
    /// of the dispatches not counted since, to wait for (the count only while some still run),
    /// and whether the one before was submitted to the same queue.
    fn chain_after(
        &self,
        queue: &QueueState,
        link: &Arc<ChainLink>,
    ) -> (Option<Arc<ChainLink>>, Option<Arc<ChainLink>>, bool) {
        let Some(chain) = queue.chain else {
            return (None, None, false);
        };
        let (previous, uncounted, same_queue) = {
            let mut chain = chain.lock().unwrap_or_else(|p| p.into_inner());
            let same_queue = std::mem::replace(&mut chain.last_queue, queue.key) == queue.key;
            let previous = chain.last.replace(Arc::clone(link));
            (previous, chain.uncounted.take(), same_queue)
        };
        // Dropped (back to the pool) when every dispatch it counted has ended: no later one
        // joins it once taken from the chain.
        let uncounted = uncounted.filter(|u| self.hsa.signal_load(u.signal) != 0);
        (previous, uncounted, same_queue)
    }

    /// How `kernel`, a dispatch that is not counted, is kept out of the counting windows of its
    /// GPU (of every GPU with kernel replay), or `None` when nothing needs to be kept out: no
    /// counters on the GPU, or counted dispatches allowed to overlap. With the application's
    /// completion signal, the pending completion the worker forwards goes to `pending`.
    fn uncounted(
        &self,
        session: &'static Session,
        queue: &QueueState,
        kernel: &hsa_kernel_dispatch_packet_t,
        pending: &mut Vec<Incoming>,
    ) -> Option<Uncounted> {
        if self.config.replay.is_none() && queue.counters.is_none() {
            return None;
        }
        let chain = queue.chain?;
        let mut chain = chain.lock().unwrap_or_else(|p| p.into_inner());
        let after = chain
            .last
            .as_ref()
            .map(|l| l.signal)
            .filter(|&s| self.hsa.signal_load(s) != 0)
            .unwrap_or_default();
        let running = match &chain.uncounted {
            Some(count) => {
                self.hsa.signal_add(count.signal, 1);
                count.signal
            }
            None => {
                // A signal from the pool starts at 1: this dispatch.
                let Some(signal) = session.signals.take() else {
                    warn_once(
                        "uncounted-signals",
                        "cannot create signals; dispatches left out by the kernel filters are not kept out of the counting windows, whose values may include their work",
                    );
                    return None;
                };
                chain.uncounted = Some(Arc::new(ChainLink::new(signal, &session.signals)));
                signal
            }
        };
        // The application's signal is completed by the worker, so that the later packets of
        // the queue still overlap the kernel; a barrier packet after it otherwise.
        let mut forwarded = hsa_signal_t::default();
        let forwards = kernel.completion_signal.handle != 0 && session.completion.is_running();
        if let Some(count) = chain.uncounted.as_ref().filter(|_| forwards) {
            if let Some(ours) = session.signals.take() {
                forwarded = ours;
                pending.push(Incoming::Pending(Box::new(Pending::forwarded(
                    queue.gpu.agent,
                    ours,
                    kernel.completion_signal,
                    queue.key,
                    Arc::clone(count),
                ))));
            }
        }
        Some(Uncounted {
            after,
            running,
            forwarded,
        })
    }

    /// The roctx ranges open on the calling thread and whether the profiler is resumed.
    fn enclosing(&self) -> Enclosing {
        self.roctx
            .as_ref()
            .map_or_else(Enclosing::default, |roctx| Enclosing {
                ranges: roctx
                    .thread_stack(self.config.kernel_rename || self.selector.reads_range_names()),
                resumed: roctx.resumed(),
            })
    }

    /// What the dispatch path hands over for a selected dispatch run with `kernel_signal` and
    /// `counted`: its record is made from it by [`record_of`].
    #[inline]
    fn submitted(
        &self,
        session: &Session,
        queue: &QueueState,
        kernel: &hsa_kernel_dispatch_packet_t,
        queue_index: u64,
        thread: &Submitter<'_>,
        (kernel_signal, counted): (hsa_signal_t, Option<CountedPart>),
    ) -> Submitted {
        let Submitter { tid, enclosing } = *thread;
        let renamed = match enclosing.ranges.last() {
            Some(innermost) if self.config.kernel_rename => Some(intern(&innermost.name)),
            _ => None,
        };
        Submitted {
            queue: queue.facts,
            kernel_object: kernel.kernel_object,
            grid: [kernel.grid_size_x, kernel.grid_size_y, kernel.grid_size_z],
            workgroup: [
                kernel.workgroup_size_x,
                kernel.workgroup_size_y,
                kernel.workgroup_size_z,
            ],
            lds: kernel.group_segment_size,
            scratch: kernel.private_segment_size,
            queue_index,
            dispatch: session.dispatch_ids.fetch_add(1, Ordering::Relaxed),
            tid,
            app_signal: kernel.completion_signal,
            kernel_signal,
            counted,
            ranges: match enclosing.ranges.is_empty() {
                true => Vec::new(),
                false => enclosing.ranges.iter().map(|r| r.id).collect(),
            },
            renamed,
        }
    }

    /// The host buffers for a dispatch's snapshot, or why it cannot be replayed.
    fn snapshot_buffers(
        &self,
        queue: &QueueState,
        kernel: &hsa_kernel_dispatch_packet_t,
        info: &super::kernel_names::KernelInfo,
        budget: u64,
    ) -> Result<(HostBuffer, HostBuffer), String> {
        let total: usize = self
            .memory
            .reachable(queue.gpu.agent)
            .iter()
            .map(|s| s.len)
            .sum();
        if total as u64 > budget {
            return Err(format!(
                "its memory snapshot of {total} bytes does not fit the memory budget of {budget} bytes"
            ));
        }
        // SAFETY: the kernarg segment of a dispatch being submitted holds at least the
        // `kernarg_size` bytes its kernel descriptor gives.
        let untracked = unsafe {
            untracked_argument(
                &self.memory,
                kernel.kernarg_address as *const u8,
                info.resources.kernarg_size,
                is_mapped,
            )
        };
        if let Some(reason) = untracked {
            return Err(reason);
        }
        let no_memory = || format!("no host memory for a snapshot of {total} bytes");
        let before = self.memory.take_buffer(total).ok_or_else(no_memory)?;
        let Some(after) = self.memory.take_buffer(total) else {
            self.memory.give_buffer(before);
            return Err(no_memory());
        };
        Ok((before, after))
    }

    /// Signals, packet sets and the pending completion of a dispatch replayed once per group.
    fn prepare_replay(
        &'static self,
        session: &'static Session,
        queue: &QueueState,
        kernel: &hsa_kernel_dispatch_packet_t,
        record: impl FnOnce() -> Named,
        gpu_counters: &Arc<GpuCounters>,
        buffers: (HostBuffer, HostBuffer),
    ) -> Option<(Prepared, Pending)> {
        let passes = gpu_counters.group_count();
        let signals = &session.signals;
        // ready, P + 1 gates, the link, and per pass the kernel's and the stop packet's.
        let wanted = 3 + 3 * passes;
        let mut taken: Vec<hsa_signal_t> = Vec::with_capacity(wanted);
        while taken.len() < wanted {
            match signals.take() {
                Some(s) => taken.push(s),
                None => {
                    taken.into_iter().for_each(|s| signals.give(s));
                    self.memory.give_buffer(buffers.0);
                    self.memory.give_buffer(buffers.1);
                    warn_once(
                        "signals",
                        "cannot create signals; dispatches run unprofiled",
                    );
                    return None;
                }
            }
        }
        let mut sets = Vec::with_capacity(passes);
        for group in 0..passes {
            match gpu_counters.take(group) {
                Ok(set) => sets.push(set),
                Err(e) => {
                    warn_once(
                        "packets",
                        &format!("{e}; affected dispatches run unprofiled"),
                    );
                    sets.into_iter().for_each(|set| gpu_counters.give_back(set));
                    taken.into_iter().for_each(|s| signals.give(s));
                    self.memory.give_buffer(buffers.0);
                    self.memory.give_buffer(buffers.1);
                    return None;
                }
            }
        }
        let record = record();
        let mut taken = taken.into_iter();
        let mut next = || taken.next().unwrap_or_default();
        let ready = next();
        let gates: Vec<hsa_signal_t> = (0..=passes).map(|_| next()).collect();
        let link = Arc::new(ChainLink::new(next(), signals));
        let (mut previous, mut uncounted, _) = self.chain_after(queue, &link);
        let after = waits(&previous, &uncounted);
        let mut runs = Vec::with_capacity(passes);
        let mut wrapped = Vec::with_capacity(passes);
        for (i, set) in sets.into_iter().enumerate() {
            let kernel_signal = next();
            let done = Arc::new(ChainLink::new(next(), signals));
            wrapped.push((gates[i], kernel_signal, set.packets(), done.signal));
            runs.push(PassRun::new(
                kernel_signal,
                Some(CountedPart {
                    gpu: Arc::clone(gpu_counters),
                    set,
                    done,
                    previous: previous.take(),
                    uncounted: uncounted.take(),
                }),
            ));
        }
        let wrapping = ReplayWrapping {
            after,
            ready,
            passes: wrapped,
            last_gate: gates[passes],
            link: link.signal,
        };
        let replay = Replay::new(
            Arc::clone(&self.memory),
            queue.gpu.agent,
            ready,
            gates,
            buffers,
            self.config.replay_stall,
        );
        let pending = Pending::replayed(
            record,
            queue.gpu.agent,
            kernel.completion_signal,
            queue.key,
            runs,
            Some((replay, link)),
        );
        Some((Prepared::Replay(wrapping), pending))
    }
}

/// The signals a counted dispatch waits for: the previous counted dispatch's and the count of
/// those not counted since (0 for none).
fn waits(
    previous: &Option<Arc<ChainLink>>,
    uncounted: &Option<Arc<ChainLink>>,
) -> [hsa_signal_t; 2] {
    let signal =
        |l: &Option<Arc<ChainLink>>| l.as_ref().map_or_else(hsa_signal_t::default, |l| l.signal);
    [signal(previous), signal(uncounted)]
}

/// The record of a submitted dispatch, complete but for what its completion gives, and the
/// names it is written with (the record's own are left empty: nothing is copied per dispatch).
/// Made on the completion worker when it takes the dispatch, before any application signal of
/// that round completes: the kernel's executable is still loaded.
pub(crate) fn record_of(s: &mut Submitted) -> Named {
    let info = match interposer() {
        Some(me) => me.kernels.get(s.kernel_object),
        None => KernelNames::default().get(s.kernel_object),
    };
    let r = info.resources;
    let record = Record {
        pid: pid(),
        tid: s.tid,
        agent: s.queue.node_id,
        gpu_index: s.queue.gpu_index,
        queue: s.queue.queue_id,
        queue_order: s.queue.order,
        queue_index: s.queue_index,
        dispatch: s.dispatch,
        correlation: s.dispatch,
        kernel_object: s.kernel_object,
        kernel_id: info.id,
        signal: s.app_signal.handle,
        grid: s.grid,
        workgroup: s.workgroup.map(u32::from),
        lds: s.lds,
        scratch: s.scratch,
        arch_vgpr: r.arch_vgpr,
        accum_vgpr: r.accum_vgpr,
        sgpr: r.sgpr,
        wave_size: r.wave_size,
        ranges: std::mem::take(&mut s.ranges),
        ..Record::default()
    };
    Named {
        record,
        arch: s.queue.arch,
        kernel: s.renamed.unwrap_or(info.name),
    }
}

/// A submission of the application being wrapped: the submitting thread, whether it holds
/// several kernel dispatches, and the pending completions of those selected so far.
struct Submission<'a> {
    tid: u32,
    batch: bool,
    pending: &'a mut Vec<Incoming>,
    signals: &'a mut SignalStash,
}

/// The thread submitting a dispatch: its id and the roctx ranges open on it.
#[derive(Clone, Copy)]
struct Submitter<'a> {
    tid: u32,
    enclosing: &'a Enclosing,
}

/// Why dispatches submitted together are not replayed (each is counted once, with pass 1's
/// counters).
const MULTI_PACKET: &str =
    "it was submitted with other dispatches in one packet batch (possibly a graph replay), whose packets may depend on it";

/// How a selected dispatch is submitted: made and used at once on the dispatch path, so a
/// counted dispatch's packets stay inline rather than be allocated per dispatch.
#[allow(clippy::large_enum_variant)]
enum Prepared {
    /// Run once.
    Once(Wrapping),
    /// Run once per event group (kernel replay).
    Replay(ReplayWrapping),
}

/// Bumped in the child of a `fork`, where the process and thread ids cached below change.
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);
/// The process id, 0 until read (a system call per dispatch otherwise).
static PID: AtomicU32 = AtomicU32::new(0);

extern "C" fn forked_child() {
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
    PID.store(0, Ordering::SeqCst);
}

/// How many times this process is a forked child of the one the interposer was loaded in:
/// what was cached per thread before a fork is stale once it changes.
pub(crate) fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::Relaxed)
}

/// Has the cached ids read again in a forked child.
fn reset_ids_after_fork() {
    // SAFETY: registers a handler that only touches atomics.
    unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
}

fn pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => {
            let pid = std::process::id();
            PID.store(pid, Ordering::Relaxed);
            pid
        }
        pid => pid,
    }
}

/// What a thread submitting dispatches keeps from one submission to the next, taken out of its
/// thread-local slot once per submission: its id, the packets a submission becomes and its
/// wrapped dispatches (their room allocated once), and its signals.
#[derive(Default)]
struct SubmitterState {
    /// The thread's id and the fork generation it was read in (`None` before it was read).
    tid: Option<(u64, u32)>,
    rewritten: Vec<AqlPacket>,
    pending: Vec<Incoming>,
    signals: SignalStash,
}

impl SubmitterState {
    /// The calling thread's id, read once per thread (and again after a fork).
    fn tid(&mut self) -> u32 {
        let generation = fork_generation();
        match self.tid {
            Some((g, tid)) if g == generation => tid,
            _ => {
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() as u32 };
                self.tid = Some((generation, tid));
                tid
            }
        }
    }
}

thread_local! {
    /// The calling thread's [`SubmitterState`].
    static SUBMITTER: RefCell<SubmitterState> = RefCell::new(SubmitterState::default());
}

/// Runs `body` with the calling thread's [`SubmitterState`]; a nested submission (a handler
/// called while the thread is inside one) gets a fresh one.
fn with_submitter(body: impl FnOnce(&mut SubmitterState)) {
    let mut body = Some(body);
    let _ = SUBMITTER.try_with(|cell| {
        if let (Ok(mut state), Some(body)) = (cell.try_borrow_mut(), body.take()) {
            body(&mut state);
        }
    });
    if let Some(body) = body {
        body(&mut SubmitterState::default());
    }
}

/// The intercept handler: rewrites selected kernel dispatches and submits everything with one
/// writer call.
unsafe extern "C" fn on_submit(
    packets: *const c_void,
    count: u64,
    user_index: u64,
    data: *mut c_void,
    writer: hsa_amd_queue_intercept_packet_writer,
) {
    let Some(writer) = writer else { return };
    let written = Cell::new(false);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the QueueState registered with this queue; it lives until the queue
        // is destroyed, after which the runtime calls no handler.
        let queue = unsafe { &*(data as *const QueueState) };
        // SAFETY: the runtime passes `count` valid 64-byte packets.
        let input =
            unsafe { std::slice::from_raw_parts(packets as *const AqlPacket, count as usize) };
        rewrite_and_submit(queue, input, user_index, &|out: &[AqlPacket]| {
            written.set(true);
            // SAFETY: the writer given to this call, with packets that live across it.
            unsafe { writer(out.as_ptr() as *const c_void, out.len() as u64) };
        });
    }));
    if outcome.is_err() && !written.get() {
        // SAFETY: as above: the original packets, untouched.
        unsafe { writer(packets, count) };
    }
}

fn rewrite_and_submit(
    queue: &QueueState,
    input: &[AqlPacket],
    user_index: u64,
    write: &dyn Fn(&[AqlPacket]),
) {
    let Some(me) = interposer() else {
        write(input);
        return;
    };
    let kernels = kernel_dispatches(input);
    if kernels == 0 {
        write(input);
        return;
    }
    let session = me.session();
    with_submitter(|thread| submit_with(me, session, queue, input, user_index, write, thread));
}

/// [`rewrite_and_submit`] with the calling thread's state.
fn submit_with(
    me: &'static Interposer,
    session: &'static Session,
    queue: &QueueState,
    input: &[AqlPacket],
    user_index: u64,
    write: &dyn Fn(&[AqlPacket]),
    thread: &mut SubmitterState,
) {
    let tid = thread.tid();
    // Whether dispatches are wrapped at all: not one the short path could not wrap.
    let mut wrapped = true;
    if let ([packet], true) = (input, queue.plain && session.completion.is_running()) {
        if one_dispatch(me, session, queue, packet, user_index, tid, thread, write) {
            return;
        }
        wrapped = false;
    }
    let kernels = kernel_dispatches(input);
    let SubmitterState {
        rewritten: out,
        pending,
        signals,
        ..
    } = thread;
    out.clear();
    let batch = kernels > 1;
    let mut ordered = false;
    for (i, packet) in input.iter().enumerate() {
        if packet.packet_type() != HSA_PACKET_TYPE_KERNEL_DISPATCH {
            out.push(*packet);
            continue;
        }
        // SAFETY: a kernel dispatch packet.
        let kernel: hsa_kernel_dispatch_packet_t = unsafe { packet.cast() };
        let index = user_index + i as u64;
        let mut submission = Submission {
            tid,
            batch,
            pending,
            signals,
        };
        let prepared = match wrapped {
            true => me.prepare(session, queue, &kernel, index, &mut submission),
            false => None,
        };
        match prepared {
            Some(Prepared::Once(wrapping)) => wrap(&kernel, &wrapping, out),
            Some(Prepared::Replay(wrapping)) => wrap_replay(&kernel, &wrapping, out),
            None => match me.uncounted(session, queue, &kernel, pending) {
                Some(uncounted) => {
                    order_uncounted(packet, &uncounted, out);
                    ordered = true;
                }
                None => out.push(*packet),
            },
        }
    }
    if pending.is_empty() {
        write(if ordered { out } else { input });
    } else {
        write(out);
        session.completion.submit(pending);
    }
}

/// The one kernel dispatch `packet` of a submission to a queue whose dispatches are all
/// selected and run once (see [`QueueState::plain`]): its completion signal replaced by one of
/// ours, between counter packets when its GPU collects counters, and handed to the worker
/// without the vectors of pending dispatches a batch goes through. Whether it was: when a
/// signal or packet set cannot be had (a warning says so), nothing is written, and the general
/// path runs the dispatch unprofiled, kept out of counting windows.
#[allow(clippy::too_many_arguments)]
fn one_dispatch(
    me: &'static Interposer,
    session: &'static Session,
    queue: &QueueState,
    packet: &AqlPacket,
    queue_index: u64,
    tid: u32,
    thread: &mut SubmitterState,
    write: &dyn Fn(&[AqlPacket]),
) -> bool {
    let Some(kernel_signal) = session.signals.take_from(&mut thread.signals) else {
        warn_once(
            "signals",
            "cannot create signals; dispatches run unprofiled",
        );
        return false;
    };
    // SAFETY: a kernel dispatch packet (checked by the caller).
    let kernel: hsa_kernel_dispatch_packet_t = unsafe { packet.cast() };
    let mut counted = None;
    match &queue.counters {
        None => {
            let mut timed = kernel;
            timed.completion_signal = kernel_signal;
            write(&[AqlPacket::from(&timed)]);
        }
        Some(gpu_counters) => {
            let signals = &mut thread.signals;
            let Some((mut part, done, after)) =
                me.counted_part(session, queue, gpu_counters, 0, signals)
            else {
                session.signals.give(kernel_signal);
                return false;
            };
            // Written from the set's own packets: nothing is built but the kernel's.
            let packets = part.set.template.fill(&kernel, kernel_signal, done);
            write(wrap_counted(packets, &after, &mut thread.rewritten));
            counted = Some(part);
        }
    }
    let enclosing = Enclosing::default();
    let submitter = Submitter {
        tid,
        enclosing: &enclosing,
    };
    let run = (kernel_signal, counted);
    let submitted = me.submitted(session, queue, &kernel, queue_index, &submitter, run);
    session.completion.submit_one(submitted);
    true
}

/// Runs a wrapper body; a panic becomes `HSA_STATUS_ERROR`.
fn guarded(body: impl FnOnce() -> hsa_status_t) -> hsa_status_t {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(HSA_STATUS_ERROR)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn queue_create(
    agent: hsa_agent_t,
    size: u32,
    type_: hsa_queue_type32_t,
    callback: hsa_queue_error_callback,
    data: *mut c_void,
    private_segment_size: u32,
    group_segment_size: u32,
    queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    let Some(me) = interposer() else {
        return HSA_STATUS_ERROR;
    };
    let Some(original) = me.hsa.core().hsa_queue_create_fn else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's own arguments.
    let plain = || unsafe {
        original(
            agent,
            size,
            type_,
            callback,
            data,
            private_segment_size,
            group_segment_size,
            queue,
        )
    };
    let mut fallback = false;
    let status = guarded(|| {
        let session = me.session();
        let Some(gpu) = session.agents.gpu(agent).cloned() else {
            fallback = true;
            return HSA_STATUS_ERROR;
        };
        if queue.is_null() {
            fallback = true;
            return HSA_STATUS_ERROR;
        }
        let amd = me.hsa.amd();
        let (Some(create), Some(register), Some(profile)) = (
            amd.hsa_amd_queue_intercept_create_fn,
            amd.hsa_amd_queue_intercept_register_fn,
            amd.hsa_amd_profiling_set_profiler_enabled_fn,
        ) else {
            fallback = true;
            return HSA_STATUS_ERROR;
        };
        // HIP asks for UINT32_MAX segment sizes, which the intercept path refuses.
        let clamp = |v: u32| if v == u32::MAX { 0 } else { v };
        // SAFETY: original entries with the application's arguments and a valid out-pointer.
        let status = unsafe {
            create(
                agent,
                size,
                type_,
                callback,
                data,
                clamp(private_segment_size),
                clamp(group_segment_size),
                queue,
            )
        };
        if status != HSA_STATUS_SUCCESS {
            warn_once(
                "intercept",
                &format!("cannot create an intercept queue (status 0x{status:x}); queues are created without profiling"),
            );
            fallback = true;
            return status;
        }
        // SAFETY: the queue was just created.
        let created = unsafe { *queue };
        let order = {
            let mut created_on = session
                .queues_created
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let count = created_on.entry(agent.handle).or_default();
            *count += 1;
            *count
        };
        warn_about_other_processes(session, &gpu);
        // SAFETY: a live queue.
        let queue_id = unsafe { (*created).id };
        let state = Box::new(QueueState {
            facts: QueueFacts {
                agent: gpu.agent,
                node_id: gpu.node_id,
                gpu_index: gpu.index,
                queue_id,
                order,
                arch: intern(&gpu.arch),
                key: created as usize,
            },
            counters: session.counters.get(&gpu.agent.handle).cloned(),
            chain: me.chain(session, &gpu),
            wants_counters: me.wants_counters(&gpu),
            plain: me.config.replay.is_none()
                && me.selector.selects_everything()
                && me.roctx.is_none()
                && match session.counters.get(&gpu.agent.handle) {
                    Some(counters) => counters.group_count() <= 1,
                    None => !me.wants_counters(&gpu),
                },
            gpu,
            key: created as usize,
        });
        let state = Box::into_raw(state);
        // SAFETY: original entries on the live intercept queue; `state` outlives the queue.
        let registered = unsafe {
            profile(created, 1);
            register(created, Some(on_submit), state as *mut c_void)
        };
        if registered != HSA_STATUS_SUCCESS {
            warn_once(
                "intercept",
                &format!("cannot register the intercept handler (status 0x{registered:x})"),
            );
            // SAFETY: never handed to the runtime.
            drop(unsafe { Box::from_raw(state) });
            return HSA_STATUS_SUCCESS;
        }
        if let Ok(mut queues) = me.queues.lock() {
            queues.insert(created as usize, state as usize);
        }
        HSA_STATUS_SUCCESS
    });
    if fallback {
        return plain();
    }
    status
}

unsafe extern "C" fn queue_destroy(queue: *mut hsa_queue_t) -> hsa_status_t {
    let Some(me) = interposer() else {
        return HSA_STATUS_ERROR;
    };
    let state = catch_unwind(AssertUnwindSafe(|| {
        let state = me
            .queues
            .lock()
            .ok()
            .and_then(|mut q| q.remove(&(queue as usize)));
        if let (Some(_), Some(session)) = (state, me.session.get()) {
            session
                .completion
                .drain(Some(queue as usize), DRAIN_TIMEOUT);
        }
        state
    }))
    .unwrap_or(None);
    let Some(original) = me.hsa.core().hsa_queue_destroy_fn else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's queue.
    let status = unsafe { original(queue) };
    if let Some(state) = state {
        // SAFETY: the QueueState boxed at creation; the queue is gone, no handler runs.
        drop(unsafe { Box::from_raw(state as *mut QueueState) });
    }
    status
}

unsafe extern "C" fn executable_freeze(
    executable: hsa_executable_t,
    options: *const c_char,
) -> hsa_status_t {
    let Some(me) = interposer() else {
        return HSA_STATUS_ERROR;
    };
    let Some(original) = me.hsa.core().hsa_executable_freeze_fn else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's arguments.
    let status = unsafe { original(executable, options) };
    if status == HSA_STATUS_SUCCESS {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let mut arch_of: HashMap<u64, String> = HashMap::new();
            let symbols = me
                .loader()
                .and_then(|l| me.hsa.kernel_symbols_by_code_object(executable, &l))
                .unwrap_or_else(|| me.hsa.kernel_symbols(executable));
            let kernels: Vec<(u64, String, KernelResources)> = symbols
                .into_iter()
                .map(|(object, symbol, agent)| {
                    let arch = arch_of.entry(agent.handle).or_insert_with(|| {
                        let name = me.hsa.agent_name(agent);
                        name.split(':').next().unwrap_or_default().to_string()
                    });
                    let resources = me.resources(object, arch);
                    (object, symbol, resources)
                })
                .collect();
            me.kernels
                .add_executable(executable.handle, kernels, me.config.names);
        }));
    }
    status
}

unsafe extern "C" fn executable_destroy(executable: hsa_executable_t) -> hsa_status_t {
    let Some(me) = interposer() else {
        return HSA_STATUS_ERROR;
    };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // The records of dispatches handed over but not yet taken name their kernels when the
        // worker takes them.
        if let Some(session) = me.session.get() {
            session.completion.take_handed_over(DRAIN_TIMEOUT);
        }
        me.kernels.remove_executable(executable.handle)
    }));
    let Some(original) = me.hsa.core().hsa_executable_destroy_fn else {
        return HSA_STATUS_ERROR;
    };
    // SAFETY: the original entry with the application's executable.
    unsafe { original(executable) }
}

//! One worker thread's dispatches: its queues, buffers, and the host-side check of every result.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::gpu::{check, Gpu, Kernel, System};
use crate::hsa::*;
use crate::hsa_api::*;
use crate::HsaError;

/// Work-group size of every dispatch (the fixtures' `lds_reverse` requires 256).
const WORKGROUP: u32 = 256;
/// Slots per queue.
const QUEUE_SLOTS: u32 = 64;
/// Bytes of each lane's kernarg segment (the fixtures need at most 280).
const KERNARG_BYTES: usize = 512;
/// Elements at the end of the buffer the host writes beside a kernel (`--writes-beside`).
pub const BESIDE: usize = 16;

/// The kernels the demo knows how to set up and check: the OpenCL ones by name, then the C++ ones
/// as they are written in C++.
pub const KERNELS: [&str; 12] = [
    "vadd",
    "saxpy",
    "fill",
    "increment",
    "indirect_increment",
    "lds_reverse",
    "scratchy",
    "copy",
    "empty",
    "scale<float>",
    "scale<unsigned>",
    "demo::twice",
];

/// The C++ kernels of the fixtures (`--cpp`), with the mangled symbol names the code object
/// knows them by.
pub const CPP_KERNELS: [(&str, &str); 3] = [
    ("scale<float>", "_Z5scaleIfEvPT_S0_j"),
    ("scale<unsigned>", "_Z5scaleIjEvPT_S0_j"),
    ("demo::twice", "_ZN4demo5twiceEPjj"),
];

/// The symbol name (without `.kd`) of a kernel of [`KERNELS`].
pub fn symbol_of(kernel: &'static str) -> &'static str {
    CPP_KERNELS
        .iter()
        .find(|(name, _)| *name == kernel)
        .map_or(kernel, |(_, symbol)| symbol)
}

/// Why a worker stopped.
#[derive(Debug)]
pub enum WorkError {
    /// An HSA call failed.
    Hsa(HsaError),
    /// A kernel produced a wrong value.
    Wrong {
        /// Kernel name.
        kernel: &'static str,
        /// GPU name.
        gpu: String,
        /// Element index.
        index: usize,
        /// Value found.
        got: u32,
        /// Value expected.
        want: u32,
    },
    /// A graph's dependencies did not hold.
    Graph(String),
    /// A byte the host wrote beside a kernel (`--writes-beside`) did not keep its value.
    Beside {
        /// Kernel name.
        kernel: &'static str,
        /// Byte offset in the buffer.
        offset: usize,
        /// Value found.
        got: u8,
        /// Value written.
        want: u8,
    },
}

impl From<HsaError> for WorkError {
    fn from(e: HsaError) -> Self {
        WorkError::Hsa(e)
    }
}

impl std::fmt::Display for WorkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkError::Hsa(e) => e.fmt(f),
            WorkError::Graph(e) => e.fmt(f),
            WorkError::Wrong { kernel, gpu, index, got, want } => write!(
                f,
                "wrong result from {kernel} on {gpu}: element {index} is 0x{got:08x}, expected 0x{want:08x}"
            ),
            WorkError::Beside { kernel, offset, got, want } => write!(
                f,
                "byte {offset} of {kernel}'s buffer, written by the host while the kernel ran, is 0x{got:02x}, expected 0x{want:02x}"
            ),
        }
    }
}

/// What one worker does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Iterations over the kernel list.
    pub iterations: u32,
    /// Queues per GPU.
    pub queues: u32,
    /// Kernels dispatched each iteration, in order.
    pub kernels: Vec<&'static str>,
    /// Elements per buffer.
    pub size: usize,
    /// Raise SIGSEGV after the first iteration.
    pub crash: bool,
    /// Where the buffers come from.
    pub buffers: Buffers,
    /// Annotate with roctx.
    pub roctx: bool,
    /// Worker threads (the first ones) that submit each iteration's kernels of a queue as one
    /// graph (see [`Lane::dispatch_graph`]).
    pub graph_threads: u32,
}

/// A queue with the nodes of its dispatches: one, or one per kernel when it submits graphs.
pub(crate) struct Lane<'a> {
    gpu: &'a Gpu,
    queue: *mut hsa_queue_t,
    nodes: Vec<Node>,
    /// The completion signal of a graph's last barrier packet (0 without graphs).
    done: hsa_signal_t,
}

/// One dispatch's completion signal, kernarg segment and three buffers.
struct Node {
    signal: hsa_signal_t,
    kernarg: *mut u8,
    buffers: [*mut u32; 3],
    capacity: usize,
    /// Where the buffers come from.
    source: Buffers,
}

/// Where a lane's buffers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffers {
    /// The fine-grained host pool (`hsa_amd_memory_pool_allocate`).
    Pool,
    /// An anonymous mapping the runtime never sees (`--untracked-buffers`).
    Untracked,
    /// The fine-grained host region (`hsa_memory_allocate`, `--region-buffers`).
    Region,
}

fn create_signal(value: i64) -> Result<hsa_signal_t, HsaError> {
    let mut signal = hsa_signal_t::default();
    // SAFETY: a valid out pointer.
    let status = unsafe { hsa_signal_create(value, 0, std::ptr::null(), &mut signal) };
    check("hsa_signal_create", status).map(|()| signal)
}

/// Waits until `signal` is below 1.
fn wait_done(signal: hsa_signal_t) {
    // SAFETY: a live signal of the application.
    while unsafe {
        hsa_signal_wait_scacquire(
            signal,
            HSA_SIGNAL_CONDITION_LT,
            1,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED,
        )
    } >= 1
    {}
}

/// Counts every verified dispatch, across threads.
pub static VERIFIED: AtomicU32 = AtomicU32::new(0);

impl<'a> Lane<'a> {
    pub(crate) fn new(
        system: &System,
        gpu: &'a Gpu,
        graph: Option<usize>,
        size: usize,
        buffers: Buffers,
    ) -> Result<Lane<'a>, HsaError> {
        let queue = gpu.create_queue(QUEUE_SLOTS)?;
        let nodes = (0..graph.unwrap_or(1).max(1))
            .map(|_| Node::new(system, size, buffers))
            .collect::<Result<_, _>>()?;
        // Created only for graphs: a lane creates signals in the order it always did.
        let done = match graph {
            Some(_) => create_signal(1)?,
            None => hsa_signal_t::default(),
        };
        Ok(Lane {
            gpu,
            queue,
            nodes,
            done,
        })
    }

    /// Reserves `count` slots of the queue, waiting until they are free; the first's index.
    fn reserve(&self, count: u64) -> u64 {
        // SAFETY: the queue is ours; the slots are reserved by the write-index bump and free
        // once the read index has passed them.
        unsafe {
            let size = u64::from((*self.queue).size);
            let index = hsa_queue_add_write_index_scacq_screl(self.queue, count);
            while index + count - hsa_queue_load_read_index_scacquire(self.queue) > size {
                std::thread::yield_now();
            }
            index
        }
    }

    /// Writes `packet` into slot `index` with an INVALID header, to be published later.
    fn write_slot(&self, index: u64, packet: AqlPacket) -> *mut AqlPacket {
        // SAFETY: the slot was reserved by `reserve`; its header stays INVALID until published.
        unsafe {
            let queue = &*self.queue;
            let slot = queue
                .base_address
                .cast::<AqlPacket>()
                .add((index % u64::from(queue.size)) as usize);
            let mut body = packet;
            body.dwords[0] = u32::from(packet_header(HSA_PACKET_TYPE_INVALID, false, 0, 0))
                | (packet.dwords[0] & 0xffff_0000);
            slot.write(body);
            slot
        }
    }

    /// Publishes the packets written at `slots` with their headers, in order, then rings the
    /// doorbell once for all of them (one intercept call on ROCm 7).
    fn publish(&self, slots: &[(*mut AqlPacket, AqlPacket)], last: u64) {
        // SAFETY: each slot was written by `write_slot`; the header word is published last.
        unsafe {
            for (slot, packet) in slots {
                (*slot.cast::<AtomicU32>()).store(packet.dwords[0], Ordering::Release);
            }
            hsa_signal_store_screlease((*self.queue).doorbell_signal, last as i64);
        }
    }

    /// A kernel dispatch packet of `kernel` over `items` work-items with `node`'s arguments.
    fn kernel_packet(node: &Node, kernel: &Kernel, items: usize, barrier: bool) -> AqlPacket {
        let grid = items.div_ceil(WORKGROUP as usize) * WORKGROUP as usize;
        AqlPacket::from(&hsa_kernel_dispatch_packet_t {
            header: packet_header(
                HSA_PACKET_TYPE_KERNEL_DISPATCH,
                barrier,
                HSA_FENCE_SCOPE_SYSTEM,
                HSA_FENCE_SCOPE_SYSTEM,
            ),
            setup: 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
            workgroup_size_x: WORKGROUP as u16,
            workgroup_size_y: 1,
            workgroup_size_z: 1,
            reserved0: 0,
            grid_size_x: grid.max(1) as u32,
            grid_size_y: 1,
            grid_size_z: 1,
            private_segment_size: kernel.private_segment_size,
            group_segment_size: kernel.group_segment_size,
            kernel_object: kernel.object,
            kernarg_address: node.kernarg.cast::<c_void>(),
            reserved2: 0,
            completion_signal: node.signal,
        })
    }

    /// Dispatches `kernel` over `items` work-items with node 0 and waits for it.
    fn dispatch(&self, kernel: &Kernel, items: usize) {
        self.submit(kernel, items);
        wait_done(self.nodes[0].signal);
    }

    /// Submits `kernel` over `items` work-items with node 0, whose signal completes when it ends.
    fn submit(&self, kernel: &Kernel, items: usize) {
        let node = &self.nodes[0];
        // SAFETY: the node's signal is ours.
        unsafe { hsa_signal_store_screlease(node.signal, 1) };
        let index = self.reserve(1);
        let packet = Self::kernel_packet(node, kernel, items, true);
        let slot = self.write_slot(index, packet);
        self.publish(&[(slot, packet)], index);
    }

    /// Submits `kernels[i]` over `items[i]` work-items with node `i` as one graph, behind one
    /// doorbell, and waits for it: kernels two at a time without the barrier bit, each pair
    /// after the one before through a barrier packet on their completion signals (barrier-AND
    /// before the second pair, barrier-OR before the third, and so on: the OR waits for either),
    /// and a last barrier-AND on the last pair completing the graph's own signal. Fails if that
    /// signal completed while a kernel of the last pair had not.
    fn dispatch_graph(&self, kernels: &[&Kernel], items: &[usize]) -> Result<(), String> {
        let mut packets = Vec::new();
        let mut previous: Vec<hsa_signal_t> = Vec::new();
        for (level, pair) in kernels.chunks(2).enumerate() {
            if level > 0 {
                let kind = match level % 2 {
                    1 => HSA_PACKET_TYPE_BARRIER_AND,
                    _ => HSA_PACKET_TYPE_BARRIER_OR,
                };
                packets.push(barrier_packet(kind, &previous, hsa_signal_t::default()));
            }
            previous.clear();
            for (j, kernel) in pair.iter().enumerate() {
                let i = level * 2 + j;
                let node = &self.nodes[i];
                // SAFETY: the node's signal is ours.
                unsafe { hsa_signal_store_screlease(node.signal, 1) };
                packets.push(Self::kernel_packet(node, kernel, items[i], false));
                previous.push(node.signal);
            }
        }
        // SAFETY: the graph's signal is ours.
        unsafe { hsa_signal_store_screlease(self.done, 1) };
        packets.push(barrier_packet(
            HSA_PACKET_TYPE_BARRIER_AND,
            &previous,
            self.done,
        ));
        let first = self.reserve(packets.len() as u64);
        let slots: Vec<(*mut AqlPacket, AqlPacket)> = packets
            .iter()
            .enumerate()
            .map(|(i, p)| (self.write_slot(first + i as u64, *p), *p))
            .collect();
        self.publish(&slots, first + packets.len() as u64 - 1);
        wait_done(self.done);
        for signal in &previous {
            // SAFETY: the node's signal is ours; a wait of no time reads its value.
            let value = unsafe {
                hsa_signal_wait_scacquire(
                    *signal,
                    HSA_SIGNAL_CONDITION_LT,
                    1,
                    0,
                    HSA_WAIT_STATE_ACTIVE,
                )
            };
            if value >= 1 {
                return Err(format!(
                    "the graph's last barrier completed before a kernel it waits for ended (on {})",
                    self.gpu.name
                ));
            }
        }
        for node in &self.nodes[..kernels.len()] {
            wait_done(node.signal);
        }
        Ok(())
    }
}

/// A barrier-AND or -OR packet without the barrier bit on up to five `dependencies`.
fn barrier_packet(kind: u16, dependencies: &[hsa_signal_t], completion: hsa_signal_t) -> AqlPacket {
    let mut dep_signal = [hsa_signal_t::default(); 5];
    dep_signal[..dependencies.len()].copy_from_slice(dependencies);
    AqlPacket::from(&hsa_barrier_and_packet_t {
        header: packet_header(kind, false, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM),
        dep_signal,
        completion_signal: completion,
        ..Default::default()
    })
}

impl Node {
    fn new(system: &System, size: usize, source: Buffers) -> Result<Node, HsaError> {
        let signal = create_signal(1)?;
        let capacity = size.div_ceil(WORKGROUP as usize) * WORKGROUP as usize;
        let bytes = capacity * 4;
        let buffer = || -> Result<*mut u32, HsaError> {
            match source {
                Buffers::Pool => return Ok(system.allocate(system.buffer_pool, bytes)?.cast()),
                Buffers::Region => return Ok(system.allocate_in_region(bytes)?.cast()),
                Buffers::Untracked => {}
            }
            // SAFETY: an anonymous private mapping of `bytes` bytes, unmapped in Drop.
            let mapped = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if mapped == libc::MAP_FAILED {
                return Err(HsaError {
                    call: "mmap",
                    status: HSA_STATUS_ERROR_OUT_OF_RESOURCES,
                });
            }
            Ok(mapped.cast())
        };
        Ok(Node {
            signal,
            kernarg: system.allocate(system.kernarg_pool, KERNARG_BYTES)?,
            buffers: [buffer()?, buffer()?, buffer()?],
            capacity,
            source,
        })
    }

    fn buffer(&mut self, i: usize) -> &mut [u32] {
        // SAFETY: each buffer holds `capacity` u32s, is used by one thread, and no dispatch is in
        // flight while the host touches it.
        unsafe { std::slice::from_raw_parts_mut(self.buffers[i], self.capacity) }
    }

    /// Writes a kernarg segment of `kernel.kernarg_size` bytes from `(offset, bytes)` pieces.
    fn kernargs(&self, kernel: &Kernel, pieces: &[(usize, &[u8])]) {
        let size = (kernel.kernarg_size as usize).min(KERNARG_BYTES);
        // SAFETY: the kernarg allocation is KERNARG_BYTES long.
        let segment = unsafe { std::slice::from_raw_parts_mut(self.kernarg, size) };
        segment.fill(0);
        for (offset, bytes) in pieces {
            segment[*offset..*offset + bytes.len()].copy_from_slice(bytes);
        }
    }

    /// Sets up `name`'s arguments and inputs from `seed`; the values its output buffer must
    /// then hold.
    fn prepare(&mut self, name: &'static str, kernel: &Kernel, n: usize, seed: u32) -> Vec<u32> {
        let buffers = self.buffers;
        let addr = |i: usize| (buffers[i] as u64).to_le_bytes();
        let n32 = (n as u32).to_le_bytes();
        let expected: Vec<u32> = match name {
            "vadd" => {
                let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 + seed as f32).collect();
                let b: Vec<f32> = (0..n).map(|i| (n - i) as f32 * 0.25).collect();
                self.fill_f32(0, &a);
                self.fill_f32(1, &b);
                self.buffer(2).fill(0xdead_beef);
                self.kernargs(
                    kernel,
                    &[(0, &addr(0)), (8, &addr(1)), (16, &addr(2)), (24, &n32)],
                );
                a.iter().zip(&b).map(|(a, b)| (a + b).to_bits()).collect()
            }
            "saxpy" => {
                let alpha = 2.0 + seed as f32;
                let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.125).collect();
                let y: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
                self.fill_f32(0, &x);
                self.fill_f32(2, &y);
                self.kernargs(
                    kernel,
                    &[
                        (0, &alpha.to_le_bytes()),
                        (8, &addr(0)),
                        (16, &addr(2)),
                        (24, &n32),
                    ],
                );
                x.iter()
                    .zip(&y)
                    .map(|(x, y)| alpha.mul_add(*x, *y).to_bits())
                    .collect()
            }
            "fill" => {
                let value = 0xc0ff_ee00 ^ seed;
                self.buffer(2)[..n].fill(0);
                self.kernargs(
                    kernel,
                    &[(0, &addr(2)), (8, &value.to_le_bytes()), (12, &n32)],
                );
                vec![value; n]
            }
            "increment" => {
                let start: Vec<u32> = (0..n as u32)
                    .map(|i| i.wrapping_mul(3).wrapping_add(seed))
                    .collect();
                self.buffer(2)[..n].copy_from_slice(&start);
                self.kernargs(kernel, &[(0, &addr(2)), (8, &n32)]);
                start.iter().map(|v| v.wrapping_add(1)).collect()
            }
            "indirect_increment" => {
                // The only argument pointer is buffer 0, which holds the address of buffer 2:
                // the kernel writes memory that none of its arguments points to.
                let start: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(5) ^ seed).collect();
                self.buffer(2)[..n].copy_from_slice(&start);
                let target = buffers[2] as u64;
                self.buffer(0)[..2].copy_from_slice(&[target as u32, (target >> 32) as u32]);
                self.kernargs(kernel, &[(0, &addr(0)), (8, &n32)]);
                start.iter().map(|v| v.wrapping_add(1)).collect()
            }
            "lds_reverse" => {
                let n = self.capacity;
                let start: Vec<u32> = (0..n as u32).map(|i| i ^ seed).collect();
                self.buffer(2).copy_from_slice(&start);
                self.kernargs(kernel, &[(0, &addr(2)), (8, &(n as u32).to_le_bytes())]);
                start
                    .chunks(WORKGROUP as usize)
                    .flat_map(|tile| tile.iter().rev().copied())
                    .collect()
            }
            "scratchy" => {
                let seed = seed.wrapping_add(7);
                self.buffer(2)[..n].fill(0);
                self.kernargs(
                    kernel,
                    &[(0, &addr(2)), (8, &seed.to_le_bytes()), (12, &n32)],
                );
                (0..n as u32)
                    .map(|i| seed.wrapping_mul(64).wrapping_add(i.wrapping_mul(2016)))
                    .collect()
            }
            "copy" => {
                let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(7) ^ seed).collect();
                self.buffer(0)[..n].copy_from_slice(&input);
                self.buffer(2)[..n].fill(0);
                // The kernel reads its work-group size from the code object v5 implicit
                // arguments, which the dispatcher fills as the HIP runtime does.
                let blocks = (n.div_ceil(WORKGROUP as usize) as u32).to_le_bytes();
                let one = 1u32.to_le_bytes();
                let group = (WORKGROUP as u16).to_le_bytes();
                let one16 = 1u16.to_le_bytes();
                self.kernargs(
                    kernel,
                    &[
                        (0, &addr(0)),
                        (8, &addr(2)),
                        (16, &n32),
                        (24, &blocks),
                        (28, &one),
                        (32, &one),
                        (36, &group),
                        (38, &one16),
                        (40, &one16),
                        (88, &one16),
                    ],
                );
                input
            }
            "empty" => Vec::new(),
            "scale<float>" => {
                let factor = 3.0f32;
                let start: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 + seed as f32).collect();
                self.fill_f32(2, &start);
                self.kernargs(
                    kernel,
                    &[(0, &addr(2)), (8, &factor.to_le_bytes()), (12, &n32)],
                );
                start.iter().map(|v| (v * factor).to_bits()).collect()
            }
            "scale<unsigned>" => {
                let factor = 0x9e37_79b9u32;
                let start: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(5) ^ seed).collect();
                self.buffer(2)[..n].copy_from_slice(&start);
                self.kernargs(
                    kernel,
                    &[(0, &addr(2)), (8, &factor.to_le_bytes()), (12, &n32)],
                );
                start.iter().map(|v| v.wrapping_mul(factor)).collect()
            }
            "demo::twice" => {
                let start: Vec<u32> = (0..n as u32).map(|i| i ^ (seed << 3)).collect();
                self.buffer(2)[..n].copy_from_slice(&start);
                self.kernargs(kernel, &[(0, &addr(2)), (8, &n32)]);
                start.iter().map(|v| v.wrapping_mul(2)).collect()
            }
            _ => unreachable!("kernel names are validated by the argument parser"),
        };
        expected
    }

    /// Checks the output buffer against `expected`.
    fn verify(&mut self, name: &'static str, gpu: &Gpu, expected: &[u32]) -> Result<(), WorkError> {
        let out = &self.buffer(2)[..expected.len()];
        if let Some(index) = (0..expected.len()).find(|&i| out[i] != expected[i]) {
            return Err(WorkError::Wrong {
                kernel: name,
                gpu: gpu.name.clone(),
                index,
                got: out[index],
                want: expected[index],
            });
        }
        VERIFIED.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn fill_f32(&mut self, i: usize, values: &[f32]) {
        for (slot, v) in self.buffer(i).iter_mut().zip(values) {
            *slot = v.to_bits();
        }
    }
}

impl Lane<'_> {
    /// Runs `name` once with inputs derived from `seed` and checks every element.
    pub(crate) fn run(
        &mut self,
        name: &'static str,
        kernel: &Kernel,
        n: usize,
        seed: u32,
    ) -> Result<(), WorkError> {
        let expected = self.nodes[0].prepare(name, kernel, n, seed);
        self.dispatch(kernel, expected.len().max(1));
        let gpu = self.gpu;
        self.nodes[0].verify(name, gpu, &expected)
    }

    /// Runs `name`, which adds 1 to each element, once over all but the last [`BESIDE`] of `n`
    /// elements of the buffer and, while it runs, writes two bytes among those last elements,
    /// as another thread of an application may write host memory next to a kernel's: the first
    /// once element 0 holds the kernel's result, the second once the first reads 0 again (set
    /// back between passes, which only kernel replay does), each after the dispatch completed if
    /// not written before. Checks every element and both bytes; whether the first byte was seen
    /// set back.
    pub(crate) fn run_beside_writes(
        &mut self,
        name: &'static str,
        kernel: &Kernel,
        n: usize,
        seed: u32,
    ) -> Result<bool, WorkError> {
        let items = n - BESIDE;
        let node = &mut self.nodes[0];
        let expected = node.prepare(name, kernel, items, seed);
        node.buffer(2)[items..].fill(0);
        let first = node.buffers[2];
        let tail = node.buffers[2].wrapping_add(items).cast::<u8>();
        // Bytes 40 and 20 past the kernel's elements: the second lies between the kernel's last
        // change and the first.
        let bytes = [
            (40usize, 0x80 | (seed & 0x7f) as u8),
            (20, 0x40 | (seed & 0x3f) as u8),
        ];
        let write = |(at, value): (usize, u8)| {
            // SAFETY: both bytes lie in the buffer past the kernel's elements.
            unsafe { tail.add(at).write_volatile(value) }
        };
        // SAFETY: as for the writes.
        let read = |at: usize| unsafe { tail.add(at).read_volatile() };
        self.submit(kernel, items);
        let signal = self.nodes[0].signal;
        let mut written = 0;
        // Watched only while a byte is left to write; then the dispatch is waited for.
        // SAFETY: a live signal of ours.
        while written < 2 && unsafe { hsa_signal_load_scacquire(signal) } >= 1 {
            match written {
                // SAFETY: element 0 of the buffer, which the kernel writes.
                0 if unsafe { first.read_volatile() } == expected[0] => {
                    write(bytes[0]);
                    written = 1;
                }
                1 if read(bytes[0].0) == 0 => {
                    write(bytes[1]);
                    written = 2;
                }
                _ => std::hint::spin_loop(),
            }
        }
        wait_done(signal);
        let set_back = written == 2;
        for &byte in &bytes[written..] {
            write(byte);
        }
        let gpu = self.gpu;
        self.nodes[0].verify(name, gpu, &expected)?;
        for (at, want) in bytes {
            let got = read(at);
            if got != want {
                return Err(WorkError::Beside {
                    kernel: name,
                    offset: items * 4 + at,
                    got,
                    want,
                });
            }
        }
        Ok(set_back)
    }

    /// Runs every kernel of `names` once as one graph, node `i` with inputs derived from
    /// `seeds[i]`, and checks every element.
    fn run_graph(
        &mut self,
        names: &[&'static str],
        kernels: &[Kernel],
        n: usize,
        seeds: &[u32],
    ) -> Result<(), WorkError> {
        let expected: Vec<Vec<u32>> = names
            .iter()
            .zip(kernels)
            .zip(seeds)
            .zip(self.nodes.iter_mut())
            .map(|(((name, kernel), &seed), node)| node.prepare(name, kernel, n, seed))
            .collect();
        let items: Vec<usize> = expected.iter().map(|e| e.len().max(1)).collect();
        let kernel_refs: Vec<&Kernel> = kernels.iter().collect();
        self.dispatch_graph(&kernel_refs, &items)
            .map_err(WorkError::Graph)?;
        let gpu = self.gpu;
        for ((name, node), expected) in names.iter().zip(self.nodes.iter_mut()).zip(&expected) {
            node.verify(name, gpu, expected)?;
        }
        Ok(())
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        // SAFETY: no dispatch is in flight; the queue and signal are this lane's.
        unsafe {
            if self.done.handle != 0 {
                hsa_signal_destroy(self.done);
            }
            hsa_queue_destroy(self.queue);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: no dispatch is in flight; every resource here is this node's.
        unsafe {
            hsa_signal_destroy(self.signal);
            hsa_amd_memory_pool_free(self.kernarg.cast());
            for buffer in self.buffers {
                match self.source {
                    Buffers::Untracked => {
                        libc::munmap(buffer.cast(), self.capacity * 4);
                    }
                    Buffers::Region => {
                        hsa_memory_free(buffer.cast());
                    }
                    Buffers::Pool => {
                        hsa_amd_memory_pool_free(buffer.cast());
                    }
                }
            }
        }
    }
}

/// Runs `kernel` (increment) `iterations` times on the first GPU with host writes beside each
/// dispatch ([`Lane::run_beside_writes`]); how many dispatches saw their memory set back.
pub fn writes_beside(
    system: &System,
    kernel: &'static str,
    iterations: u32,
    size: usize,
    buffers: Buffers,
) -> Result<u32, String> {
    if kernel != "increment" {
        return Err(format!("--writes-beside runs increment, not {kernel}"));
    }
    if size <= BESIDE {
        return Err(format!("--writes-beside needs --size above {BESIDE}"));
    }
    let gpu = &system.gpus[0];
    let code = gpu.kernel(symbol_of(kernel))?;
    let mut lane = Lane::new(system, gpu, None, size, buffers)?;
    let mut set_back = 0;
    for i in 0..iterations {
        if lane
            .run_beside_writes(kernel, &code, size, i)
            .map_err(|e| e.to_string())?
        {
            set_back += 1;
        }
    }
    Ok(set_back)
}

/// Runs `plan` on every GPU of `system` with this thread's own queues.
pub fn work(system: &System, plan: &Plan, thread: u32) -> Result<(), WorkError> {
    let graph = thread < plan.graph_threads;
    let mut lanes = Vec::new();
    for gpu in &system.gpus {
        let kernels: Vec<Kernel> = plan
            .kernels
            .iter()
            .map(|k| gpu.kernel(symbol_of(k)))
            .collect::<Result<_, _>>()?;
        let nodes = graph.then_some(kernels.len());
        for _ in 0..plan.queues {
            lanes.push((
                Lane::new(system, gpu, nodes, plan.size, plan.buffers)?,
                kernels.clone(),
            ));
        }
    }
    if plan.roctx {
        crate::roctx::name_thread(&format!("worker {thread}"));
    }
    for iteration in 0..plan.iterations {
        crate::roctx::push(&format!("iteration {iteration}"));
        for (lane_index, (lane, kernels)) in lanes.iter_mut().enumerate() {
            let seed = iteration
                .wrapping_mul(31)
                .wrapping_add(thread * 7 + lane_index as u32);
            if graph {
                crate::roctx::push(&format!("graph in iteration {iteration}"));
                let seeds: Vec<u32> = (0..kernels.len() as u32).map(|k| seed + 11 * k).collect();
                let result = lane.run_graph(&plan.kernels, kernels, plan.size, &seeds);
                crate::roctx::pop();
                result?;
                continue;
            }
            for (name, kernel) in plan.kernels.iter().zip(kernels) {
                crate::roctx::push(&format!("{name} in iteration {iteration}"));
                let result = lane.run(name, kernel, plan.size, seed);
                crate::roctx::pop();
                result?;
            }
        }
        crate::roctx::pop();
        if plan.crash && thread == 0 {
            // The standard library's own SIGSEGV handler (stack-overflow detection) would
            // swallow a raised signal once, so the default action is restored first.
            // SAFETY: restoring the default action and raising a signal are always allowed;
            // this is the requested crash.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
        }
    }
    Ok(())
}

//! The simulated GPU's command processor at register level: PM4 packets written by hand (as a
//! tool or AMD's aqlprofile would write them) program selects through `GRBM_GFX_INDEX`, start,
//! sample and stop counters through `CP_PERFMON_CNTL` and `RSLT_CNTL`, and read LO/HI into memory;
//! the values read are the value model's, and what the model does not know is a problem.

use hsa_runtime64::gpu::gfx9::{self, grbm, mc, perfmon, smn, sq, Stream};
use hsa_runtime64::gpu::{self, DeviceInfo, KernelRun};

const SQ_WAVES: u32 = 4;
const GRBM_COUNT: u32 = 0;

fn kernel(device: u32, arch: &'static str, start: u64, end: u64) -> KernelRun<'static> {
    KernelRun {
        agent_node_id: 1 + device,
        arch,
        device_index: device,
        queue_id: 1,
        dispatch_index: 0,
        kernel: "vadd",
        grid: [1 << 18, 1, 1],
        workgroup: [256, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
        wave_size: 64,
        start_ns: start,
        end_ns: end,
        computed: false,
        variation: None,
    }
}

/// A device of `arch`'s reference chip at index `device`.
fn device(device: u32, arch: &str) -> DeviceInfo {
    let info = DeviceInfo::reference(arch);
    gpu::register_device(device, info.clone());
    info
}

fn exec(device: u32, stream: &Stream, now: u64) {
    gpu::execute_pm4_ib(
        device,
        stream.dwords.as_ptr() as u64,
        stream.dwords.len() as u32,
        now,
    );
}

/// Start: SQ slot 0 counts SQ_WAVES, GRBM slot 0 counts GRBM_COUNT.
fn start_sq_and_grbm(xcc: u32) -> Stream {
    let mut s = Stream::new(xcc);
    start_writes(&mut s);
    s
}

/// The start of [`start_sq_and_grbm`] run by the XCCs of `only` alone.
fn start_sq_and_grbm_on(xcc: u32, only: impl Iterator<Item = u32>) -> Stream {
    let mut s = Stream::new(xcc);
    for x in only {
        s.predicated(x, start_writes);
    }
    s
}

fn start_writes(s: &mut Stream) {
    s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
    s.set_uconfig(gfx9::RLC_PERFMON_CLK_CNTL, 1);
    s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::DISABLE_AND_RESET);
    s.set_uconfig(0xD9C0, sq::SELECT_MASKS | SQ_WAVES);
    s.set_uconfig(gfx9::SQ_PERFCOUNTER_MASK, sq::MASK_ALL);
    s.set_uconfig(gfx9::SQ_PERFCOUNTER_CTRL, sq::CTRL_SQ);
    s.set_uconfig(0xD840, GRBM_COUNT);
    s.set_sh(gfx9::COMPUTE_PERFCOUNT_ENABLE, 1);
    s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::START);
}

/// Read of SQ (per SE) and GRBM for every XCC into `out`: per XCC, `se` SQ samples then GRBM.
fn read_sq_and_grbm(xcc: u32, se: u32, out: &mut [u64], sample: bool) -> Stream {
    let mut s = Stream::new(xcc);
    if sample {
        s.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::READ);
    }
    let base = out.as_mut_ptr() as u64;
    for x in 0..xcc {
        s.predicated(x, |s| {
            for e in 0..se {
                s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::se(e));
                s.copy_counter(0xD1C0, 0xD1C1, base + 8 * u64::from(x * (se + 1) + e));
            }
            s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::BROADCAST);
            s.copy_counter(0xD040, 0xD041, base + 8 * u64::from(x * (se + 1) + se));
        });
    }
    s
}

/// Ground truth in the read's layout: per XCC, SQ_WAVES per SE then GRBM_COUNT.
fn expected(k: &KernelRun, xcc: u32, se: u32) -> Vec<u64> {
    let t = gpu::ground_truth(k, &["SQ_WAVES", "GRBM_COUNT"]).expect("counters");
    (0..xcc as usize)
        .flat_map(|x| {
            let se = se as usize;
            let mut v = t[0].1[x * se..(x + 1) * se].to_vec();
            v.push(t[1].1[x]);
            v
        })
        .collect()
}

#[test]
fn selects_reach_every_xcc_and_reads_follow_grbm_gfx_index_and_pred_exec() {
    for (dev, arch) in [(200, "gfx942"), (201, "gfx90a"), (202, "gfx950")] {
        let info = device(dev, arch);
        let (xcc, se) = (info.geometry.xcc, info.geometry.se_per_xcc());
        let k = kernel(dev, arch, 1_000, 51_000);
        exec(dev, &start_sq_and_grbm(xcc), 1_000);
        gpu::kernel_started(&k);
        let mut out = vec![u64::MAX; (xcc * (se + 1)) as usize];
        let read = read_sq_and_grbm(xcc, se, &mut out, true);
        exec(dev, &read, 51_000);
        assert_eq!(out, expected(&k, xcc, se), "{arch}");
    }
}

/// Runs `kernels` on device `dev`, counting from `start` and reading at `read`: the values read.
fn read_window(dev: u32, kernels: &[KernelRun], start: u64, read: u64) -> Vec<u64> {
    let info = device(dev, "gfx942");
    let (xcc, se) = (info.geometry.xcc, info.geometry.se_per_xcc());
    exec(dev, &start_sq_and_grbm(xcc), start);
    for k in kernels {
        gpu::kernel_started(k);
    }
    let mut out = vec![u64::MAX; (xcc * (se + 1)) as usize];
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, true), read);
    out
}

#[test]
fn a_read_sees_a_long_kernel_that_later_shorter_kernels_ended_before() {
    // A long kernel, then shorter ones launched after it that end long before it does: a read
    // of a window while only the long one still runs reads its share and nothing of the others.
    let long = |dev| kernel(dev, "gfx942", 1_000, 201_000);
    let short = |dev, start| kernel(dev, "gfx942", start, start + 2_000);
    let mut kernels = vec![long(210)];
    kernels.extend((0..50).map(|i| short(210, 2_000 + 3_000 * i)));
    let mixed = read_window(210, &kernels, 160_000, 180_000);
    let alone = read_window(211, &[long(211)], 160_000, 180_000);
    assert_eq!(mixed, alone);
    assert!(alone.iter().any(|&v| v > 0), "{alone:?}");
}

#[test]
fn xccs_counting_from_different_times_each_read_their_own_window() {
    // XCC 0 counts from the kernel's start, the others from halfway: each XCC reads what a device
    // all of whose XCCs counted over its window reads.
    let dev = 212;
    let info = device(dev, "gfx942");
    let (xcc, se) = (info.geometry.xcc, info.geometry.se_per_xcc());
    let k = kernel(dev, "gfx942", 1_000, 51_000);
    exec(dev, &start_sq_and_grbm_on(xcc, 0..1), 1_000);
    gpu::kernel_started(&k);
    exec(dev, &start_sq_and_grbm_on(xcc, 1..xcc), 26_000);
    let mut out = vec![u64::MAX; (xcc * (se + 1)) as usize];
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, true), 51_000);
    let whole = read_window(213, &[kernel(213, "gfx942", 1_000, 51_000)], 1_000, 51_000);
    let half = read_window(214, &[kernel(214, "gfx942", 1_000, 51_000)], 26_000, 51_000);
    let per_xcc = (se + 1) as usize;
    assert_eq!(out[..per_xcc], whole[..per_xcc]);
    assert_eq!(out[per_xcc..], half[per_xcc..]);
    assert_ne!(whole[per_xcc..], half[per_xcc..]);
}

#[test]
fn a_read_returns_what_the_last_sample_latched_and_reset_zeroes() {
    let dev = 203;
    let info = device(dev, "gfx942");
    let (xcc, se) = (info.geometry.xcc, info.geometry.se_per_xcc());
    let k = kernel(dev, "gfx942", 1_000, 51_000);
    exec(dev, &start_sq_and_grbm(xcc), 1_000);
    gpu::kernel_started(&k);
    let mut out = vec![0u64; (xcc * (se + 1)) as usize];
    // Sampled halfway: half of the kernel's waves, half of the window's cycles.
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, true), 26_000);
    let full = expected(&k, xcc, se);
    let half: Vec<u64> = out.clone();
    assert!(half.iter().zip(&full).all(|(h, f)| h < f || *f == 0));
    // Reading again without a sample gives the latched values, however late.
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, false), 90_000);
    assert_eq!(out, half);
    // Stopped at the kernel's end: a later sample (keeping the counters stopped) reads the whole
    // kernel and nothing after.
    let mut stop = Stream::new(xcc);
    stop.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::STOP);
    exec(dev, &stop, 51_000);
    let mut sample = Stream::new(xcc);
    sample.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::STOP | perfmon::SAMPLE);
    exec(dev, &sample, 99_000);
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, false), 99_500);
    assert_eq!(out, full);
    // Reset zeroes everything.
    let mut reset = Stream::new(xcc);
    reset.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::DISABLE_AND_RESET);
    exec(dev, &reset, 100_000);
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, true), 100_500);
    assert!(out.iter().all(|&v| v == 0), "{out:?}");
}

#[test]
fn gated_clock_and_disabled_compute_counting_read_zero() {
    let dev = 204;
    let info = device(dev, "gfx90a");
    let (xcc, se) = (info.geometry.xcc, info.geometry.se_per_xcc());
    // Perf-monitor clock gated: nothing counts.
    let mut start = start_sq_and_grbm(xcc);
    start.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::DISABLE_AND_RESET);
    start.set_uconfig(gfx9::RLC_PERFMON_CLK_CNTL, 0);
    start.set_uconfig(gfx9::CP_PERFMON_CNTL, perfmon::START);
    let k = kernel(dev, "gfx90a", 1_000, 11_000);
    exec(dev, &start, 1_000);
    gpu::kernel_started(&k);
    let mut out = vec![7u64; (xcc * (se + 1)) as usize];
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, true), 11_000);
    assert!(out.iter().all(|&v| v == 0), "{out:?}");
    // Compute perf counting off: SQ reads zero, GRBM still counts.
    let mut start = start_sq_and_grbm(xcc);
    start.set_sh(gfx9::COMPUTE_PERFCOUNT_ENABLE, 0);
    let k = kernel(dev, "gfx90a", 20_000, 30_000);
    exec(dev, &start, 20_000);
    gpu::kernel_started(&k);
    exec(dev, &read_sq_and_grbm(xcc, se, &mut out, true), 30_000);
    let full = expected(&k, xcc, se);
    assert_eq!(&out[..se as usize], &vec![0; se as usize][..]);
    assert_eq!(out[se as usize], full[se as usize]);
}

#[test]
fn memory_controller_blocks_count_while_enabled_and_read_the_selected_slot() {
    let dev = 205;
    let info = device(dev, "gfx90a");
    let block = gpu::arch::tables()
        .block_by_name("gfx90a", "GCEA")
        .expect("GCEA");
    let k = kernel(dev, "gfx90a", 1_000, 41_000);
    let model = |event: u32| {
        gpu::model::event_values(&k.dispatch(&info), &info.geometry, block, None, event, 0)
    };
    let (cfg, lo, hi, rslt) = (0x2AFE, 0x2AFC_u64, 0x2AFD_u64, 0x2700_u64);
    let mut s = Stream::new(1);
    s.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::instance(5));
    s.write_pconfig(rslt, mc::CLEAR_ALL);
    s.write_config(cfg, mc::ENABLE | 7);
    s.write_config(cfg + 1, mc::ENABLE | 9);
    s.write_pconfig(rslt, mc::ENABLE_ANY);
    exec(dev, &s, 1_000);
    gpu::kernel_started(&k);
    let mut out = [0u64; 2];
    let mut r = Stream::new(1);
    r.set_uconfig(gfx9::GRBM_GFX_INDEX, grbm::instance(5));
    r.write_pconfig(rslt, 1);
    r.copy_counter(lo, hi, out.as_mut_ptr() as u64 + 8);
    r.write_pconfig(rslt, 0);
    r.copy_counter(lo, hi, out.as_mut_ptr() as u64);
    exec(dev, &r, 41_000);
    assert_eq!(out, [model(7)[5], model(9)[5]]);
    assert_ne!(out[0], out[1]);
}

#[test]
fn smn_addresses_reach_the_aid_of_their_bits() {
    let dev = 206;
    let info = device(dev, "gfx942");
    let block = gpu::arch::tables()
        .block_by_name("gfx942", "ATC")
        .expect("ATC");
    let k = kernel(dev, "gfx942", 1_000, 41_000);
    let model = gpu::model::event_values(&k.dispatch(&info), &info.geometry, block, None, 3, 0);
    let mut s = Stream::new(8);
    s.predicated(0, |s| {
        s.write_pconfig(smn::address(0x0C3E, 2), mc::ENABLE | 3);
        s.write_pconfig(smn::address(0x0C42, 2), mc::CLEAR_ALL);
        s.write_pconfig(smn::address(0x0C42, 2), mc::ENABLE_ANY);
    });
    exec(dev, &s, 1_000);
    gpu::kernel_started(&k);
    let mut out = [0u64; 2];
    let mut r = Stream::new(8);
    r.predicated(0, |s| {
        s.write_pconfig(smn::address(0x0C42, 2), 0);
        s.copy_counter(
            smn::address(0x0C43, 2),
            smn::address(0x0C44, 2),
            out.as_mut_ptr() as u64,
        );
        s.copy_counter(
            smn::address(0x0C43, 1),
            smn::address(0x0C44, 1),
            out.as_mut_ptr() as u64 + 8,
        );
    });
    exec(dev, &r, 41_000);
    assert_eq!(out, [model[2], 0]);
}

#[test]
fn write_data_wait_reg_mem_and_chained_buffers_run() {
    let dev = 207;
    device(dev, "gfx90a");
    let mut memory = [0u32; 4];
    let flag = memory.as_mut_ptr() as u64;
    // A chained buffer that writes a marker with WRITE_DATA.
    let inner = [
        gfx9::header(gfx9::op::WRITE_DATA, 5),
        5 << 8,
        (flag + 4) as u32,
        ((flag + 4) >> 32) as u32,
        0xC0FFEE,
    ];
    let before = gpu::problems_on(dev);
    let mut s = Stream::new(1);
    s.dwords.extend([
        gfx9::header(gfx9::op::INDIRECT_BUFFER, 4),
        inner.as_ptr() as u32 & !3,
        (inner.as_ptr() as u64 >> 32) as u32,
        gfx9::IB_CONTROL | inner.len() as u32,
    ]);
    // Wait until the marker equals 0xC0FFEE (it already does), then copy the GPU clock.
    s.dwords.extend([
        gfx9::header(gfx9::op::WAIT_REG_MEM, 7),
        3 | 1 << 4,
        (flag + 4) as u32,
        ((flag + 4) >> 32) as u32,
        0xC0FFEE,
        0xFFFF_FFFF,
        4,
    ]);
    s.dwords.extend([
        gfx9::header(gfx9::op::COPY_DATA, 6),
        gfx9::copy::SRC_GPU_CLOCK | gfx9::copy::DST_MEM << 8 | gfx9::copy::COUNT_64,
        0,
        0,
        (flag + 8) as u32,
        ((flag + 8) >> 32) as u32,
    ]);
    exec(dev, &s, 12_340);
    assert_eq!(memory[1], 0xC0FFEE);
    assert_eq!(u64::from(memory[2]) | u64::from(memory[3]) << 32, 1_234);
    assert_eq!(gpu::problems_on(dev), before);
}

#[test]
fn what_the_gpu_does_not_model_is_a_problem_not_a_no_op() {
    let dev = 208;
    device(dev, "gfx942");
    let before = gpu::problems_on(dev);
    let cases: Vec<Vec<u32>> = vec![
        // An opcode the command processor does not know (DRAW_INDEX_AUTO).
        vec![gfx9::header(0x2D, 3), 0, 0],
        // A register the model does not have.
        vec![gfx9::header(gfx9::op::SET_UCONFIG_REG, 3), 0x1234, 1],
        // An SQ select beyond the block's last event.
        vec![
            gfx9::header(gfx9::op::SET_UCONFIG_REG, 3),
            0xD9C0 - gfx9::UCONFIG_BASE,
            sq::SELECT_MASKS | 0x1FF,
        ],
        // A CP_PERFMON_CNTL state that does not exist.
        vec![
            gfx9::header(gfx9::op::SET_UCONFIG_REG, 3),
            gfx9::CP_PERFMON_CNTL - gfx9::UCONFIG_BASE,
            7,
        ],
        // An event other than CS_PARTIAL_FLUSH.
        vec![gfx9::header(gfx9::op::EVENT_WRITE, 2), 0x16],
        // A GCEA CFG in a mode other than accumulate.
        vec![
            gfx9::header(gfx9::op::COPY_DATA, 6),
            gfx9::copy::SRC_IMMEDIATE,
            mc::ENABLE | 1 << 24 | 3,
            0,
            0x2AFE,
            0,
        ],
        // A non-type-3 dword.
        vec![0x4000_0000],
        // A PRED_EXEC that ends inside a packet.
        vec![
            gfx9::header(gfx9::op::PRED_EXEC, 2),
            1 << 24 | 2,
            gfx9::header(gfx9::op::SET_UCONFIG_REG, 3),
            gfx9::GRBM_GFX_INDEX - gfx9::UCONFIG_BASE,
            grbm::BROADCAST,
        ],
    ];
    for (i, dwords) in cases.iter().enumerate() {
        gpu::execute_pm4_ib(dev, dwords.as_ptr() as u64, dwords.len() as u32, 1_000);
        assert_eq!(
            gpu::problems_on(dev),
            before + i as u64 + 1,
            "case {i}: {dwords:08x?}"
        );
    }
}

/// A command buffer runs as it stands each time, however it was changed after it ran: here a
/// read in the middle of four pages (which the command processor watches instead of comparing
/// them, being host memory) has a sample's destination moved by a store of the program, then
/// moved back by `read(2)`, a write the kernel makes on the program's behalf.
#[test]
fn a_buffer_changed_after_it_ran_runs_as_changed() {
    gpu::set_host_memory(|_, _| true);
    let dev = 209;
    let info = device(dev, "gfx942");
    let (xcc, se) = (info.geometry.xcc, info.geometry.se_per_xcc());
    let k = kernel(dev, "gfx942", 1_000, 51_000);
    exec(dev, &start_sq_and_grbm(xcc), 1_000);
    gpu::kernel_started(&k);
    let samples = (xcc * (se + 1)) as usize;
    let mut out = vec![u64::MAX; samples + 1];
    let read = read_sq_and_grbm(xcc, se, &mut out[..samples], true);
    // NOP, the read, NOP: 3,900 dwords from a page boundary, the read in the second page.
    let page = 4096;
    let layout = std::alloc::Layout::from_size_align(4 * page, page).expect("layout");
    // SAFETY: a non-zero size; freed at the end.
    let base = unsafe { std::alloc::alloc_zeroed(layout) } as *mut u32;
    assert!(!base.is_null());
    // SAFETY: 4 pages of u32s, ours alone.
    let buffer = unsafe { std::slice::from_raw_parts_mut(base, 4 * page / 4) };
    let (lead, total) = (1_200, 3_900);
    buffer[0] = gfx9::header(gfx9::op::NOP, lead as u32);
    buffer[lead..lead + read.dwords.len()].copy_from_slice(&read.dwords);
    let trail = lead + read.dwords.len();
    buffer[trail] = gfx9::header(gfx9::op::NOP, (total - trail) as u32);
    let run = |out: &mut Vec<u64>| {
        out.fill(u64::MAX);
        gpu::execute_pm4_ib(dev, base as u64, total as u32, 51_000);
        out.clone()
    };
    let mut want = expected(&k, xcc, se);
    want.push(u64::MAX);
    assert_eq!(run(&mut out), want);
    assert_eq!(run(&mut out), want, "run again unchanged");

    // XCC 0's GRBM sample goes to the spare slot instead: its LO and HI COPY_DATAs' addresses.
    let moved = |from: u64, to: u64, dwords: &mut [u32]| {
        let at: Vec<usize> = (0..dwords.len() - 1)
            .filter(|&i| dwords[i] == from as u32 && dwords[i + 1] == (from >> 32) as u32)
            .collect();
        assert_eq!(at.len(), 1, "one COPY_DATA to 0x{from:x}");
        dwords[at[0]] = to as u32;
        dwords[at[0] + 1] = (to >> 32) as u32;
        at[0]
    };
    let slot = |i: usize| &out[i] as *const u64 as u64;
    let (grbm0, spare) = (slot(se as usize), slot(samples));
    let lo = moved(grbm0, spare, &mut buffer[lead..trail]);
    let hi = moved(grbm0 + 4, spare + 4, &mut buffer[lead..trail]);
    let mut want_moved = want.clone();
    want_moved[samples] = want[se as usize];
    want_moved[se as usize] = u64::MAX;
    assert_eq!(run(&mut out), want_moved, "a store of the program");

    // Back through a pipe: the kernel writes the buffer.
    let mut original = buffer[lead..trail].to_vec();
    moved(spare, grbm0, &mut original[lo..lo + 2]);
    moved(spare + 4, grbm0 + 4, &mut original[hi..hi + 2]);
    let span = lo.min(hi)..lo.max(hi) + 2;
    let bytes: Vec<u8> = original[span.clone()]
        .iter()
        .flat_map(|d| d.to_ne_bytes())
        .collect();
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) into a two-element array; the ends are closed below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: writing our bytes to the pipe, then reading them into the buffer's dwords.
    unsafe {
        assert_eq!(
            libc::write(fds[1], bytes.as_ptr().cast(), bytes.len()),
            bytes.len() as isize
        );
        let into = buffer[lead + span.start..].as_mut_ptr();
        assert_eq!(
            libc::read(fds[0], into.cast(), bytes.len()),
            bytes.len() as isize
        );
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    assert_eq!(run(&mut out), want, "a write of the kernel");
    // SAFETY: allocated above with this layout; the device no longer runs it.
    unsafe { std::alloc::dealloc(base.cast(), layout) };
}

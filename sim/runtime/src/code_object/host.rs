//! Kernels the simulated GPU executes on host memory: the reference kernels of
//! `sim/fixtures/kernels.cl` and `kernels.hip`, and HIP's blit kernels ([`super::blit`]).
//!
//! The simulated GPU shares the host's address space, so a dispatch's kernarg segment and the
//! buffers it points to are host memory. Which kernels run is decided when a code object is
//! loaded, by the code object's identity, never by a kernel name alone: a fixture kernel runs only
//! from a code object that is byte for byte one of the fixture files built into the runtime, and
//! a blit kernel only from a code object whose metadata is that of HIP's blit code object. Each
//! fixture kernel does what its source does, for every work-item of the grid's x dimension (the
//! fixtures index by x only), reading its arguments at the offsets the metadata's `.args` give;
//! within a fixture, kernels are known by symbol name (the mangled one for the C++ kernels).

use super::blit::{blit_of, is_blit_code_object, run_blit, Blit, BlitLaunch};
use super::elf::CodeObject;
use super::image::LoadedKernel;
use super::metadata::KernelArg;

/// The fixture code objects, as committed (`sim/fixtures/regenerate.sh` rebuilds them
/// byte for byte).
const FIXTURES: [&[u8]; 5] = [
    include_bytes!("../../../fixtures/kernels-gfx90a.co"),
    include_bytes!("../../../fixtures/kernels-gfx942.co"),
    include_bytes!("../../../fixtures/kernels-gfx950.co"),
    include_bytes!("../../../fixtures/kernels-gfx1100.co"),
    include_bytes!("../../../fixtures/kernels-gfx1201.co"),
];

/// How the simulated GPU computes a kernel on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKernel {
    /// A kernel of a fixture code object, run by its symbol name if its arguments have the
    /// fixture's layout.
    Fixture,
    /// A kernel of HIP's blit code object.
    Blit(Blit),
}

/// The host implementation of each kernel of `code_object`, in metadata order (`None` for a
/// kernel the simulated GPU only times and counts).
pub fn host_kernels(code_object: &CodeObject) -> Vec<Option<HostKernel>> {
    let kernels = &code_object.kernels;
    if FIXTURES.contains(&code_object.bytes.as_slice()) {
        vec![Some(HostKernel::Fixture); kernels.len()]
    } else if is_blit_code_object(code_object) {
        kernels
            .iter()
            .map(|meta| blit_of(meta).map(HostKernel::Blit))
            .collect()
    } else {
        vec![None; kernels.len()]
    }
}

/// One kernel dispatch to execute on the host.
#[derive(Debug, Clone, Copy)]
pub struct KernelLaunch<'a> {
    /// The kernarg segment (`kernarg_address` of the dispatch packet).
    pub kernarg: *const u8,
    /// Grid size in work-items.
    pub grid: [u32; 3],
    /// Work-group size in work-items.
    pub workgroup: [u16; 3],
    /// LDS bytes per work-group from the packet.
    pub group_segment_size: u32,
    /// Scratch bytes per work-item from the packet.
    pub private_segment_size: u32,
    /// The kernel the packet's kernel object names.
    pub kernel: &'a LoadedKernel,
}

/// Executes a kernel on host memory: a fixture kernel (vadd, saxpy, fill, increment,
/// indirect_increment, lds_reverse, scratchy, copy, empty, and the C++ `scale<float>`, `scale<unsigned int>` and
/// `demo::twice`) or a HIP blit kernel. False if the kernel was not computed: its code object
/// is neither a fixture nor HIP's blit code object, its arguments do not have the layout of the
/// fixture kernel of that name, or it is a blit the simulator does not compute.
///
/// The dispatch's memory is the application's, as on a GPU: pointers in the kernarg segment (and
/// the one `indirect_increment` reads through) must be valid for the elements the grid touches.
pub fn run_on_host(launch: &KernelLaunch) -> bool {
    if launch.kernarg.is_null() && !launch.kernel.meta.args.is_empty() {
        return false;
    }
    match launch.kernel.host {
        Some(HostKernel::Fixture) => run_fixture(launch),
        Some(HostKernel::Blit(blit)) => run_blit(
            blit,
            &BlitLaunch {
                kernarg: launch.kernarg,
                meta: &launch.kernel.meta,
                grid: launch.grid,
            },
        ),
        None => false,
    }
}

/// Executes a fixture kernel by its symbol name.
fn run_fixture(launch: &KernelLaunch) -> bool {
    let args = Kernargs {
        base: launch.kernarg,
        layout: launch.kernel.meta.explicit_args().collect(),
    };
    let items = launch.grid[0];
    match launch.kernel.name.as_str() {
        "vadd" => args.check(&[8, 8, 8, 4]).is_some_and(|()| {
            let (a, b, c, n) = (
                args.ptr::<f32>(0),
                args.ptr::<f32>(1),
                args.ptr::<f32>(2),
                args.u32(3),
            );
            for i in 0..items.min(n) as usize {
                // SAFETY: see the function's doc: the buffers hold n elements.
                unsafe { *c.add(i) = *a.add(i) + *b.add(i) };
            }
            true
        }),
        "saxpy" => args.check(&[4, 8, 8, 4]).is_some_and(|()| {
            let (a, x, y, n) = (
                args.f32(0),
                args.ptr::<f32>(1),
                args.ptr::<f32>(2),
                args.u32(3),
            );
            for i in 0..items.min(n) as usize {
                // SAFETY: see the function's doc: the buffers hold n elements.
                unsafe { *y.add(i) = a.mul_add(*x.add(i), *y.add(i)) };
            }
            true
        }),
        "fill" => args.check(&[8, 4, 4]).is_some_and(|()| {
            let (out, value, n) = (args.ptr::<u32>(0), args.u32(1), args.u32(2));
            for i in 0..items.min(n) as usize {
                // SAFETY: see the function's doc: the buffer holds n elements.
                unsafe { *out.add(i) = value };
            }
            true
        }),
        "increment" => args.check(&[8, 4]).is_some_and(|()| {
            let (data, n) = (args.ptr::<u32>(0), args.u32(1));
            // SAFETY: see the function's doc: the buffer holds n elements.
            unsafe { update_each(data, items.min(n), |v| v.wrapping_add(1)) };
            true
        }),
        "indirect_increment" => args.check(&[8, 4]).is_some_and(|()| {
            let (holder, count) = (args.ptr::<u64>(0), items.min(args.u32(1)));
            // Like the compiled kernel, holder[0] is read only by work-items below n.
            if count > 0 {
                // SAFETY: see the function's doc: holder[0] is readable and the address it holds
                // has n elements.
                unsafe {
                    let data = holder.read_unaligned() as *mut u32;
                    update_each(data, count, |v| v.wrapping_add(1));
                }
            }
            true
        }),
        "lds_reverse" => args.check(&[8, 4]).is_some_and(|()| {
            const TILE: usize = 256;
            let (data, n) = (args.ptr::<u32>(0), args.u32(1) as usize);
            let groups = (items as usize).div_ceil(TILE);
            for base in (0..groups * TILE)
                .step_by(TILE)
                .take_while(|base| *base < n)
            {
                // SAFETY: see the function's doc: the kernel requires n to be a multiple of 256,
                // so each tile lies inside the buffer.
                unsafe { std::slice::from_raw_parts_mut(data.add(base), TILE).reverse() };
            }
            true
        }),
        "scratchy" => args.check(&[8, 4, 4]).is_some_and(|()| {
            let (out, seed, n) = (args.ptr::<u32>(0), args.u32(1), args.u32(2));
            for i in 0..items.min(n) {
                let scratch: Vec<u32> = (0..64).map(|k| seed.wrapping_add(k * i)).collect();
                let sum = (0..64).fold(0u32, |sum, k| sum.wrapping_add(scratch[(7 * k) % 64]));
                // SAFETY: see the function's doc: the buffer holds n elements.
                unsafe { *out.add(i as usize) = sum };
            }
            true
        }),
        "copy" => args.check(&[8, 8, 4]).is_some_and(|()| {
            let (input, out, n) = (args.ptr::<u32>(0), args.ptr::<u32>(1), args.u32(2));
            for i in 0..items.min(n) as usize {
                // SAFETY: see the function's doc: the buffers hold n elements.
                unsafe { *out.add(i) = *input.add(i) };
            }
            true
        }),
        "empty" => args.check(&[]).is_some(),
        // void scale<float>(float*, float, unsigned int)
        "_Z5scaleIfEvPT_S0_j" => args.check(&[8, 4, 4]).is_some_and(|()| {
            let (data, factor, n) = (args.ptr::<f32>(0), args.f32(1), args.u32(2));
            // SAFETY: see the function's doc: the buffer holds n elements.
            unsafe { update_each(data, items.min(n), |v| v * factor) };
            true
        }),
        // void scale<unsigned int>(unsigned int*, unsigned int, unsigned int)
        "_Z5scaleIjEvPT_S0_j" => args.check(&[8, 4, 4]).is_some_and(|()| {
            let (data, factor, n) = (args.ptr::<u32>(0), args.u32(1), args.u32(2));
            // SAFETY: see the function's doc: the buffer holds n elements.
            unsafe { update_each(data, items.min(n), |v| v.wrapping_mul(factor)) };
            true
        }),
        // demo::twice(unsigned int*, unsigned int)
        "_ZN4demo5twiceEPjj" => args.check(&[8, 4]).is_some_and(|()| {
            let (data, n) = (args.ptr::<u32>(0), args.u32(1));
            // SAFETY: see the function's doc: the buffer holds n elements.
            unsafe { update_each(data, items.min(n), |v| v.wrapping_mul(2)) };
            true
        }),
        _ => false,
    }
}

/// Replaces each of the first `count` elements of `data` with `f` of it.
///
/// # Safety
/// `data` must be valid for reads and writes of `count` elements.
unsafe fn update_each<T: Copy>(data: *mut T, count: u32, f: impl Fn(T) -> T) {
    for i in 0..count as usize {
        // SAFETY: the caller guarantees `count` valid elements.
        unsafe { *data.add(i) = f(*data.add(i)) };
    }
}

/// The explicit arguments of a dispatch, read from its kernarg segment.
struct Kernargs<'a> {
    base: *const u8,
    layout: Vec<&'a KernelArg>,
}

impl Kernargs<'_> {
    /// `Some` if the explicit arguments have exactly these sizes.
    fn check(&self, sizes: &[u32]) -> Option<()> {
        let actual = self.layout.iter().map(|arg| arg.size);
        actual.eq(sizes.iter().copied()).then_some(())
    }

    fn read<T: Copy>(&self, index: usize) -> T {
        let offset = self.layout[index].offset as usize;
        // SAFETY: `check` confirmed the argument exists with T's size; the kernarg segment is at
        // least `kernarg_segment_size` bytes, as the dispatch packet promises.
        unsafe { std::ptr::read_unaligned(self.base.add(offset).cast::<T>()) }
    }

    fn u32(&self, index: usize) -> u32 {
        self.read(index)
    }

    fn f32(&self, index: usize) -> f32 {
        self.read(index)
    }

    fn ptr<T>(&self, index: usize) -> *mut T {
        self.read::<u64>(index) as *mut T
    }
}

//! HIP's blit kernels, executed on host memory.
//!
//! HIP 5.2 (ROCclr) does `hipMemset`, device-to-device and rectangular copies with kernels of its
//! own: OpenCL C source built into `libamdhip64` that it compiles with comgr for the GPU at
//! start-up and loads as one code object of nine kernels (`__amd_rocclr_fillBufferAligned`, ...),
//! whose bodies are the `__amd_*` functions of the ROCm device libraries. A code object is
//! recognised as that one only when its metadata describes exactly those nine OpenCL C kernels,
//! each with its explicit arguments (name, offset, size, kind) and kernarg segment size; a name
//! alone is never enough. Each kernel then does here what its device-library body does, for
//! every work-item of the grid, with `get_global_id` including the hidden global offsets.
//!
//! `__amd_rocclr_gwsInit` is recognised but not computed (the simulated GPU has no global wave
//! sync unit), and `__amd_rocclr_streamOpsWait` is computed only when its condition already holds
//! at launch (the device model does not hold a queue until memory changes).

use super::elf::CodeObject;
use super::metadata::KernelMeta;

/// One kernel of HIP 5.2's blit code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blit {
    /// `__amd_rocclr_fillBufferAligned`: a pattern repeated over a 1D range.
    FillBufferAligned,
    /// `__amd_rocclr_fillBufferAligned2D`: a pattern over a pitched 2D range.
    FillBufferAligned2D,
    /// `__amd_rocclr_copyBuffer`: bytes, as 4-byte words with a byte tail.
    CopyBuffer,
    /// `__amd_rocclr_copyBufferAligned`: 4- or 16-byte elements.
    CopyBufferAligned,
    /// `__amd_rocclr_copyBufferRect`: a 3D box of bytes between pitched buffers.
    CopyBufferRect,
    /// `__amd_rocclr_copyBufferRectAligned`: the same with 4- or 16-byte elements.
    CopyBufferRectAligned,
    /// `__amd_rocclr_streamOpsWrite`: `hipStreamWriteValue32/64`.
    StreamOpsWrite,
    /// `__amd_rocclr_streamOpsWait`: `hipStreamWaitValue32/64` (computed if already met).
    StreamOpsWait,
    /// `__amd_rocclr_gwsInit` (not computed).
    GwsInit,
}

/// Kind of an explicit argument.
#[derive(Clone, Copy)]
enum Kind {
    Buffer,
    Value,
}

/// An explicit argument: name, kernarg offset, size, kind.
type Arg = (&'static str, u32, u32, Kind);

const fn arg(name: &'static str, offset: u32, size: u32, kind: Kind) -> Arg {
    (name, offset, size, kind)
}

use Kind::{Buffer, Value};

/// The fill kernels' four destination views and pattern (both kernels start with them).
const FILL_HEAD: [Arg; 6] = [
    arg("bufUChar", 0, 8, Buffer),
    arg("bufUShort", 8, 8, Buffer),
    arg("bufUInt", 16, 8, Buffer),
    arg("bufULong", 24, 8, Buffer),
    arg("pattern", 32, 8, Buffer),
    arg("patternSize", 40, 4, Value),
];

/// Each kernel of the code object: symbol, kernarg segment size, explicit arguments (a head some
/// kernels share, then the rest).
struct Signature {
    kernel: Blit,
    symbol: &'static str,
    kernarg_size: u32,
    head: &'static [Arg],
    args: &'static [Arg],
}

const RECT: [Arg; 5] = [
    arg("src", 0, 8, Buffer),
    arg("dst", 8, 8, Buffer),
    arg("srcRect", 32, 32, Value),
    arg("dstRect", 64, 32, Value),
    arg("size", 96, 32, Value),
];

const SIGNATURES: [Signature; 9] = [
    Signature {
        kernel: Blit::FillBufferAligned,
        symbol: "__amd_rocclr_fillBufferAligned.kd",
        kernarg_size: 120,
        head: &FILL_HEAD,
        args: &[arg("offset", 48, 8, Value), arg("size", 56, 8, Value)],
    },
    Signature {
        kernel: Blit::FillBufferAligned2D,
        symbol: "__amd_rocclr_fillBufferAligned2D.kd",
        kernarg_size: 136,
        head: &FILL_HEAD,
        args: &[
            arg("offset", 48, 8, Value),
            arg("width", 56, 8, Value),
            arg("height", 64, 8, Value),
            arg("pitch", 72, 8, Value),
        ],
    },
    Signature {
        kernel: Blit::CopyBuffer,
        symbol: "__amd_rocclr_copyBuffer.kd",
        kernarg_size: 104,
        head: &[arg("srcI", 0, 8, Buffer), arg("dstI", 8, 8, Buffer)],
        args: &[
            arg("srcOrigin", 16, 8, Value),
            arg("dstOrigin", 24, 8, Value),
            arg("size", 32, 8, Value),
            arg("remain", 40, 4, Value),
        ],
    },
    Signature {
        kernel: Blit::CopyBufferAligned,
        symbol: "__amd_rocclr_copyBufferAligned.kd",
        kernarg_size: 104,
        head: &[arg("src", 0, 8, Buffer), arg("dst", 8, 8, Buffer)],
        args: &[
            arg("srcOrigin", 16, 8, Value),
            arg("dstOrigin", 24, 8, Value),
            arg("size", 32, 8, Value),
            arg("alignment", 40, 4, Value),
        ],
    },
    Signature {
        kernel: Blit::CopyBufferRect,
        symbol: "__amd_rocclr_copyBufferRect.kd",
        kernarg_size: 184,
        head: &RECT,
        args: &[],
    },
    Signature {
        kernel: Blit::CopyBufferRectAligned,
        symbol: "__amd_rocclr_copyBufferRectAligned.kd",
        kernarg_size: 184,
        head: &RECT,
        args: &[],
    },
    Signature {
        kernel: Blit::StreamOpsWrite,
        symbol: "__amd_rocclr_streamOpsWrite.kd",
        kernarg_size: 32,
        head: &[
            arg("ptrInt", 0, 8, Buffer),
            arg("ptrUlong", 8, 8, Buffer),
            arg("value", 16, 8, Value),
        ],
        args: &[arg("sizeBytes", 24, 8, Value)],
    },
    Signature {
        kernel: Blit::StreamOpsWait,
        symbol: "__amd_rocclr_streamOpsWait.kd",
        kernarg_size: 40,
        head: &[
            arg("ptrInt", 0, 8, Buffer),
            arg("ptrUlong", 8, 8, Buffer),
            arg("value", 16, 8, Value),
        ],
        args: &[arg("flags", 24, 8, Value), arg("mask", 32, 8, Value)],
    },
    Signature {
        kernel: Blit::GwsInit,
        symbol: "__amd_rocclr_gwsInit.kd",
        kernarg_size: 4,
        head: &[arg("value", 0, 4, Value)],
        args: &[],
    },
];

impl Signature {
    fn matches(&self, meta: &KernelMeta) -> bool {
        let expected: Vec<Arg> = self.head.iter().chain(self.args).copied().collect();
        meta.symbol == self.symbol
            && meta.kernarg_segment_size == self.kernarg_size
            && meta.language.as_deref() == Some("OpenCL C")
            && meta.explicit_args().count() == expected.len()
            && meta
                .explicit_args()
                .zip(&expected)
                .all(|(actual, &(name, offset, size, kind))| {
                    let kind_ok = match kind {
                        Buffer => actual.value_kind == "global_buffer",
                        Value => actual.value_kind == "by_value",
                    };
                    actual.name.as_deref() == Some(name)
                        && actual.offset == offset
                        && actual.size == size
                        && kind_ok
                })
    }
}

/// Whether `code_object` is HIP 5.2's blit code object: exactly its nine kernels, each with its
/// argument layout.
pub fn is_blit_code_object(code_object: &CodeObject) -> bool {
    code_object.kernels.len() == SIGNATURES.len()
        && SIGNATURES.iter().all(|signature| {
            code_object
                .kernels
                .iter()
                .filter(|meta| signature.matches(meta))
                .count()
                == 1
        })
}

/// The blit kernel `meta` describes, in a code object [`is_blit_code_object`] accepted.
pub fn blit_of(meta: &KernelMeta) -> Option<Blit> {
    SIGNATURES
        .iter()
        .find(|s| s.matches(meta))
        .map(|s| s.kernel)
}

/// What a blit needs from its dispatch: the kernarg segment read at the metadata's offsets.
pub struct BlitLaunch<'a> {
    /// The kernarg segment.
    pub kernarg: *const u8,
    /// The kernel's metadata (argument offsets, hidden global offsets).
    pub meta: &'a KernelMeta,
    /// Grid size in work-items.
    pub grid: [u32; 3],
}

impl BlitLaunch<'_> {
    fn read<T: Copy>(&self, offset: u32) -> T {
        // SAFETY: the layout was checked against the metadata when the kernel was recognised, and
        // the kernarg segment holds `kernarg_segment_size` bytes, as the dispatch promises.
        unsafe { std::ptr::read_unaligned(self.kernarg.add(offset as usize).cast::<T>()) }
    }

    fn u64_at(&self, offset: u32) -> u64 {
        self.read(offset)
    }

    fn u32_at(&self, offset: u32) -> u32 {
        self.read(offset)
    }

    fn ulong4_at(&self, offset: u32) -> [u64; 4] {
        [0, 8, 16, 24].map(|o| self.u64_at(offset + o))
    }

    /// `hidden_global_offset_{x,y,z}` when the kernel has them, else 0.
    fn global_offset(&self) -> [u64; 3] {
        let kinds = [
            "hidden_global_offset_x",
            "hidden_global_offset_y",
            "hidden_global_offset_z",
        ];
        kinds.map(|kind| {
            self.meta
                .args
                .iter()
                .find(|a| a.value_kind == kind && a.size == 8)
                .map_or(0, |a| self.u64_at(a.offset))
        })
    }

    /// Every `get_global_id` triple of the grid, x fastest.
    fn ids(&self) -> impl Iterator<Item = [u64; 3]> + '_ {
        let [ox, oy, oz] = self.global_offset();
        let [gx, gy, gz] = self.grid.map(|g| u64::from(g.max(1)));
        (0..gz).flat_map(move |z| {
            (0..gy).flat_map(move |y| (0..gx).map(move |x| [x + ox, y + oy, z + oz]))
        })
    }
}

/// Copies `len` bytes from `src` to `dst` (addresses of the application's memory).
///
/// # Safety
/// Both ranges must be valid for `len` bytes, as they are on a GPU for a correct dispatch.
unsafe fn copy(src: u64, dst: u64, len: u64) {
    // SAFETY: guaranteed by the caller; blits may copy within one buffer, so ranges may overlap.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len as usize) }
}

/// Runs `blit` on host memory; false when the simulator does not compute it or a pointer the
/// kernel would dereference is null (a page fault on a GPU).
///
/// The dispatch's memory is the application's, as on a GPU: the buffers must be valid for the
/// elements the grid touches.
pub fn run_blit(blit: Blit, launch: &BlitLaunch) -> bool {
    match blit {
        Blit::FillBufferAligned | Blit::FillBufferAligned2D => fill(blit, launch),
        Blit::CopyBuffer => {
            let (src, dst) = (launch.u64_at(0), launch.u64_at(8));
            let (src_origin, dst_origin) = (launch.u64_at(16), launch.u64_at(24));
            let (size, remain) = (launch.u64_at(32), u64::from(launch.u32_at(40)));
            if src == 0 || dst == 0 {
                return false;
            }
            let (src, dst) = (src.wrapping_add(src_origin), dst.wrapping_add(dst_origin));
            for [id, _, _] in launch.ids() {
                if id >= size {
                    continue;
                }
                // Byte copies when asked (remain 8); otherwise words, and the last work-item
                // copies the `remain` bytes of the tail.
                let (at, len) = match remain {
                    8 => (id, 1),
                    _ if id + 1 < size => (4 * id, 4),
                    _ => (4 * id, remain),
                };
                // SAFETY: see the function's doc.
                unsafe { copy(src + at, dst + at, len) };
            }
            true
        }
        Blit::CopyBufferAligned => {
            let (src, dst) = (launch.u64_at(0), launch.u64_at(8));
            let (src_origin, dst_origin) = (launch.u64_at(16), launch.u64_at(24));
            let size = launch.u64_at(32);
            let element = if launch.u32_at(40) == 16 { 16 } else { 4 };
            if src == 0 || dst == 0 {
                return false;
            }
            for [id, _, _] in launch.ids().filter(|[id, _, _]| *id < size) {
                let (from, to) = ((id + src_origin) * element, (id + dst_origin) * element);
                // SAFETY: see the function's doc.
                unsafe { copy(src + from, dst + to, element) };
            }
            true
        }
        Blit::CopyBufferRect | Blit::CopyBufferRectAligned => {
            let (src, dst) = (launch.u64_at(0), launch.u64_at(8));
            let (src_rect, dst_rect, size) = (
                launch.ulong4_at(32),
                launch.ulong4_at(64),
                launch.ulong4_at(96),
            );
            if src == 0 || dst == 0 {
                return false;
            }
            // rect = [row pitch, slice pitch, origin, _], in elements; size[3] the element size.
            let element = match blit {
                Blit::CopyBufferRect => 1,
                _ if size[3] == 16 => 16,
                _ => 4,
            };
            let index =
                |rect: [u64; 4], [x, y, z]: [u64; 3]| x + rect[2] + y * rect[0] + z * rect[1];
            for id in launch.ids() {
                if id[0] >= size[0] || id[1] >= size[1] || id[2] >= size[2] {
                    continue;
                }
                let (from, to) = (index(src_rect, id) * element, index(dst_rect, id) * element);
                // SAFETY: see the function's doc.
                unsafe { copy(src + from, dst + to, element) };
            }
            true
        }
        Blit::StreamOpsWrite => {
            let (ptr_int, ptr_ulong, value) =
                (launch.u64_at(0), launch.u64_at(8), launch.u64_at(16));
            // Every work-item stores the same value; once is the same.
            if ptr_int != 0 {
                // SAFETY: see the function's doc; the word is 4-byte aligned as on a GPU.
                unsafe { std::ptr::write_volatile(ptr_int as *mut u32, value as u32) };
            } else if ptr_ulong != 0 {
                // SAFETY: as above, 8-byte aligned.
                unsafe { std::ptr::write_volatile(ptr_ulong as *mut u64, value) };
            } else {
                return false;
            }
            true
        }
        Blit::StreamOpsWait => wait_already_met(launch),
        Blit::GwsInit => false,
    }
}

/// `__amd_rocclr_streamOpsWait` spins until the word at `ptrInt` (32 bits) or `ptrUlong` (64)
/// meets its condition. Met at launch, the kernel does nothing more and is computed; otherwise
/// it is not, since the simulated device does not hold a queue on memory.
fn wait_already_met(launch: &BlitLaunch) -> bool {
    let (ptr_int, ptr_ulong) = (launch.u64_at(0), launch.u64_at(8));
    let (value, flags, mask) = (launch.u64_at(16), launch.u64_at(24), launch.u64_at(32));
    let (current, value, mask) = if ptr_int != 0 {
        // SAFETY: see `run_blit`'s doc; the word is 4-byte aligned as on a GPU.
        let word = unsafe { std::ptr::read_volatile(ptr_int as *const u32) };
        (u64::from(word), value & 0xffff_ffff, mask & 0xffff_ffff)
    } else if ptr_ulong != 0 {
        // SAFETY: as above, 8-byte aligned.
        (
            unsafe { std::ptr::read_volatile(ptr_ulong as *const u64) },
            value,
            mask,
        )
    } else {
        return false;
    };
    match flags {
        0 => current & mask >= value,
        1 => current & mask == value,
        2 => current & mask & value != 0,
        3 => (current | value) & mask != mask,
        _ => true,
    }
}

/// The two fill kernels: each work-item writes `patternSize` elements of the pattern, as
/// elements of the first non-null destination view (8, 4, 2 bytes, else bytes).
fn fill(blit: Blit, launch: &BlitLaunch) -> bool {
    let views = [
        (launch.u64_at(24), 8),
        (launch.u64_at(16), 4),
        (launch.u64_at(8), 2),
        (launch.u64_at(0), 1),
    ];
    let Some((base, element)) = views.into_iter().find(|(ptr, _)| *ptr != 0) else {
        return false;
    };
    let pattern = launch.u64_at(32);
    let count = u64::from(launch.u32_at(40));
    let offset = launch.u64_at(48);
    if pattern == 0 && count > 0 {
        return false;
    }
    let len = count * element;
    // The 1D fill's size, or the 2D fill's width, height and pitch, read once for the grid.
    let two_d = blit == Blit::FillBufferAligned2D;
    let width = launch.u64_at(56);
    let (height, pitch) = if two_d {
        (launch.u64_at(64), launch.u64_at(72))
    } else {
        (1, 0)
    };
    for [x, y, _] in launch.ids() {
        // The first element this work-item writes: 1D fills place whole patterns one after
        // another; the 2D fill places work-item (x, y) at element y * pitch + x.
        let first = if two_d {
            if x >= width || y >= height {
                continue;
            }
            y * pitch + x + offset
        } else {
            if x >= width {
                continue;
            }
            x * count + offset
        };
        // SAFETY: see `run_blit`'s doc.
        unsafe { copy(pattern, base + first * element, len) };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The metadata of one blit kernel as HIP 5.2 builds it: its explicit arguments, then the
    /// hidden global offsets (set to `offset`'s x) and hidden pointers up to its kernarg size.
    fn meta(signature: &Signature) -> KernelMeta {
        let mut args: Vec<serde_json::Value> = signature
            .head
            .iter()
            .chain(signature.args)
            .map(|&(name, offset, size, kind)| {
                let kind = match kind {
                    Buffer => "global_buffer",
                    Value => "by_value",
                };
                serde_json::json!({".name": name, ".offset": offset, ".size": size, ".value_kind": kind})
            })
            .collect();
        let end = signature.head.iter().chain(signature.args).last();
        let mut offset = end.map_or(0, |&(_, o, s, _)| (o + s).next_multiple_of(8));
        for kind in [
            "hidden_global_offset_x",
            "hidden_global_offset_y",
            "hidden_global_offset_z",
        ]
        .into_iter()
        .chain(std::iter::repeat("hidden_none"))
        {
            if offset + 8 > signature.kernarg_size {
                break;
            }
            args.push(serde_json::json!({".offset": offset, ".size": 8, ".value_kind": kind}));
            offset += 8;
        }
        serde_json::from_value(serde_json::json!({
            ".name": signature.symbol.trim_end_matches(".kd"),
            ".symbol": signature.symbol,
            ".language": "OpenCL C",
            ".kernarg_segment_size": signature.kernarg_size,
            ".args": args,
        }))
        .unwrap()
    }

    fn code_object(kernels: Vec<KernelMeta>) -> CodeObject {
        CodeObject {
            bytes: Vec::new(),
            processor: "gfx90a".into(),
            target_id: "amdgcn-amd-amdhsa--gfx90a".into(),
            e_flags: 0x3f,
            version: 4,
            kernels,
            symbols: Vec::new(),
            segments: Vec::new(),
        }
    }

    fn all() -> Vec<KernelMeta> {
        SIGNATURES.iter().map(meta).collect()
    }

    #[test]
    fn the_blit_code_object_is_recognised_by_every_kernel_layout() {
        assert!(is_blit_code_object(&code_object(all())));
        let kinds: Vec<Option<Blit>> = all().iter().map(blit_of).collect();
        assert_eq!(kinds, SIGNATURES.map(|s| Some(s.kernel)));

        let mut missing = all();
        missing.pop();
        assert!(!is_blit_code_object(&code_object(missing)));
        let mut extra = all();
        extra.push(meta(&SIGNATURES[0]));
        assert!(!is_blit_code_object(&code_object(extra)));
        let mut renamed_arg = all();
        renamed_arg[2].args[5].name = Some("tail".into());
        assert!(!is_blit_code_object(&code_object(renamed_arg.clone())));
        assert_eq!(blit_of(&renamed_arg[2]), None);
        let mut moved_arg = all();
        moved_arg[0].args[7].offset = 60;
        assert!(!is_blit_code_object(&code_object(moved_arg)));
        let mut other_size = all();
        other_size[3].kernarg_segment_size = 112;
        assert!(!is_blit_code_object(&code_object(other_size)));
        let mut not_opencl = all();
        not_opencl[1].language = None;
        assert!(!is_blit_code_object(&code_object(not_opencl)));
    }

    /// Runs the blit over `grid` with the kernarg segment `fields` (offset, little-endian bytes)
    /// and the global offset x at 0.
    fn run(kernel: Blit, fields: &[(u32, Vec<u8>)], grid: [u32; 3], global_x: u64) -> bool {
        let signature = SIGNATURES.iter().find(|s| s.kernel == kernel).unwrap();
        let meta = meta(signature);
        let mut kernarg = vec![0u8; signature.kernarg_size as usize];
        for (offset, bytes) in fields {
            kernarg[*offset as usize..][..bytes.len()].copy_from_slice(bytes);
        }
        if let Some(x) = meta
            .args
            .iter()
            .find(|a| a.value_kind == "hidden_global_offset_x")
        {
            kernarg[x.offset as usize..][..8].copy_from_slice(&global_x.to_le_bytes());
        }
        run_blit(
            kernel,
            &BlitLaunch {
                kernarg: kernarg.as_ptr(),
                meta: &meta,
                grid,
            },
        )
    }

    fn ptr<T>(v: &mut [T]) -> Vec<u8> {
        (v.as_mut_ptr() as u64).to_le_bytes().to_vec()
    }

    fn word(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    fn half(v: u32) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    #[test]
    fn fills_write_whole_patterns_through_the_widest_view() {
        // Two-word pattern at element offset 1, three copies, through the uint view; the grid
        // has one work-item too many and the global offset moves every id by one.
        let mut out = [0u32; 9];
        let mut pattern = [7u32, 9];
        let fields = [
            (16, ptr(&mut out)),
            (32, ptr(&mut pattern)),
            (40, half(2)),
            (48, word(1)),
            (56, word(4)),
        ];
        assert!(run(Blit::FillBufferAligned, &fields, [4, 1, 1], 1));
        assert_eq!(out, [0, 0, 0, 7, 9, 7, 9, 7, 9]);

        // The byte view when no wider one is given.
        let mut bytes = [0u8; 5];
        let mut one = [0x5au8];
        let fields = [
            (0, ptr(&mut bytes)),
            (32, ptr(&mut one)),
            (40, half(1)),
            (56, word(4)),
        ];
        assert!(run(Blit::FillBufferAligned, &fields, [64, 1, 1], 0));
        assert_eq!(bytes, [0x5a, 0x5a, 0x5a, 0x5a, 0]);

        // 2D: width 2, height 2, pitch 3 (elements), ushort view.
        let mut plane = [0u16; 6];
        let mut p16 = [0xabcdu16];
        let fields = [
            (8, ptr(&mut plane)),
            (32, ptr(&mut p16)),
            (40, half(1)),
            (56, word(2)),
            (64, word(2)),
            (72, word(3)),
        ];
        assert!(run(Blit::FillBufferAligned2D, &fields, [2, 2, 1], 0));
        assert_eq!(plane, [0xabcd, 0xabcd, 0, 0xabcd, 0xabcd, 0]);

        let no_view = [(40, half(1)), (56, word(1))];
        assert!(!run(Blit::FillBufferAligned, &no_view, [1, 1, 1], 0));
    }

    #[test]
    fn copies_move_words_bytes_and_boxes() {
        // copyBuffer: 10 bytes from origin 1 to origin 2 as two words and a 2-byte tail.
        let mut src: Vec<u8> = (0..16).collect();
        let mut dst = [0u8; 16];
        let fields = [
            (0, ptr(&mut src)),
            (8, ptr(&mut dst)),
            (16, word(1)),
            (24, word(2)),
            (32, word(3)),
            (40, half(2)),
        ];
        assert!(run(Blit::CopyBuffer, &fields, [3, 1, 1], 0));
        assert_eq!(dst, [0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0, 0]);

        // remain 8: one byte per work-item.
        let mut dst = [0u8; 4];
        let fields = [
            (0, ptr(&mut src)),
            (8, ptr(&mut dst)),
            (32, word(3)),
            (40, half(8)),
        ];
        assert!(run(Blit::CopyBuffer, &fields, [4, 1, 1], 0));
        assert_eq!(dst, [0, 1, 2, 0]);

        // copyBufferAligned with 16-byte elements, origins in elements.
        let mut words: Vec<u32> = (0..12).collect();
        let mut out = [0u32; 12];
        let fields = [
            (0, ptr(&mut words)),
            (8, ptr(&mut out)),
            (16, word(1)),
            (24, word(0)),
            (32, word(2)),
            (40, half(16)),
        ];
        assert!(run(Blit::CopyBufferAligned, &fields, [2, 1, 1], 0));
        assert_eq!(out, [4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0]);

        // copyBufferRect: a 2x2 box of bytes from a 4-wide source at (1, 1) to a 3-wide
        // destination at origin 0.
        let mut grid: Vec<u8> = (0..16).collect();
        let mut boxed = [0u8; 6];
        let rect = |pitch: u64, origin: u64| {
            [pitch, 0, origin, 0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let size: Vec<u8> = [2u64, 2, 1, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let fields = [
            (0, ptr(&mut grid)),
            (8, ptr(&mut boxed)),
            (32, rect(4, 5)),
            (64, rect(3, 0)),
            (96, size),
        ];
        assert!(run(Blit::CopyBufferRect, &fields, [2, 2, 1], 0));
        assert_eq!(boxed, [5, 6, 0, 9, 10, 0]);
    }

    #[test]
    fn stream_writes_are_computed_waits_when_met_and_gws_never() {
        let mut value = [0u32];
        let fields = [(0, ptr(&mut value)), (16, word(0x1_0000_0042))];
        assert!(run(Blit::StreamOpsWrite, &fields, [1, 1, 1], 0));
        assert_eq!(value, [0x42]);
        let mut wide = [0u64];
        let fields = [(8, ptr(&mut wide)), (16, word(0x1_0000_0042))];
        assert!(run(Blit::StreamOpsWrite, &fields, [1, 1, 1], 0));
        assert_eq!(wide, [0x1_0000_0042]);
        // Waits: >=, ==, any bit of value, not every bit of mask; met or not at launch.
        let wait = |value: u64, flags: u64, mask: u64, flag: &mut [u32; 1]| {
            let fields = [
                (0, ptr(flag)),
                (16, value.to_le_bytes().to_vec()),
                (24, flags.to_le_bytes().to_vec()),
                (32, mask.to_le_bytes().to_vec()),
            ];
            run(Blit::StreamOpsWait, &fields, [1, 1, 1], 0)
        };
        let mut flag = [0x42u32];
        assert!(wait(0x42, 0, u64::MAX, &mut flag));
        assert!(!wait(0x43, 0, u64::MAX, &mut flag));
        assert!(wait(0x40, 1, 0xf0, &mut flag), "0x42 & 0xf0 == 0x40");
        assert!(!wait(0x42, 1, 0xf0, &mut flag));
        assert!(wait(0x2, 2, u64::MAX, &mut flag));
        assert!(!wait(0x4, 2, u64::MAX, &mut flag));
        assert!(wait(0, 3, 0x43, &mut flag), "bit 0 of the mask is clear");
        assert!(!wait(0x1, 3, 0x43, &mut flag));
        let mut wide = [0x1_0000_0000u64];
        let fields = [
            (8, ptr(&mut wide)),
            (16, word(0x1_0000_0000)),
            (32, word(u64::MAX)),
        ];
        assert!(run(Blit::StreamOpsWait, &fields, [1, 1, 1], 0), "64-bit >=");
        assert!(!run(Blit::GwsInit, &[], [1, 1, 1], 0));
    }
}

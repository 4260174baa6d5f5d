//! Register usage and wavefront size from a 64-byte AMDGPU kernel descriptor, as rocprof reports
//! them (granule-rounded allocations, not the compiler's exact counts).

/// Size of a kernel descriptor (code object v3 and newer).
pub const DESCRIPTOR_SIZE: usize = 64;

/// What a kernel allocates per work-item or wave, decoded from its descriptor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// Architected VGPRs per work-item.
    pub arch_vgpr: u32,
    /// Accumulation VGPRs (AGPRs) per work-item.
    pub accum_vgpr: u32,
    /// SGPRs per wave.
    pub sgpr: u32,
    /// Wavefront size: 32 or 64.
    pub wave_size: u32,
    /// Bytes of the kernel's argument segment (`kernarg_size`), hidden arguments included.
    pub kernarg_size: u32,
}

/// How an architecture allocates vector registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VgprModel {
    /// gfx6–gfx906 and gfx10+: separate VGPR file, no AGPRs.
    Plain,
    /// gfx908: AGPRs as many as VGPRs.
    Mirrored,
    /// gfx90a, gfx94x, gfx950: one file, AGPRs start at ACCUM_OFFSET.
    Unified,
}

/// The gfx major version and VGPR model of a target name such as `gfx942` or
/// `gfx90a:sramecc+:xnack-`; `None` if the name is not a gfx target.
fn arch_model(arch: &str) -> Option<(u32, VgprModel)> {
    let digits = arch.strip_prefix("gfx")?.split(':').next()?;
    if digits.len() < 3 {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let major: u32 = major.parse().ok()?;
    let model = match (major, rest) {
        (9, "08") => VgprModel::Mirrored,
        (9, "0a") => VgprModel::Unified,
        (9, r) if r.starts_with('4') || r.starts_with('5') => VgprModel::Unified,
        _ => VgprModel::Plain,
    };
    Some((major, model))
}

fn field(word: u32, low: u32, bits: u32) -> u32 {
    (word >> low) & ((1 << bits) - 1)
}

fn u32_at(descriptor: &[u8; DESCRIPTOR_SIZE], offset: usize) -> u32 {
    u32::from_le_bytes([
        descriptor[offset],
        descriptor[offset + 1],
        descriptor[offset + 2],
        descriptor[offset + 3],
    ])
}

/// Decodes the registers and wave size of `descriptor` for the GPU `arch` with rocprof's rules:
/// wave size from `kernel_code_properties` bit 10; architected VGPRs from ACCUM_OFFSET on
/// unified-register GPUs, else from the VGPR granule (8 for wave32, 4 for wave64); AGPRs as the
/// rest of the unified allocation (or equal to the VGPRs on gfx908); SGPRs from the granule
/// before gfx10 and a fixed 128 after. `None` if `arch` is not a gfx target name.
pub fn kernel_resources(descriptor: &[u8; DESCRIPTOR_SIZE], arch: &str) -> Option<KernelResources> {
    let (major, model) = arch_model(arch)?;
    let rsrc3 = u32_at(descriptor, 44);
    let rsrc1 = u32_at(descriptor, 48);
    let properties = u16::from_le_bytes([descriptor[56], descriptor[57]]);
    let wave32 = properties & (1 << 10) != 0;
    let vgpr_granules = field(rsrc1, 0, 6) + 1;
    let sgpr_granules = field(rsrc1, 6, 4);
    let arch_vgpr = match model {
        VgprModel::Unified => (field(rsrc3, 0, 6) + 1) * 4,
        _ => vgpr_granules * if wave32 { 8 } else { 4 },
    };
    let accum_vgpr = match model {
        VgprModel::Plain => 0,
        VgprModel::Mirrored => arch_vgpr,
        VgprModel::Unified => (vgpr_granules * 8).saturating_sub(arch_vgpr),
    };
    let sgpr = if major >= 10 {
        128
    } else {
        (sgpr_granules / 2 + 1) * 16
    };
    Some(KernelResources {
        arch_vgpr,
        accum_vgpr,
        sgpr,
        wave_size: if wave32 { 32 } else { 64 },
        kernarg_size: u32_at(descriptor, 8),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(rsrc3: u32, rsrc1: u32, properties: u16) -> [u8; DESCRIPTOR_SIZE] {
        let mut d = [0u8; DESCRIPTOR_SIZE];
        d[44..48].copy_from_slice(&rsrc3.to_le_bytes());
        d[48..52].copy_from_slice(&rsrc1.to_le_bytes());
        d[56..58].copy_from_slice(&properties.to_le_bytes());
        d
    }

    fn hex(text: &str) -> [u8; DESCRIPTOR_SIZE] {
        let mut d = [0u8; DESCRIPTOR_SIZE];
        for (i, byte) in d.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap();
        }
        d
    }

    #[test]
    fn unified_register_gpus_split_at_accum_offset() {
        // ACCUM_OFFSET 3 -> 16 arch VGPRs; VGPR granule 4 -> 5 * 8 = 40 allocated, 24 AGPRs.
        let d = descriptor(3, 4 | (3 << 6), 0);
        let expected = KernelResources {
            arch_vgpr: 16,
            accum_vgpr: 24,
            sgpr: 32,
            wave_size: 64,
            kernarg_size: 0,
        };
        assert_eq!(kernel_resources(&d, "gfx942"), Some(expected));
        assert_eq!(
            kernel_resources(&d, "gfx90a:sramecc+:xnack-"),
            Some(expected)
        );
        assert_eq!(kernel_resources(&d, "gfx950"), Some(expected));
    }

    #[test]
    fn other_gpus_use_the_vgpr_granule() {
        let d = descriptor(3, 4 | (3 << 6), 0);
        let gfx908 = kernel_resources(&d, "gfx908").unwrap();
        assert_eq!(
            (gfx908.arch_vgpr, gfx908.accum_vgpr, gfx908.sgpr),
            (20, 20, 32)
        );
        let gfx906 = kernel_resources(&d, "gfx906").unwrap();
        assert_eq!((gfx906.arch_vgpr, gfx906.accum_vgpr), (20, 0));
        let wave32 = descriptor(0, 4 | (3 << 6), 1 << 10);
        let gfx1100 = kernel_resources(&wave32, "gfx1100").unwrap();
        assert_eq!(
            gfx1100,
            KernelResources {
                arch_vgpr: 40,
                accum_vgpr: 0,
                sgpr: 128,
                wave_size: 32,
                kernarg_size: 0,
            }
        );
        assert_eq!(kernel_resources(&d, "gfx1201").unwrap().arch_vgpr, 20);
        assert_eq!(kernel_resources(&d, "cpu"), None);
        assert_eq!(kernel_resources(&d, "gfx9"), None);
    }

    #[test]
    fn fixture_descriptors_decode_to_their_metadata_rounded_to_granules() {
        // The vadd kernel of the gfx942 fixture, as llvm-readelf dumps it (8 VGPRs, 14 SGPRs).
        let vadd = hex(concat!(
            "00000000000000001c00000000000000801200000000000000000000000000",
            "00000000000000000000000000010000004000af00880000000a00000000000000"
        ));
        assert_eq!(
            kernel_resources(&vadd, "gfx942"),
            Some(KernelResources {
                arch_vgpr: 8,
                accum_vgpr: 0,
                sgpr: 16,
                wave_size: 64,
                kernarg_size: 28,
            })
        );
    }

    #[test]
    fn every_fixture_kernel_decodes_consistently_with_its_metadata() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sim/fixtures");
        let mut checked = 0;
        for arch in ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"] {
            let path = format!("{dir}/kernels-{arch}.expected.json");
            let text = std::fs::read_to_string(&path).unwrap();
            let fixture: serde_json::Value = serde_json::from_str(&text).unwrap();
            for kernel in fixture["kernels"].as_array().unwrap() {
                let name = kernel["name"].as_str().unwrap();
                let r =
                    kernel_resources(&hex(kernel["descriptor"].as_str().unwrap()), arch).unwrap();
                let wave = kernel["wavefront_size"].as_u64().unwrap() as u32;
                assert_eq!(r.wave_size, wave, "{arch} {name}");
                let vgprs = kernel["vgpr_count"].as_u64().unwrap() as u32;
                let granule = if wave == 32 { 8 } else { 4 };
                assert_eq!(
                    r.arch_vgpr,
                    vgprs.max(1).div_ceil(granule) * granule,
                    "{arch} {name}"
                );
                // No fixture uses AGPRs; on unified-register GPUs the allocation is rounded to
                // 8 and rocprof reports the rounding as AGPRs.
                let unified = arch.starts_with("gfx9");
                let padding = if unified {
                    r.arch_vgpr.div_ceil(8) * 8 - r.arch_vgpr
                } else {
                    0
                };
                assert_eq!(r.accum_vgpr, padding, "{arch} {name}");
                let sgprs = kernel["sgpr_count"].as_u64().unwrap() as u32;
                if arch.starts_with("gfx9") {
                    assert!(
                        r.sgpr >= sgprs && r.sgpr < sgprs + 32,
                        "{arch} {name} {r:?}"
                    );
                } else {
                    assert_eq!(r.sgpr, 128);
                }
                checked += 1;
            }
        }
        assert!(checked >= 35, "{checked} fixture kernels");
    }
}

//! The code-object parser, image loader and host kernels against the committed fixtures and the
//! metadata llvm-readelf printed for them (`sim/fixtures/*.expected.json`).

use std::path::PathBuf;
use std::sync::Arc;

use hsa_runtime64::code_object::{
    image_containing, isa_compatible, kernel_by_object, run_on_host, CodeObject, CodeObjectError,
    HostKernel, KernelLaunch, LoadedImage, LoadedKernel,
};
use serde_json::Value;

const TARGETS: [&str; 5] = ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"];

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

fn fixture(target: &str) -> (CodeObject, Value) {
    let dir = fixture_dir();
    let bytes = std::fs::read(dir.join(format!("kernels-{target}.co"))).unwrap();
    let expected = std::fs::read_to_string(dir.join(format!("kernels-{target}.expected.json")));
    let expected: Value = serde_json::from_str(&expected.unwrap()).unwrap();
    (CodeObject::parse(bytes).unwrap(), expected)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn parsed_metadata_equals_llvm_readelf() {
    for target in TARGETS {
        let (co, expected) = fixture(target);
        assert_eq!(co.target_id, expected["target"], "{target}");
        assert_eq!(co.processor, target);
        assert_eq!(u64::from(co.e_flags), expected["e_flags"], "{target}");
        assert_eq!(co.version, 5, "{target}");
        let kernels = expected["kernels"].as_array().unwrap();
        assert_eq!(co.kernels.len(), kernels.len(), "{target}");
        assert_eq!(kernels.len(), 12);
        for (meta, want) in co.kernels.iter().zip(kernels) {
            let what = format!("{target} {}", meta.name);
            assert_eq!(meta.name, want["name"], "{what}");
            assert_eq!(meta.symbol, want["symbol"], "{what}");
            assert_eq!(u64::from(meta.vgpr_count), want["vgpr_count"], "{what}");
            assert_eq!(u64::from(meta.sgpr_count), want["sgpr_count"], "{what}");
            assert_eq!(
                meta.agpr_count.map(u64::from),
                want["agpr_count"].as_u64(),
                "{what}"
            );
            let sizes = [
                (meta.group_segment_fixed_size, "group_segment_fixed_size"),
                (
                    meta.private_segment_fixed_size,
                    "private_segment_fixed_size",
                ),
                (meta.wavefront_size, "wavefront_size"),
                (meta.kernarg_segment_size, "kernarg_segment_size"),
                (meta.kernarg_segment_align, "kernarg_segment_align"),
            ];
            for (value, key) in sizes {
                assert_eq!(u64::from(value), want[key], "{what} {key}");
            }
            assert_eq!(
                meta.uses_dynamic_stack, want["uses_dynamic_stack"],
                "{what}"
            );
            let args: Vec<(u64, u64, &str)> = want["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    let kind = a["value_kind"].as_str().unwrap();
                    (
                        a["offset"].as_u64().unwrap(),
                        a["size"].as_u64().unwrap(),
                        kind,
                    )
                })
                .collect();
            let parsed: Vec<(u64, u64, &str)> = meta
                .args
                .iter()
                .map(|a| (a.offset.into(), a.size.into(), a.value_kind.as_str()))
                .collect();
            assert_eq!(parsed, args, "{what}");
            let symbol = co.symbol(&meta.symbol).unwrap();
            assert_eq!(symbol.address, want["descriptor_address"], "{what}");
            assert_eq!(
                hex(co.descriptor_bytes(meta).unwrap()),
                want["descriptor"],
                "{what}"
            );
        }
    }
}

#[test]
fn fixture_resources_are_those_of_the_sources() {
    let (co, _) = fixture("gfx942");
    let kernel = |name: &str| co.kernels.iter().find(|k| k.name == name).unwrap();
    assert_eq!(kernel("lds_reverse").group_segment_fixed_size, 1024);
    assert_eq!(kernel("lds_reverse").reqd_workgroup_size, Some([256, 1, 1]));
    assert_eq!(kernel("scratchy").private_segment_fixed_size, 260);
    assert_eq!(kernel("empty").kernarg_segment_size, 0);
    assert_eq!(kernel("vadd").kernarg_segment_size, 28);
    let copy = kernel("copy");
    let explicit: Vec<u32> = copy.explicit_args().map(|a| a.offset).collect();
    assert_eq!(explicit, [0, 8, 16]);
    let hidden: Vec<&str> = copy
        .args
        .iter()
        .filter(|a| a.is_hidden())
        .map(|a| a.value_kind.as_str())
        .collect();
    assert_eq!(
        &hidden[..4],
        [
            "hidden_block_count_x",
            "hidden_block_count_y",
            "hidden_block_count_z",
            "hidden_group_size_x"
        ]
    );
    assert_eq!(copy.kernarg_segment_size, 280);
    let (rdna, _) = fixture("gfx1100");
    assert!(rdna
        .kernels
        .iter()
        .all(|k| k.wavefront_size == 32 && k.agpr_count.is_none()));
}

#[test]
fn loaded_kernel_objects_point_at_the_descriptors() {
    for target in TARGETS {
        let (co, expected) = fixture(target);
        let image = LoadedImage::load(Arc::new(co)).unwrap();
        assert_eq!(image.base() % 4096, 0);
        assert_eq!(image.kernels().len(), 12);
        for (kernel, want) in image
            .kernels()
            .iter()
            .zip(expected["kernels"].as_array().unwrap())
        {
            assert_eq!(kernel.name, want["name"]);
            assert_eq!(kernel.symbol, want["symbol"]);
            assert_eq!(kernel.processor, target);
            let offset = want["descriptor_address"].as_u64().unwrap();
            assert_eq!(kernel.kernel_object, image.base() + offset);
            assert_eq!(kernel.kernel_object % 64, 0);
            // SAFETY: the kernel object is the address of 64 bytes inside the live image.
            let descriptor =
                unsafe { std::slice::from_raw_parts(kernel.kernel_object as *const u8, 64) };
            assert_eq!(
                hex(descriptor),
                want["descriptor"],
                "{target} {}",
                kernel.name
            );
            assert_eq!(
                kernel_by_object(kernel.kernel_object).as_deref(),
                Some(&**kernel)
            );
            assert_eq!(
                image_containing(kernel.kernel_object),
                Some((image.base(), image.size()))
            );
        }
    }
}

#[test]
fn dropping_an_image_unregisters_its_kernels() {
    let (co, _) = fixture("gfx90a");
    let image = LoadedImage::load(Arc::new(co)).unwrap();
    let object = image.kernels()[0].kernel_object;
    let base = image.base();
    assert!(kernel_by_object(object).is_some());
    drop(image);
    assert_eq!(kernel_by_object(object), None);
    assert_eq!(image_containing(base), None);
    assert_eq!(kernel_by_object(0), None);
}

#[test]
fn malformed_files_are_rejected() {
    assert!(matches!(
        CodeObject::parse(b"not an elf".to_vec()),
        Err(CodeObjectError::Elf(_))
    ));
    let host_elf = std::fs::read("/proc/self/exe").unwrap();
    assert!(matches!(
        CodeObject::parse(host_elf),
        Err(CodeObjectError::NotAmdgpu(62))
    ));
    let mut truncated = std::fs::read(fixture_dir().join("kernels-gfx942.co")).unwrap();
    truncated.truncate(600);
    assert!(CodeObject::parse(truncated).is_err());
}

#[test]
fn isa_compatibility_follows_target_features() {
    let agent = "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-";
    assert!(isa_compatible("amdgcn-amd-amdhsa--gfx942", agent));
    assert!(isa_compatible("amdgcn-amd-amdhsa--gfx942:xnack-", agent));
    assert!(!isa_compatible("amdgcn-amd-amdhsa--gfx942:xnack+", agent));
    assert!(!isa_compatible("amdgcn-amd-amdhsa--gfx90a", agent));
    assert!(isa_compatible(
        "amdgcn-amd-amdhsa--gfx1100",
        "amdgcn-amd-amdhsa--gfx1100"
    ));
    assert!(!isa_compatible(
        "amdgcn-amd-amdhsa--gfx1100",
        "amdgcn-amd-amdhsa--gfx1101"
    ));
}

/// Loads the gfx942 fixture and runs `name` over `items` work-items, with its explicit arguments
/// placed at the offsets of the metadata.
fn run(name: &str, args: &[&[u8]], items: u32) -> bool {
    let (co, _) = fixture("gfx942");
    let image = LoadedImage::load(Arc::new(co)).unwrap();
    let kernel: &LoadedKernel = image.kernels().iter().find(|k| k.name == name).unwrap();
    let mut kernarg = vec![0u8; kernel.meta.kernarg_segment_size as usize];
    for (arg, value) in kernel.meta.explicit_args().zip(args) {
        assert_eq!(arg.size as usize, value.len());
        kernarg[arg.offset as usize..][..value.len()].copy_from_slice(value);
    }
    run_on_host(&KernelLaunch {
        kernarg: kernarg.as_ptr(),
        grid: [items, 1, 1],
        workgroup: [256, 1, 1],
        group_segment_size: kernel.meta.group_segment_fixed_size,
        private_segment_size: kernel.meta.private_segment_fixed_size,
        kernel,
    })
}

fn addr<T>(v: &mut [T]) -> [u8; 8] {
    (v.as_mut_ptr() as u64).to_le_bytes()
}

#[test]
fn host_vadd_saxpy_fill_increment() {
    let mut a: Vec<f32> = (0..300).map(|i| i as f32).collect();
    let mut b: Vec<f32> = (0..300).map(|i| 0.5 * i as f32).collect();
    let mut c = vec![-1.0f32; 300];
    let args: [&[u8]; _] = [
        &addr(&mut a),
        &addr(&mut b),
        &addr(&mut c),
        &299u32.to_le_bytes(),
    ];
    assert!(run("vadd", &args, 512));
    assert_eq!(c[10], 15.0);
    assert_eq!(c[298], 447.0);
    assert_eq!(c[299], -1.0, "n bounds the kernel");

    let mut y = vec![1.0f32; 300];
    let args: [&[u8]; _] = [
        &2.0f32.to_le_bytes(),
        &addr(&mut a),
        &addr(&mut y),
        &300u32.to_le_bytes(),
    ];
    assert!(run("saxpy", &args, 256));
    assert_eq!(
        (y[0], y[7], y[255], y[256]),
        (1.0, 15.0, 511.0, 1.0),
        "the grid bounds the kernel"
    );

    let mut out = vec![0u32; 100];
    let args: [&[u8]; _] = [
        &addr(&mut out),
        &0xdead_beefu32.to_le_bytes(),
        &100u32.to_le_bytes(),
    ];
    assert!(run("fill", &args, 128));
    assert!(out.iter().all(|&v| v == 0xdead_beef));

    let mut data: Vec<u32> = vec![7, u32::MAX, 0];
    let args: [&[u8]; _] = [&addr(&mut data), &3u32.to_le_bytes()];
    assert!(run("increment", &args, 3));
    assert!(run("increment", &args, 2));
    assert_eq!(data, [9, 1, 1]);
}

#[test]
fn host_indirect_increment_writes_where_memory_points() {
    let mut data: Vec<u32> = vec![7, u32::MAX, 0];
    let mut holder = [data.as_mut_ptr() as u64, 0];
    let args: [&[u8]; _] = [&addr(&mut holder), &3u32.to_le_bytes()];
    assert!(run("indirect_increment", &args, 3));
    assert!(run("indirect_increment", &args, 2));
    assert_eq!(data, [9, 1, 1]);
    assert_eq!(holder, [data.as_ptr() as u64, 0], "the holder is only read");

    // With no work-item below n the holder is not read at all, as in the compiled kernel.
    let mut null_holder = [0u64];
    let args: [&[u8]; _] = [&addr(&mut null_holder), &0u32.to_le_bytes()];
    assert!(run("indirect_increment", &args, 256));
}

#[test]
fn host_lds_reverse_scratchy_empty() {
    let mut data: Vec<u32> = (0..512).collect();
    let args: [&[u8]; _] = [&addr(&mut data), &512u32.to_le_bytes()];
    assert!(run("lds_reverse", &args, 512));
    assert_eq!(
        (data[0], data[255], data[256], data[511]),
        (255, 0, 511, 256)
    );

    let mut out = vec![0u32; 4];
    let args: [&[u8]; _] = [&addr(&mut out), &5u32.to_le_bytes(), &4u32.to_le_bytes()];
    assert!(run("scratchy", &args, 4));
    // sum over k of (seed + k * i) for a permutation of k in 0..64 = 64 * seed + 2016 * i
    assert_eq!(out, [320, 320 + 2016, 320 + 4032, 320 + 6048]);

    let mut input: Vec<u32> = (100..400).collect();
    let mut copied = vec![0u32; 300];
    let args: [&[u8]; _] = [&addr(&mut input), &addr(&mut copied), &299u32.to_le_bytes()];
    assert!(
        run("copy", &args, 512),
        "the hidden arguments after n are ignored"
    );
    assert_eq!((copied[0], copied[298], copied[299]), (100, 398, 0));

    assert!(run("empty", &[], 1 << 20));
}

#[test]
fn host_cpp_kernels_by_mangled_name() {
    let mut floats: Vec<f32> = (0..300).map(|i| i as f32 * 0.5).collect();
    let args: [&[u8]; _] = [
        &addr(&mut floats),
        &3.0f32.to_le_bytes(),
        &299u32.to_le_bytes(),
    ];
    assert!(run("_Z5scaleIfEvPT_S0_j", &args, 512));
    assert_eq!(
        (floats[0], floats[3], floats[298], floats[299]),
        (0.0, 4.5, 447.0, 149.5)
    );

    let mut words: Vec<u32> = vec![1, 0x8000_0001, 5];
    let args: [&[u8]; _] = [&addr(&mut words), &6u32.to_le_bytes(), &3u32.to_le_bytes()];
    assert!(run("_Z5scaleIjEvPT_S0_j", &args, 256));
    assert_eq!(words, [6, 6, 30], "u32 arithmetic wraps");

    let args: [&[u8]; _] = [&addr(&mut words), &2u32.to_le_bytes()];
    assert!(run("_ZN4demo5twiceEPjj", &args, 256));
    assert_eq!(words, [12, 12, 30]);
}

#[test]
fn host_refuses_unknown_kernels_and_layouts() {
    let (co, _) = fixture("gfx942");
    let image = LoadedImage::load(Arc::new(co)).unwrap();
    let kernarg = [0u8; 32];
    let launch_as = |name: &str| {
        let mut kernel = (*image.kernels()[0]).clone(); // vadd
        kernel.name = name.into();
        run_on_host(&KernelLaunch {
            kernarg: kernarg.as_ptr(),
            grid: [1, 1, 1],
            workgroup: [1, 1, 1],
            group_segment_size: 0,
            private_segment_size: 0,
            kernel: &kernel,
        })
    };
    assert!(!launch_as("not_a_fixture"));
    assert!(!launch_as("fill"), "vadd's argument layout is not fill's");
}

#[test]
fn fixture_kernels_run_only_from_the_fixture_code_objects() {
    // The same vadd (name, symbol and argument layout) in a code object that differs from the
    // fixture by one trailing byte: the simulator cannot know what its code does.
    let (co, _) = fixture("gfx942");
    let mut bytes = co.bytes.clone();
    bytes.push(0);
    let other = LoadedImage::load(Arc::new(CodeObject::parse(bytes).unwrap())).unwrap();
    let fixture = LoadedImage::load(Arc::new(co)).unwrap();
    let vadd = |image: &LoadedImage| {
        let kernel = image.kernels().iter().find(|k| k.name == "vadd").unwrap();
        (**kernel).clone()
    };
    assert_eq!(vadd(&fixture).host, Some(HostKernel::Fixture));
    assert_eq!(vadd(&other).host, None);
    assert_eq!(vadd(&other).meta, vadd(&fixture).meta);

    let (a, b) = ([1.0f32, 2.0], [10.0f32, 20.0]);
    let mut c = [0.0f32; 2];
    let mut kernarg = [0u8; 64];
    for (i, ptr) in [a.as_ptr() as u64, b.as_ptr() as u64, c.as_mut_ptr() as u64]
        .into_iter()
        .enumerate()
    {
        kernarg[8 * i..][..8].copy_from_slice(&ptr.to_le_bytes());
    }
    kernarg[24..28].copy_from_slice(&2u32.to_le_bytes());
    let launch = |kernel: &LoadedKernel| {
        run_on_host(&KernelLaunch {
            kernarg: kernarg.as_ptr(),
            grid: [2, 1, 1],
            workgroup: [64, 1, 1],
            group_segment_size: 0,
            private_segment_size: 0,
            kernel,
        })
    };
    assert!(!launch(&vadd(&other)), "not a fixture: not computed");
    assert_eq!(c, [0.0, 0.0]);
    assert!(launch(&vadd(&fixture)));
    assert_eq!(c, [11.0, 22.0]);
}

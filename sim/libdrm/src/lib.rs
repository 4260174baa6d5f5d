//! Stand-ins of libdrm (`libdrm.so.2`) and its amdgpu library (`libdrm_amdgpu.so.1`) for the
//! simulated GPUs, answering the queries rocprofiler-sdk makes to name each GPU agent
//! (`drmOpenRender`, `amdgpu_device_initialize`, `amdgpu_get_marketing_name`,
//! `amdgpu_query_gpu_info`, `amdgpu_device_deinitialize`, `drmClose`), from the same device
//! configuration as the simulated runtime (`RTL_SIM_DEVICES`, default gfx942).
//!
//! - `drmOpenRender(minor)` opens a descriptor (of `/dev/null`) standing for the render node of
//!   the GPU whose KFD `drm_render_minor` is `minor`, or returns `-ENODEV`.
//! - `amdgpu_device_initialize(fd, &major, &minor, &dev)` gives that GPU's device handle (the
//!   same handle for every descriptor of one GPU, counted, as libdrm does) and the amdgpu kernel
//!   interface version 3.57; `-ENODEV` for a descriptor this library did not open.
//! - `amdgpu_get_marketing_name(dev)` is the configuration's product name.
//! - `amdgpu_query_gpu_info(dev, &info)` fills libdrm's `struct amdgpu_gpu_info` with what the
//!   configuration knows: the PCI device id as `asic_id`, the amdgpu driver's family of the gfx
//!   target (`family_id`), the engine clock in kHz, shader engines, arrays per engine and active CUs;
//!   every other field is 0.
//!
//! Nothing else of libdrm is provided: a program that needs more than these six functions from
//! libdrm cannot run in the simulator's environment.

#[allow(dead_code)]
#[path = "../../runtime/src/config.rs"]
mod config;

use config::{DeviceConfig, GpuConfig};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// The amdgpu kernel interface version reported by `amdgpu_device_initialize`.
pub const KERNEL_INTERFACE: (u32, u32) = (3, 57);

/// libdrm's `struct amdgpu_gpu_info` (`amdgpu.h`), 416 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdgpuGpuInfo {
    pub asic_id: u32,
    pub chip_rev: u32,
    pub chip_external_rev: u32,
    pub family_id: u32,
    pub ids_flags: u64,
    pub max_engine_clk: u64,
    pub max_memory_clk: u64,
    pub num_shader_engines: u32,
    pub num_shader_arrays_per_engine: u32,
    pub avail_quad_shader_pipes: u32,
    pub max_quad_shader_pipes: u32,
    pub cache_entries_per_quad_pipe: u32,
    pub num_hw_gfx_contexts: u32,
    pub rb_pipes: u32,
    pub enabled_rb_pipes_mask: u32,
    pub gpu_counter_freq: u32,
    pub backend_disable: [u32; 4],
    pub mc_arb_ramcfg: u32,
    pub gb_addr_cfg: u32,
    pub gb_tile_mode: [u32; 32],
    pub gb_macro_tile_mode: [u32; 16],
    pub pa_sc_raster_cfg: [u32; 4],
    pub pa_sc_raster_cfg1: [u32; 4],
    pub cu_active_number: u32,
    pub cu_ao_mask: u32,
    pub cu_bitmap: [[u32; 4]; 4],
    pub vram_type: u32,
    pub vram_bit_width: u32,
    pub ce_ram_size: u32,
    pub vce_harvest_config: u32,
    pub pci_rev_id: u32,
}

impl AmdgpuGpuInfo {
    /// What the configuration tells of `gpu`.
    pub fn of(gpu: &GpuConfig) -> AmdgpuGpuInfo {
        // SAFETY: every field is an integer or an array of integers: all zeroes is valid.
        let mut info: AmdgpuGpuInfo = unsafe { std::mem::zeroed() };
        info.asic_id = gpu.device_id;
        info.family_id = gpu.family_id();
        info.max_engine_clk = u64::from(gpu.max_engine_clk_fcompute) * 1000;
        info.num_shader_engines = gpu.shader_engines();
        info.num_shader_arrays_per_engine = gpu.simd_arrays_per_engine;
        info.cu_active_number = gpu.cu_count();
        info
    }
}

/// One simulated GPU as a libdrm device.
struct Device {
    gpu: GpuConfig,
    marketing_name: CString,
    users: AtomicU32,
}

/// The configuration's GPUs as devices, made once.
fn devices() -> &'static [Device] {
    static DEVICES: OnceLock<Vec<Device>> = OnceLock::new();
    DEVICES.get_or_init(|| {
        DeviceConfig::from_env()
            .map(|config| config.gpus)
            .unwrap_or_default()
            .into_iter()
            .map(|gpu| Device {
                marketing_name: CString::new(gpu.product.replace('\0', " ")).unwrap_or_default(),
                gpu,
                users: AtomicU32::new(0),
            })
            .collect()
    })
}

/// Open render-node descriptors and the GPU (index into [`devices`]) each stands for.
fn open_nodes() -> std::sync::MutexGuard<'static, HashMap<c_int, usize>> {
    static OPEN: OnceLock<Mutex<HashMap<c_int, usize>>> = OnceLock::new();
    OPEN.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The device behind a handle this library gave out.
fn device(handle: *mut c_void) -> Option<&'static Device> {
    devices()
        .iter()
        .find(|d| std::ptr::eq(*d as *const Device as *const c_void, handle))
}

/// libdrm's `drmOpenRender`.
#[no_mangle]
pub extern "C" fn drmOpenRender(minor: c_int) -> c_int {
    let Some(index) = devices()
        .iter()
        .position(|d| i64::from(d.gpu.drm_render_minor) == i64::from(minor))
    else {
        return -libc::ENODEV;
    };
    // SAFETY: open of a NUL-terminated path.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return -std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
    }
    open_nodes().insert(fd, index);
    fd
}

/// libdrm's `drmClose`.
#[no_mangle]
pub extern "C" fn drmClose(fd: c_int) -> c_int {
    open_nodes().remove(&fd);
    // SAFETY: closing a descriptor the caller owns.
    unsafe { libc::close(fd) }
}

/// libdrm_amdgpu's `amdgpu_device_initialize`.
///
/// # Safety
/// The out-pointers are null or valid for writes, as libdrm requires.
#[no_mangle]
pub unsafe extern "C" fn amdgpu_device_initialize(
    fd: c_int,
    major: *mut u32,
    minor: *mut u32,
    handle: *mut *mut c_void,
) -> c_int {
    if major.is_null() || minor.is_null() || handle.is_null() {
        return -libc::EINVAL;
    }
    let Some(&index) = open_nodes().get(&fd) else {
        return -libc::ENODEV;
    };
    let device = &devices()[index];
    device.users.fetch_add(1, Ordering::SeqCst);
    // SAFETY: checked non-null above; the caller gives writable pointers.
    unsafe {
        *major = KERNEL_INTERFACE.0;
        *minor = KERNEL_INTERFACE.1;
        *handle = device as *const Device as *mut c_void;
    }
    0
}

/// libdrm_amdgpu's `amdgpu_device_deinitialize`.
#[no_mangle]
pub extern "C" fn amdgpu_device_deinitialize(handle: *mut c_void) -> c_int {
    match device(handle) {
        Some(d) => {
            let _ = d
                .users
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            0
        }
        None => -libc::EINVAL,
    }
}

/// libdrm_amdgpu's `amdgpu_get_marketing_name`: null for a handle it did not give.
#[no_mangle]
pub extern "C" fn amdgpu_get_marketing_name(handle: *mut c_void) -> *const c_char {
    device(handle).map_or(std::ptr::null(), |d| d.marketing_name.as_ptr())
}

/// libdrm_amdgpu's `amdgpu_query_gpu_info`.
///
/// # Safety
/// `info` is null or valid for writing a `struct amdgpu_gpu_info`.
#[no_mangle]
pub unsafe extern "C" fn amdgpu_query_gpu_info(
    handle: *mut c_void,
    info: *mut AmdgpuGpuInfo,
) -> c_int {
    let Some(d) = device(handle) else {
        return -libc::EINVAL;
    };
    if info.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: checked non-null; the caller gives room for the structure.
    unsafe { info.write(AmdgpuGpuInfo::of(&d.gpu)) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_info_has_libdrms_layout() {
        assert_eq!(std::mem::size_of::<AmdgpuGpuInfo>(), 416);
        let info = AmdgpuGpuInfo::of(&DeviceConfig::load("gfx942").unwrap().gpus[0]);
        let base = &info as *const AmdgpuGpuInfo as usize;
        let at = |field: *const u32| field as usize - base;
        assert_eq!(at(&info.family_id), 12);
        assert_eq!(at(&info.num_shader_engines), 40);
        assert_eq!(at(&info.cu_active_number), 324);
        assert_eq!(at(&info.pci_rev_id), 412);
        assert_eq!(
            (
                info.asic_id,
                info.family_id,
                info.max_engine_clk,
                info.num_shader_engines,
                info.num_shader_arrays_per_engine,
                info.cu_active_number
            ),
            (0x74a1, 141, 2_100_000, 32, 1, 304)
        );
    }
}

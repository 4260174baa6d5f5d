//! Whether a command buffer still holds what the command processor compiled, known without
//! reading all of it.
//!
//! A GPU's command processor fetches an indirect buffer every time it runs it. The simulated one
//! compiles a buffer when it first sees it and runs the compiled form after, so it must know
//! that the buffer has not changed since, whoever wrote it: aqlprofile, the tool, the application
//! or the kernel on their behalf. Comparing the whole buffer each time is exact but costs as much
//! as reading it (a read buffer of 16 events on an MI300X-shaped GPU is 128 KiB).
//!
//! So the whole pages of a buffer in a host allocation of the runtime are write-protected through `userfaultfd(2)` when the buffer is
//! compiled (or found unchanged by a full comparison): any write to them, from user or kernel
//! mode, stops the writer until this module's thread has lifted the protection of that page and
//! counted a change; unmapping, `madvise` removal and `mremap` of a watched range are counted too.
//! While the count is what it was when a buffer was armed, only the bytes outside its whole
//! pages (at most a page at each end) are compared; any change anywhere makes every buffer compare
//! in full once and be armed again. Only host allocations (`posix_memalign`: anonymous private
//! memory, whose pages no other mapping reaches) are watched; device memory is a shared memfd.
//!
//! Where `userfaultfd` is not available (no `CAP_SYS_PTRACE`, `vm.unprivileged_userfaultfd=0` and
//! no access to `/dev/userfaultfd`), in a child forked after the watch started, and with
//! `RTL_SIM_NO_WRITE_WATCH=1`, every buffer is compared in full every time.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// `UFFDIO_API`, `UFFDIO_REGISTER`, `UFFDIO_WRITEPROTECT` (`_IOWR(0xAA, nr, size)`).
const UFFDIO_API: u64 = 0xC018_AA3F;
const UFFDIO_REGISTER: u64 = 0xC020_AA00;
const UFFDIO_WRITEPROTECT: u64 = 0xC018_AA06;
/// `USERFAULTFD_IOC_NEW` (`_IO(0xAA, 0)`) of `/dev/userfaultfd`.
const USERFAULTFD_IOC_NEW: u64 = 0xAA00;
const UFFD_API: u64 = 0xAA;
const UFFD_FEATURE_EVENT_REMAP: u64 = 1 << 2;
const UFFD_FEATURE_EVENT_REMOVE: u64 = 1 << 3;
const UFFD_FEATURE_EVENT_UNMAP: u64 = 1 << 6;
const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1;
/// Bit of `UFFDIO_WRITEPROTECT` in the ioctls a registration reports.
const WRITEPROTECT_IOCTL: u64 = 1 << 0x06;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioWriteprotect {
    range: UffdioRange,
    mode: u64,
}

/// Changes seen in watched memory since the process started.
static CHANGES: AtomicU64 = AtomicU64::new(0);
/// Set in a child forked after the watch started (its memory is not watched) and when the
/// watch stopped working: nothing is trusted without a full comparison.
static UNTRUSTED: AtomicBool = AtomicBool::new(false);

/// The bytes of a buffer the watch covers: its whole pages, and the count of changes when they
/// were protected.
#[derive(Debug, Clone)]
pub(super) struct Armed {
    pages: Range<usize>,
    changes: u64,
}

fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// The userfaultfd of the watch, started on first use; `None` where it cannot be had.
fn watch_fd() -> Option<i32> {
    static FD: OnceLock<Option<i32>> = OnceLock::new();
    if UNTRUSTED.load(Ordering::Acquire) {
        return None;
    }
    *FD.get_or_init(|| {
        if std::env::var_os("RTL_SIM_NO_WRITE_WATCH").is_some_and(|v| v == "1") {
            return None;
        }
        let fd = open_userfaultfd()?;
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_EVENT_REMAP
                | UFFD_FEATURE_EVENT_REMOVE
                | UFFD_FEATURE_EVENT_UNMAP,
            ioctls: 0,
        };
        // SAFETY: UFFDIO_API on our userfaultfd with a valid struct.
        if unsafe { libc::ioctl(fd, UFFDIO_API as _, &mut api) } != 0 {
            // SAFETY: our descriptor, closed once.
            unsafe { libc::close(fd) };
            return None;
        }
        extern "C" fn forked() {
            UNTRUSTED.store(true, Ordering::Release);
        }
        // SAFETY: registers a child handler that only stores to an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(forked)) };
        let spawned = std::thread::Builder::new()
            .name("rtl-sim-watch".into())
            .spawn(move || serve(fd));
        if spawned.is_err() {
            // SAFETY: nothing was registered with it.
            unsafe { libc::close(fd) };
            return None;
        }
        Some(fd)
    })
}

fn open_userfaultfd() -> Option<i32> {
    // SAFETY: the userfaultfd system call with flags only.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) } as i32;
    if fd >= 0 {
        return Some(fd);
    }
    // SAFETY: opening a device node by a NUL-terminated path.
    let dev = unsafe { libc::open(c"/dev/userfaultfd".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if dev < 0 {
        return None;
    }
    // SAFETY: USERFAULTFD_IOC_NEW takes the new descriptor's flags.
    let fd = unsafe { libc::ioctl(dev, USERFAULTFD_IOC_NEW as _, libc::O_CLOEXEC) };
    // SAFETY: our descriptor, closed once.
    unsafe { libc::close(dev) };
    (fd >= 0).then_some(fd)
}

/// `UFFDIO_WRITEPROTECT` of `pages`: on (`protect`) or off, waking writers waiting on them.
fn write_protect(fd: i32, pages: &Range<usize>, protect: bool) -> bool {
    let mut wp = UffdioWriteprotect {
        range: UffdioRange {
            start: pages.start as u64,
            len: (pages.end - pages.start) as u64,
        },
        mode: if protect {
            UFFDIO_WRITEPROTECT_MODE_WP
        } else {
            0
        },
    };
    // SAFETY: UFFDIO_WRITEPROTECT on our userfaultfd with a valid struct.
    unsafe { libc::ioctl(fd, UFFDIO_WRITEPROTECT as _, &mut wp) == 0 }
}

/// The watch's thread: lifts the protection of each page written and counts every change. It
/// touches no watched memory and takes no lock, so it never waits on what it serves.
fn serve(fd: i32) {
    let page = page_size();
    loop {
        let mut msg = [0u8; 32];
        // SAFETY: reading one uffd_msg into a buffer of its size.
        let n = unsafe { libc::read(fd, msg.as_mut_ptr().cast(), msg.len()) };
        if n != msg.len() as isize {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // Never seen; should it happen, stop trusting and keep serving.
                UNTRUSTED.store(true, Ordering::Release);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            continue;
        }
        // Before the writer goes on: by the time its store (or a system call's write) lands and
        // it can ask whether its buffer changed, the change is counted.
        CHANGES.fetch_add(1, Ordering::AcqRel);
        if msg[0] == UFFD_EVENT_PAGEFAULT {
            let mut address = [0u8; 8];
            address.copy_from_slice(&msg[16..24]);
            let start = u64::from_ne_bytes(address) as usize & !(page - 1);
            write_protect(fd, &(start..start + page), false);
        }
        // And after: a buffer armed between the two, whose protection this may just have
        // lifted, is compared in full again.
        CHANGES.fetch_add(1, Ordering::AcqRel);
    }
}

/// Write-protects the whole pages of `live` (which must be anonymous private memory) and
/// returns what is then watched, or `None` when nothing is (the buffer holds no whole page, or
/// there is no watch). Call it before reading the buffer to compile or compare it.
pub(super) fn arm(live: &[u32]) -> Option<Armed> {
    let page = page_size();
    let base = live.as_ptr() as usize;
    let pages = base.next_multiple_of(page)..(base + std::mem::size_of_val(live)) & !(page - 1);
    if pages.end <= pages.start || !in_host_allocation(&pages) {
        return None;
    }
    let fd = watch_fd()?;
    let changes = CHANGES.load(Ordering::Acquire);
    let mut register = UffdioRegister {
        range: UffdioRange {
            start: pages.start as u64,
            len: (pages.end - pages.start) as u64,
        },
        mode: UFFDIO_REGISTER_MODE_WP,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_REGISTER on our userfaultfd with a valid struct.
    if unsafe { libc::ioctl(fd, UFFDIO_REGISTER as _, &mut register) } != 0
        || register.ioctls & WRITEPROTECT_IOCTL == 0
        || !write_protect(fd, &pages, true)
    {
        return None;
    }
    Some(Armed { pages, changes })
}

/// Which memory the runtime allocated as host memory, as given to [`set_host_memory`].
static HOST_MEMORY: OnceLock<fn(usize, usize) -> bool> = OnceLock::new();

/// Tells the watch how to know ordinary host memory of the runtime's (`posix_memalign`:
/// anonymous private memory, which no other mapping reaches) by its address range; nothing
/// else is watched.
pub(super) fn set_host_memory(is_host: fn(usize, usize) -> bool) {
    let _ = HOST_MEMORY.set(is_host);
}

/// Whether `pages` lie in host memory of the runtime's.
fn in_host_allocation(pages: &Range<usize>) -> bool {
    HOST_MEMORY
        .get()
        .is_some_and(|is_host| is_host(pages.start, pages.end))
}

fn bytes(dwords: &[u32]) -> &[u8] {
    // SAFETY: any u32 slice is a valid byte slice of four times its length.
    unsafe { std::slice::from_raw_parts(dwords.as_ptr().cast(), std::mem::size_of_val(dwords)) }
}

/// Whether `live`, the buffer as it is now, still holds `compiled`, what it held when compiled.
/// While `armed` watches it and nothing changed since, only the bytes outside its whole pages
/// are compared; otherwise the buffer is armed again and compared in full.
pub(super) fn unchanged(compiled: &[u32], live: &[u32], armed: &mut Option<Armed>) -> bool {
    if compiled.len() != live.len() {
        return false;
    }
    let (old, now) = (bytes(compiled), bytes(live));
    let base = live.as_ptr() as usize;
    if let Some(a) = armed.as_ref() {
        let intact = a.changes == CHANGES.load(Ordering::Acquire)
            && !UNTRUSTED.load(Ordering::Acquire)
            && a.pages.start >= base
            && a.pages.end <= base + now.len();
        if intact {
            let (head, tail) = (a.pages.start - base, a.pages.end - base);
            return now[..head] == old[..head] && now[tail..] == old[tail..];
        }
    }
    *armed = arm(live);
    now == old
}

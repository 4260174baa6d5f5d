//! Kernel names: from the `.kd` symbols of executables to the names records carry.
//!
//! The runtime identifies a dispatched kernel only by `kernel_object`, the address of its
//! descriptor. Executables are watched as they are frozen: each kernel symbol's descriptor
//! address is mapped to its display name, and dropped again when the executable is destroyed.
//! Each kernel symbol found also gets an id as rocprofiler-sdk gives one (`Kernel_Id`): the
//! next of a process-wide count from 1, in the order the executables are frozen and their
//! kernel symbols iterated, so that a kernel loaded again or on another GPU gets a new id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::descriptor::KernelResources;
use crate::fast_map::FastMap;

/// How kernel names are shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NameOptions {
    /// Keep mangled C++ names (`--mangled-kernels`).
    pub mangled: bool,
    /// Reduce names to the function's base name (`--truncate-kernels`).
    pub truncate: bool,
}

/// The display name of a kernel symbol: `.kd` stripped, then demangled unless mangled names
/// are asked for, then truncated if asked.
pub fn display_name(symbol: &str, options: NameOptions) -> String {
    let raw = symbol.strip_suffix(".kd").unwrap_or(symbol);
    let name = if options.mangled {
        raw.to_string()
    } else {
        demangle(raw)
    };
    if options.truncate {
        base_name(&name).to_string()
    } else {
        name
    }
}

/// The demangled form of an Itanium C++ name, or the name itself if it is not one.
fn demangle(raw: &str) -> String {
    if !raw.starts_with("_Z") {
        return raw.to_string();
    }
    cpp_demangle::Symbol::new(raw)
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .unwrap_or_else(|| raw.to_string())
}

/// The function's own name within a demangled signature: no return type, namespaces, template
/// arguments, parameters or clone suffixes (`void ns::k<int>(int*)` → `k`).
///
/// rocprofv3's rule: from the end, skip spaces and balanced `(…)`, `<…>` and `[…]` groups; the
/// name is what precedes them back to a space or `:`. Unlike rocprofv3, a name that would come
/// out empty (or unbalanced) is kept whole.
fn base_name(name: &str) -> &str {
    let bytes = name.as_bytes();
    let mut end = bytes.len();
    while let Some(&last) = bytes[..end].last() {
        let open = match last {
            b' ' => {
                end -= 1;
                continue;
            }
            b')' => b'(',
            b'>' => b'<',
            b']' => b'[',
            _ => break,
        };
        let mut depth = 0usize;
        let opened = bytes[..end].iter().rposition(|&b| {
            if b == last {
                depth += 1;
            } else if b == open {
                depth -= 1;
            }
            depth == 0
        });
        match opened {
            Some(at) => end = at,
            None => return name,
        }
    }
    // Only ASCII bytes are compared, so both cuts fall on character boundaries.
    let start = bytes[..end]
        .iter()
        .rposition(|&b| b == b' ' || b == b':')
        .map_or(0, |at| at + 1);
    match &name[start..end] {
        "" => name,
        base => base,
    }
}

/// What the interposer knows about one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Display name, shared by the records of its dispatches ([`intern`]).
    pub name: &'static str,
    /// Symbol name without `.kd`: what tells kernels apart when display names coincide.
    pub symbol: String,
    /// Registers and wave size from the descriptor (zeros when it could not be read).
    pub resources: KernelResources,
    /// The symbol's id from 1 in the order symbols were found; 0 for an unknown kernel.
    pub id: u64,
}

/// `name`, stored once for the life of the process: the records of every dispatch and every
/// file that name it share it, and passing it along costs no copy and no reference count
/// (which the dispatch path and the completion worker would otherwise bounce between them).
/// Names are kernels', architectures' and the roctx ranges kernels are renamed after: as many
/// as the profile shows.
pub fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<FastMap<&'static str, ()>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some((known, ())) = names.get_key_value(name) {
        return known;
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(kept, ());
    kept
}

/// Kernel descriptor address → kernel, for every kernel of every frozen executable.
#[derive(Debug, Default)]
pub struct KernelNames {
    by_object: RwLock<FastMap<u64, Arc<KernelInfo>>>,
    /// The last kernel id given.
    last_id: Mutex<u64>,
    by_executable: RwLock<HashMap<u64, Vec<u64>>>,
}

impl KernelNames {
    /// Records the kernels of executable `executable`: `(kernel_object, symbol name, resources)`.
    pub fn add_executable(
        &self,
        executable: u64,
        kernels: impl IntoIterator<Item = (u64, String, KernelResources)>,
        options: NameOptions,
    ) {
        let kernels: Vec<(u64, String, KernelResources)> = kernels.into_iter().collect();
        let mut last_id = self.last_id.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(mut names) = self.by_object.write() {
            for (object, symbol, resources) in &kernels {
                *last_id += 1;
                let info = KernelInfo {
                    name: intern(&display_name(symbol, options)),
                    symbol: symbol.strip_suffix(".kd").unwrap_or(symbol).to_string(),
                    resources: *resources,
                    id: *last_id,
                };
                names.insert(*object, Arc::new(info));
            }
        }
        if let Ok(mut executables) = self.by_executable.write() {
            executables
                .entry(executable)
                .or_default()
                .extend(kernels.iter().map(|(object, ..)| *object));
        }
    }

    /// Forgets the kernels of a destroyed executable.
    pub fn remove_executable(&self, executable: u64) {
        let objects = match self.by_executable.write() {
            Ok(mut executables) => executables.remove(&executable).unwrap_or_default(),
            Err(_) => return,
        };
        if let Ok(mut names) = self.by_object.write() {
            for object in objects {
                names.remove(&object);
            }
        }
    }

    /// The kernel whose descriptor is at `kernel_object`; unknown kernels are named
    /// `kernel_0x<address>`, with unknown resources.
    pub fn get(&self, kernel_object: u64) -> Arc<KernelInfo> {
        self.by_object
            .read()
            .ok()
            .and_then(|names| names.get(&kernel_object).cloned())
            .unwrap_or_else(|| {
                let name = format!("kernel_0x{kernel_object:x}");
                Arc::new(KernelInfo {
                    name: intern(&name),
                    symbol: name,
                    resources: KernelResources::default(),
                    id: 0,
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEMANGLED: NameOptions = NameOptions {
        mangled: false,
        truncate: false,
    };

    #[test]
    fn names_are_stripped_demangled_and_truncated_on_request() {
        let symbol = "_Z4vaddPfPKfS1_i.kd";
        assert_eq!(
            display_name(symbol, DEMANGLED),
            "vadd(float*, float const*, float const*, int)"
        );
        let mangled = NameOptions {
            mangled: true,
            truncate: false,
        };
        assert_eq!(display_name(symbol, mangled), "_Z4vaddPfPKfS1_i");
        let truncated = NameOptions {
            mangled: false,
            truncate: true,
        };
        assert_eq!(display_name(symbol, truncated), "vadd");
        assert_eq!(display_name("saxpy.kd", DEMANGLED), "saxpy");
        assert_eq!(display_name("_Zbroken.kd", DEMANGLED), "_Zbroken");
        // void ns::scale<float, 4>(float*, std::pair<int, int>)
        let templated = "_ZN2ns5scaleIfLi4EEEvPfSt4pairIiiE.kd";
        assert_eq!(
            display_name(templated, DEMANGLED),
            "void ns::scale<float, 4>(float*, std::pair<int, int>)"
        );
        assert_eq!(display_name(templated, truncated), "scale");
    }

    #[test]
    fn fixture_kernels_are_named_as_rocprofv3_names_them() {
        let truncated = NameOptions {
            mangled: false,
            truncate: true,
        };
        let cases = [
            (
                "_Z5scaleIfEvPT_S0_j.kd",
                "void scale<float>(float*, float, unsigned int)",
                "scale",
            ),
            (
                "_Z5scaleIjEvPT_S0_j.kd",
                "void scale<unsigned int>(unsigned int*, unsigned int, unsigned int)",
                "scale",
            ),
            (
                "_ZN4demo5twiceEPjj.kd",
                "demo::twice(unsigned int*, unsigned int)",
                "twice",
            ),
        ];
        for (symbol, demangled, base) in cases {
            assert_eq!(display_name(symbol, DEMANGLED), demangled);
            assert_eq!(display_name(symbol, truncated), base);
        }
        // Truncating a mangled name finds no brackets or separators: it stays whole.
        let both = NameOptions {
            mangled: true,
            truncate: true,
        };
        assert_eq!(
            display_name("_Z5scaleIfEvPT_S0_j.kd", both),
            "_Z5scaleIfEvPT_S0_j"
        );
    }

    #[test]
    fn base_names_survive_odd_shapes() {
        assert_eq!(base_name("k"), "k");
        assert_eq!(base_name("a::b::c()"), "c");
        assert_eq!(base_name("void f<(anonymous namespace)::T>(int)"), "f");
        assert_eq!(base_name("operator()"), "operator");
        assert_eq!(base_name("()"), "()");
        assert_eq!(base_name("(("), "((");
        assert_eq!(base_name("Foo<int, float>::foo(a[], int (int))"), "foo");
        assert_eq!(base_name("foo(int) [clone .cold]"), "foo");
        assert_eq!(base_name("(anonymous namespace)::k(int)"), "k");
        assert_eq!(
            base_name("void launch<main::{lambda(int)#1}>(main::{lambda(int)#1})"),
            "launch"
        );
        assert_eq!(base_name("void f<int>(std::function<void (int)>)"), "f");
    }

    #[test]
    fn executables_map_and_unmap_their_kernels() {
        let names = KernelNames::default();
        let wave32 = KernelResources {
            wave_size: 32,
            ..KernelResources::default()
        };
        names.add_executable(1, [(0x1000, "vadd.kd".to_string(), wave32)], DEMANGLED);
        let fill = (
            0x2000,
            "_Z4fillPfi.kd".to_string(),
            KernelResources::default(),
        );
        names.add_executable(2, [fill], DEMANGLED);
        assert_eq!(names.get(0x1000).name, "vadd");
        assert_eq!(names.get(0x1000).resources.wave_size, 32);
        assert_eq!(names.get(0x2000).name, "fill(float*, int)");
        assert_eq!(names.get(0x2000).symbol, "_Z4fillPfi");
        assert_eq!((names.get(0x1000).id, names.get(0x2000).id), (1, 2));
        names.remove_executable(1);
        assert_eq!(names.get(0x1000).name, "kernel_0x1000");
        assert_eq!(names.get(0x1000).id, 0);
        assert_eq!(names.get(0x1000).symbol, "kernel_0x1000");
        assert_eq!(names.get(0x1000).resources, KernelResources::default());
        assert_eq!(names.get(0x2000).name, "fill(float*, int)");
        // Loaded again, a kernel is a new symbol with the next id, as rocprofiler-sdk counts.
        let again = [
            (0x3000, "vadd.kd".to_string(), wave32),
            (0x3040, "saxpy.kd".to_string(), wave32),
        ];
        names.add_executable(3, again, DEMANGLED);
        assert_eq!((names.get(0x3000).id, names.get(0x3040).id), (3, 4));
    }
}

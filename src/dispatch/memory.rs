//! The application's memory, as kernel replay needs to know it: every allocation the
//! application makes through the runtime, kept while it lives.
//!
//! Kernel replay saves the memory a kernel may write before its first pass and restores it
//! before each later one. What a kernel may write is not written down anywhere, so the whole of
//! every allocation the GPU can reach is taken: pool allocations (`hsa_amd_memory_pool_allocate`),
//! region allocations (`hsa_memory_allocate`), virtual memory mappings (`hsa_amd_vmem_map`), IPC
//! attachments and host memory locked for the GPUs (`hsa_amd_memory_lock`,
//! `hsa_amd_memory_lock_to_pool`). The only narrowing is one the runtime guarantees: memory of
//! a pool the GPU has no access to (another GPU's device memory, coarse-grained host memory) that
//! the application never opened to it with `hsa_amd_agents_allow_access` cannot be written by
//! its kernels.
//!
//! [`MemoryMap`] is the bookkeeping, free of any runtime call, so that it can be tested alone;
//! the wrappers that feed it live in [`super::interposer`].

use std::collections::{BTreeMap, HashMap};

/// Who may reach an allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Every agent (device region allocations, mappings whose access the runtime keeps).
    Everyone,
    /// Every agent, and the process's threads write it directly: host memory locked for the
    /// GPUs, region allocations the host reaches.
    Host,
    /// Memory of this pool: the agents the pool allows by default, and those given access.
    Pool {
        /// The pool handle.
        pool: u64,
        /// Agents given access with `hsa_amd_agents_allow_access`.
        allowed: Vec<u64>,
    },
}

/// One live allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// Bytes.
    pub size: usize,
    /// Who may reach it.
    pub reach: Reach,
    /// Which allocation of the process it is: memory freed and allocated again at the same
    /// address is another one.
    pub id: u64,
}

/// A piece of memory to save: its address, length, and the allocation it starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub base: usize,
    /// Bytes.
    pub len: usize,
    /// The [`Allocation::id`] of the allocation holding `base`.
    pub id: u64,
    /// Host memory: the process's threads may write it at any time, also while a kernel runs.
    pub host: bool,
}

/// The live allocations of the process, by base address.
#[derive(Debug, Default)]
pub struct MemoryMap {
    allocations: BTreeMap<usize, Allocation>,
    made: u64,
}

impl MemoryMap {
    /// Records an allocation at `base` (replacing one recorded there before).
    pub fn add(&mut self, base: usize, size: usize, reach: Reach) {
        if base != 0 && size != 0 {
            self.made += 1;
            let id = self.made;
            self.allocations
                .insert(base, Allocation { size, reach, id });
        }
    }

    /// Forgets the allocation at `base`.
    pub fn remove(&mut self, base: usize) {
        self.allocations.remove(&base);
    }

    /// Records that `agents` were given access to the allocation containing `address`.
    pub fn allow(&mut self, address: usize, agents: &[u64]) {
        if let Some((_, a)) = self.containing_mut(address) {
            if let Reach::Pool { allowed, .. } = &mut a.reach {
                for agent in agents {
                    if !allowed.contains(agent) {
                        allowed.push(*agent);
                    }
                }
            }
        }
    }

    fn containing_mut(&mut self, address: usize) -> Option<(usize, &mut Allocation)> {
        let (&base, a) = self.allocations.range_mut(..=address).next_back()?;
        (address < base + a.size).then_some((base, a))
    }

    /// Whether `address` lies inside a recorded allocation.
    pub fn contains(&self, address: usize) -> bool {
        self.allocations
            .range(..=address)
            .next_back()
            .is_some_and(|(&base, a)| address < base + a.size)
    }

    /// The allocations `agent` can reach, in address order. `pool_reaches(pool, agent)` says
    /// whether a pool is open to an agent by default (asked of the runtime, once per pair), and
    /// `host_pool(pool)` whether a pool is host memory (a pool of a CPU agent).
    pub fn reachable(
        &self,
        agent: u64,
        mut pool_reaches: impl FnMut(u64) -> bool,
        host_pool: impl Fn(u64) -> bool,
    ) -> Vec<Span> {
        let mut out: Vec<Span> = Vec::new();
        for (&base, a) in &self.allocations {
            let (reached, host) = match &a.reach {
                Reach::Everyone => (true, false),
                Reach::Host => (true, true),
                Reach::Pool { pool, allowed } => (
                    allowed.contains(&agent) || pool_reaches(*pool),
                    host_pool(*pool),
                ),
            };
            if !reached {
                continue;
            }
            // Mappings of one memory at two addresses are both kept; overlapping records (a
            // lock of memory inside an allocation) are merged.
            match out.last_mut() {
                Some(last) if base < last.base + last.len => {
                    last.len = last.len.max(base + a.size - last.base);
                    // Host memory only if every record is: the host may not reach device memory.
                    last.host &= host;
                }
                _ => out.push(Span {
                    base,
                    len: a.size,
                    id: a.id,
                    host,
                }),
            }
        }
        out
    }

    /// Whether `span` is still inside the allocation it was taken from (for a copy after the
    /// application may have freed memory, or freed and allocated it again).
    pub fn still_holds(&self, span: Span) -> bool {
        self.allocations
            .range(..=span.base)
            .next_back()
            .is_some_and(|(&base, a)| a.id == span.id && span.base + span.len <= base + a.size)
    }
}

/// Whether a pool is open to an agent by default, cached per pair.
#[derive(Debug, Default)]
pub struct PoolAccess {
    known: HashMap<(u64, u64), bool>,
}

impl PoolAccess {
    /// Whether `pool` is open to `agent` by default; `ask` asks the runtime the first time.
    pub fn reaches(&mut self, pool: u64, agent: u64, ask: impl FnOnce() -> bool) -> bool {
        *self.known.entry((pool, agent)).or_insert_with(ask)
    }
}

/// The bytes compared at once.
const WORD: usize = 8;

/// The offset of each whole word where `before` and `after` differ, with `before ^ after` there.
fn differing_words<'a>(
    before: &'a [u8],
    after: &'a [u8],
) -> impl Iterator<Item = (usize, u64)> + 'a {
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    before
        .chunks_exact(WORD)
        .zip(after.chunks_exact(WORD))
        .enumerate()
        .map(move |(w, (old, new))| (w * WORD, word(old) ^ word(new)))
        .filter(|&(_, differ)| differ != 0)
}

/// Byte ranges (offsets into a snapshot) where `before` and `after` differ, with gaps shorter
/// than `merge` bytes between two ranges joined into one.
pub fn changed_ranges(before: &[u8], after: &[u8], merge: usize) -> Vec<(usize, usize)> {
    let len = before.len().min(after.len());
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut push = |start: usize, end: usize| match out.last_mut() {
        Some(last) if start - (last.0 + last.1) < merge => last.1 = end - last.0,
        _ => out.push((start, end - start)),
    };
    let mut i = 0;
    // Gaps inside a word are shorter than `merge`: a word's changes are one range from its first
    // changed byte to its last.
    if merge >= WORD {
        let words = len / WORD * WORD;
        for (at, differ) in differing_words(&before[..words], &after[..words]) {
            let first = differ.trailing_zeros() as usize / 8;
            let last = WORD - 1 - differ.leading_zeros() as usize / 8;
            push(at + first, at + last + 1);
        }
        i = words;
    }
    while i < len {
        // Skip equal words quickly.
        if i + WORD <= len && before[i..i + WORD] == after[i..i + WORD] {
            i += WORD;
            continue;
        }
        if before[i] == after[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < len && before[i] != after[i] {
            i += 1;
        }
        push(start, i);
    }
    out
}

/// Writes `source`'s bytes at `target` where `before` and `after` differ, and no other byte:
/// whole words where all 8 differ, else byte by byte. The bytes written.
///
/// # Safety
/// `target` must be valid for writes of as many bytes as the shortest of the three slices.
pub unsafe fn write_changed(target: *mut u8, source: &[u8], before: &[u8], after: &[u8]) -> u64 {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    let len = source.len().min(before.len()).min(after.len());
    let words = len / WORD * WORD;
    let mut written = 0;
    for (at, differ) in differing_words(&before[..words], &after[..words]) {
        let from = &source[at..at + WORD];
        // Bit 0 of each byte that differs.
        let mut bytes = differ | (differ >> 4);
        bytes |= bytes >> 2;
        bytes |= bytes >> 1;
        bytes &= LOW_BITS;
        if bytes == LOW_BITS {
            // SAFETY: `at + 8 <= len`, inside `target` per the contract.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), target.add(at), WORD) };
            written += WORD as u64;
            continue;
        }
        while bytes != 0 {
            let k = bytes.trailing_zeros() as usize / 8;
            // SAFETY: `at + k < len`, inside `target` per the contract.
            unsafe { target.add(at + k).write(from[k]) };
            written += 1;
            bytes &= bytes - 1;
        }
    }
    for k in words..len {
        if before[k] != after[k] {
            // SAFETY: `k < len`, inside `target` per the contract.
            unsafe { target.add(k).write(source[k]) };
            written += 1;
        }
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU0: u64 = 100;
    const GPU1: u64 = 101;
    const DEVICE0: u64 = 7;
    const HOST_FINE: u64 = 9;

    fn map() -> MemoryMap {
        let mut m = MemoryMap::default();
        m.add(
            0x1000,
            0x100,
            Reach::Pool {
                pool: DEVICE0,
                allowed: vec![],
            },
        );
        m.add(
            0x3000,
            0x40,
            Reach::Pool {
                pool: HOST_FINE,
                allowed: vec![],
            },
        );
        m.add(0x5000, 0x10, Reach::Everyone);
        m
    }

    /// The pools of the CPU agent.
    fn host_pool(pool: u64) -> bool {
        pool == HOST_FINE
    }

    /// The simulated and real runtimes open a GPU's device pool to itself and fine-grained host
    /// pools to everyone; other GPUs need `hsa_amd_agents_allow_access`.
    fn default_access(pool: u64, agent: u64) -> bool {
        pool == HOST_FINE || (pool == DEVICE0 && agent == GPU0)
    }

    #[test]
    fn another_gpus_device_memory_is_left_out_until_it_is_opened() {
        let mut m = map();
        let spans = |m: &MemoryMap, agent| {
            m.reachable(agent, |pool| default_access(pool, agent), host_pool)
        };
        let all = vec![
            Span {
                base: 0x1000,
                len: 0x100,
                id: 1,
                host: false,
            },
            Span {
                base: 0x3000,
                len: 0x40,
                id: 2,
                host: true,
            },
            Span {
                base: 0x5000,
                len: 0x10,
                id: 3,
                host: false,
            },
        ];
        assert_eq!(spans(&m, GPU0), all);
        assert_eq!(spans(&m, GPU1), all[1..]);
        m.allow(0x1080, &[GPU1]);
        assert_eq!(spans(&m, GPU1), all);
        m.remove(0x1000);
        assert_eq!(spans(&m, GPU0), all[1..]);
        assert!(!m.contains(0x1000) && m.contains(0x303f) && !m.contains(0x3040));
    }

    #[test]
    fn overlapping_records_merge_and_freed_memory_is_noticed() {
        let mut m = map();
        // A mapping that may be device memory reaching into host memory: one span, which is
        // not host memory.
        m.add(0x3020, 0x100, Reach::Everyone);
        let spans = m.reachable(GPU0, |pool| default_access(pool, GPU0), host_pool);
        assert_eq!(
            spans[1],
            Span {
                base: 0x3000,
                len: 0x120,
                id: 2,
                host: false,
            }
        );
        let first = spans[0];
        assert!(m.still_holds(first));
        assert!(m.still_holds(Span {
            base: 0x1010,
            len: 0x10,
            ..first
        }));
        m.remove(0x1000);
        assert!(!m.still_holds(first));
        // Allocated again at the same address: another allocation, never written with the
        // first one's bytes.
        m.add(0x1000, 0x100, Reach::Everyone);
        assert!(!m.still_holds(first));
    }

    #[test]
    fn host_memory_is_told_from_device_memory() {
        // A device allocation with another record inside stays device memory; host memory
        // locked for the GPUs, and an allocation of a CPU agent's pool that a lock overlaps, are
        // host memory; device memory overlapping host memory is device memory, which the host
        // may not reach.
        let mut m = map();
        m.add(0x1010, 0x10, Reach::Everyone);
        m.add(0x3030, 0x20, Reach::Host);
        m.add(0x7000, 0x8, Reach::Host);
        let hosts: Vec<(usize, bool)> = m
            .reachable(GPU0, |pool| default_access(pool, GPU0), host_pool)
            .iter()
            .map(|s| (s.base, s.host))
            .collect();
        assert_eq!(
            hosts,
            [
                (0x1000, false),
                (0x3000, true),
                (0x5000, false),
                (0x7000, true)
            ]
        );
        let mut device_first = MemoryMap::default();
        device_first.add(0x1000, 0x100, Reach::Everyone);
        device_first.add(0x1080, 0x100, Reach::Host);
        let spans = device_first.reachable(GPU0, |_| true, host_pool);
        assert_eq!(
            (spans.len(), spans[0].len, spans[0].host),
            (1, 0x180, false)
        );
    }

    #[test]
    fn only_changed_bytes_are_written() {
        // 37 bytes: a word all changed, a word with 3 changed bytes, a word unchanged, a word
        // with its last byte changed, and a 5-byte tail with 2 changed. The target's bytes that
        // did not change hold another writer's values, which must stay.
        let before: Vec<u8> = (0..37).collect();
        let mut after = before.clone();
        // Each changed byte has one bit flipped, every bit of a byte taking its turn.
        for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 15, 31, 33, 36] {
            after[i] ^= 1 << (i % 8);
        }
        let source: Vec<u8> = (100..137).collect();
        let mut target = vec![0xee_u8; 37];
        // SAFETY: `target` holds 37 bytes.
        let written = unsafe { write_changed(target.as_mut_ptr(), &source, &before, &after) };
        assert_eq!(written, 14);
        let expected: Vec<u8> = (0..37)
            .map(|i| match before[i] != after[i] {
                true => source[i],
                false => 0xee,
            })
            .collect();
        assert_eq!(target, expected);
        // Nothing changed: nothing written.
        // SAFETY: as above.
        let none = unsafe { write_changed(target.as_mut_ptr(), &before, &before, &before) };
        assert_eq!((none, target), (0, expected));
    }

    #[test]
    fn changed_ranges_are_exact_and_near_ones_merge() {
        let before = vec![0u8; 64];
        let mut after = before.clone();
        after[3] = 1;
        after[4] = 1;
        after[20] = 1;
        after[63] = 1;
        assert_eq!(
            changed_ranges(&before, &after, 1),
            vec![(3, 2), (20, 1), (63, 1)]
        );
        assert_eq!(changed_ranges(&before, &after, 16), vec![(3, 18), (63, 1)]);
        // A gap of exactly `merge` bytes is not joined.
        assert_eq!(
            changed_ranges(&before, &after, 15),
            vec![(3, 2), (20, 1), (63, 1)]
        );
        assert_eq!(changed_ranges(&before, &after, 64), vec![(3, 61)]);
        // Whole words at a time (a merge of 8 or more) gives what byte by byte gives, across
        // word ends and with a tail shorter than a word.
        let before: Vec<u8> = (0..83).collect();
        for flips in [
            vec![0, 7, 8, 40, 47, 82],
            vec![5, 6, 30, 31, 32, 33, 81],
            vec![15, 16],
        ] {
            let mut after = before.clone();
            for &i in &flips {
                after[i] ^= 1 << (i % 8);
            }
            let exact = changed_ranges(&before, &after, 1);
            for merge in [8, 9, 17, 256] {
                let mut merged: Vec<(usize, usize)> = Vec::new();
                for &(start, len) in &exact {
                    match merged.last_mut() {
                        Some(last) if start - (last.0 + last.1) < merge => {
                            last.1 = start + len - last.0
                        }
                        _ => merged.push((start, len)),
                    }
                }
                assert_eq!(
                    changed_ranges(&before, &after, merge),
                    merged,
                    "{flips:?} {merge}"
                );
            }
        }
        assert!(changed_ranges(&before, &before, 64).is_empty());
    }
}

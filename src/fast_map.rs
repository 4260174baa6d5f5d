//! Hash maps for lookups made per dispatch: the interposer's kernels, launch counts, queues and
//! record strings, the database's small lookup tables (kernel names, counter names, per-kernel
//! totals). The standard library's SipHash guards against keys chosen to collide, which costs
//! more per lookup than these tables are worth; the keys here are few and come from the
//! profiled application or its addresses, so a multiply-rotate hash (the one rustc uses for its
//! own tables) does.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Multiply-rotate hashing, a word at a time.
#[derive(Debug, Clone, Copy, Default)]
pub struct FastHasher {
    hash: u64,
}

/// An odd constant with well-spread bits.
const MULTIPLIER: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        // The last word is padded with zeros; its length tells "A" from "A\0".
        let rest = chunks.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 61));
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // The table picks buckets by the low bits: fold the high ones in, or aligned addresses
        // (whose low bits are all zero) would share a few buckets.
        self.hash ^ (self.hash >> 29)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_anywhere_hash_apart() {
        let hash = |text: &str| {
            let mut h = FastHasher::default();
            std::hash::Hash::hash(text, &mut h);
            h.finish()
        };
        assert_ne!(hash("SQ_WAVES"), hash("SQ_WAVEZ"));
        assert_ne!(hash("GRBM_COUNT"), hash("GRBM_COUNT\0"));
        let mut map: FastMap<(i64, u32), u64> = FastMap::default();
        for kernel in 0..100 {
            for pass in 0..3 {
                *map.entry((kernel, pass)).or_default() += kernel as u64;
            }
        }
        assert_eq!(map.len(), 300);
        assert_eq!(map[&(42, 2)], 42);
    }

    #[test]
    fn aligned_addresses_spread_over_buckets_and_tags() {
        let address = |i: usize| 0x7f00_0000_0000 + 64 * i;
        let mut map: FastMap<usize, usize> = FastMap::default();
        for i in 0..4096 {
            map.insert(address(i), i);
        }
        assert!((0..4096).all(|i| map[&address(i)] == i));
        // The map finds buckets by the low bits and tells entries apart by the top seven.
        let hashes: Vec<u64> = (0..4096)
            .map(|i| {
                let mut h = FastHasher::default();
                h.write_usize(address(i));
                h.finish()
            })
            .collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 2048, "{} of 4096 low-bit buckets", low.len());
        assert!(top.len() > 100, "{} of 128 tags", top.len());
    }
}

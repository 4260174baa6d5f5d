//! Maps keyed by addresses (queue states, shared strings) on the dispatch path, where SipHash
//! would cost more than the lookup it serves. Addresses are unique and not chosen by an
//! adversary, so one multiplication spreads them well enough.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` from addresses.
pub type AddressMap<V> = HashMap<usize, V, BuildHasherDefault<AddressHasher>>;

/// Hashes one `usize`: the address times an odd constant, its high bits folded down.
#[derive(Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, address: usize) {
        let h = (address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_addresses_spread_over_buckets_and_tags() {
        let address = |i: usize| 0x7f00_0000_0000 + 64 * i;
        let mut map: AddressMap<usize> = AddressMap::default();
        for i in 0..4096 {
            map.insert(address(i), i);
        }
        assert!((0..4096).all(|i| map[&address(i)] == i));
        // The map finds buckets by the low bits and tells entries apart by the top seven.
        let hashes: Vec<u64> = (0..4096)
            .map(|i| {
                let mut h = AddressHasher::default();
                h.write_usize(address(i));
                h.finish()
            })
            .collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 4095).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 2048, "{} of 4096 low-bit buckets", low.len());
        assert_eq!(top.len(), 128);
    }
}

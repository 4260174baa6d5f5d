//! rocprof-compute's packing of counters into input files: which application runs its
//! `profile` would make for a counter set, to compare with the passes rtl-pmc plans.

use rtl_pmc_profile::files::rocprof_compute::accumulation_of;

/// Counters one rocprof-compute input file holds per hardware block on gfx90a, gfx942 and
/// gfx950 (its per-architecture perfmon configuration; SQC counts against SQ).
pub const ROCPROF_COMPUTE_BLOCK_LIMITS: [(&str, usize); 10] = [
    ("SQ", 8),
    ("TA", 2),
    ("TD", 2),
    ("TCP", 4),
    ("TCC", 4),
    ("CPC", 2),
    ("CPF", 2),
    ("SPI", 6),
    ("GRBM", 2),
    ("GDS", 4),
];

/// One rocprof-compute input file being filled: the counters taken per block.
#[derive(Default)]
struct InputFile {
    taken: Vec<(String, Vec<String>)>,
}

/// A channel counter (`TCC_HIT[3]`) is its base name's; others are themselves.
pub fn base_name(counter: &str) -> &str {
    counter.split('[').next().unwrap_or(counter)
}

impl InputFile {
    /// Takes `counter` if its block has room (a further channel of a counter already taken
    /// costs nothing). `None` when its block is not one rocprof-compute knows.
    fn add(&mut self, counter: &str) -> Option<bool> {
        let mut block = counter.split('_').next().unwrap_or(counter);
        if block == "SQC" {
            block = "SQ";
        }
        let limit = ROCPROF_COMPUTE_BLOCK_LIMITS
            .iter()
            .find(|(b, _)| *b == block)?
            .1;
        let index = match self.taken.iter().position(|(b, _)| b == block) {
            Some(i) => i,
            None => {
                self.taken.push((block.to_string(), Vec::new()));
                self.taken.len() - 1
            }
        };
        let taken = &mut self.taken[index].1;
        let base = base_name(counter);
        if taken.iter().any(|c| c == counter || base_name(c) == base) {
            taken.push(counter.to_string());
            return Some(true);
        }
        let distinct = taken
            .iter()
            .map(|c| base_name(c))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if distinct < limit {
            taken.push(counter.to_string());
            return Some(true);
        }
        Some(false)
    }
}

/// The input files rocprof-compute's `profile` makes for these counters, one application run
/// each, every file the counters it collects: one input
/// file per level counter (with its accumulation), the other counters packed greedily, in the
/// order given, into the first file with room under [`ROCPROF_COMPUTE_BLOCK_LIMITS`] (every
/// channel of a channel counter in one file); through rocprofv3 it adds no timing-only run.
/// rocprof-compute packs in the iteration order of a Python set, which varies between its
/// runs; the files here are for the order given. `Err` names a counter of a block rocprof-compute has no limit for.
pub fn rocprof_compute_input_files<'a>(
    counters: impl IntoIterator<Item = &'a str>,
    levels: &[String],
) -> Result<Vec<Vec<String>>, String> {
    let unknown = |c: &str| format!("counter '{c}' is of a block rocprof-compute has no limit for");
    let mut files: Vec<InputFile> = Vec::new();
    for level in levels {
        // The level counter and its accumulation both take a slot of the level's block.
        let mut file = InputFile::default();
        for counter in [level.clone(), accumulation_of(level)] {
            file.add(&counter).ok_or_else(|| unknown(&counter))?;
        }
        files.push(file);
    }
    let mut channel_files: Vec<(String, usize)> = Vec::new();
    for counter in counters {
        let channel = counter.starts_with("TCC") && counter.ends_with(']');
        if channel {
            let base = base_name(counter);
            if let Some((_, file)) = channel_files.iter().find(|(b, _)| b == base) {
                files[*file].add(counter).ok_or_else(|| unknown(counter))?;
                continue;
            }
        }
        let mut placed = None;
        for (i, file) in files.iter_mut().enumerate() {
            if file.add(counter).ok_or_else(|| unknown(counter))? {
                placed = Some(i);
                break;
            }
        }
        let file = match placed {
            Some(i) => i,
            None => {
                let mut file = InputFile::default();
                file.add(counter).ok_or_else(|| unknown(counter))?;
                files.push(file);
                files.len() - 1
            }
        };
        if channel {
            channel_files.push((base_name(counter).to_string(), file));
        }
    }
    Ok(files
        .into_iter()
        .map(|file| {
            file.taken
                .into_iter()
                .flat_map(|(_, counters)| counters)
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs<'a>(
        counters: impl IntoIterator<Item = &'a str>,
        levels: &[String],
    ) -> Result<usize, String> {
        rocprof_compute_input_files(counters, levels).map(|files| files.len())
    }

    #[test]
    fn rocprof_compute_packs_counters_by_block_limits() {
        // Nine SQ counters need two files, and so do three TA counters.
        let sq: Vec<String> = (0..9).map(|i| format!("SQ_C{i}")).collect();
        let mut names: Vec<&str> = sq.iter().map(String::as_str).collect();
        names.extend(["TA_A", "TA_B", "TA_C"]);
        assert_eq!(runs(names, &[]), Ok(2));
    }

    #[test]
    fn rocprof_compute_keeps_every_channel_in_one_file_and_levels_apart() {
        let channels: Vec<String> = (0..32).map(|i| format!("TCC_HIT[{i}]")).collect();
        let mut names: Vec<&str> = channels.iter().map(String::as_str).collect();
        names.extend(["TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"]);
        // Four TCC counters fit the first file; a fifth opens a second.
        assert_eq!(runs(names.clone(), &[]), Ok(1));
        names.push("TCC_REQ_sum");
        assert_eq!(runs(names.clone(), &[]), Ok(2));
        // Each level counter has a file of its own, which other counters then fill.
        let levels = [
            "SQ_LEVEL_WAVES".to_string(),
            "SQ_INSTS_LEVEL_VMEM".to_string(),
        ];
        assert_eq!(runs(names.clone(), &levels), Ok(2));
        // A level file has six SQ slots left: seven SQ counters fill the first and start
        // the second.
        let sq: Vec<String> = (0..7).map(|i| format!("SQ_C{i}")).collect();
        let sq: Vec<&str> = sq.iter().map(String::as_str).collect();
        assert_eq!(runs(sq.clone(), &levels[..1]), Ok(2));
        assert_eq!(runs(sq[..6].to_vec(), &levels[..1]), Ok(1));
    }

    #[test]
    fn rocprof_compute_runs_names_a_block_without_limit() {
        assert_eq!(
            runs(["XYZ_COUNT"], &[]),
            Err("counter 'XYZ_COUNT' is of a block rocprof-compute has no limit for".into())
        );
    }
}

//! The neutral data model every writer consumes: one [`Dispatch`] per kernel dispatch with its
//! counter values, and one [`Agent`] per GPU; and what the store reports of the whole profile
//! ([`ProfileFacts`], [`RunInfo`], [`Node`], [`KernelStats`], [`RegionRow`], [`Unmatched`]).
//! Writers import this module alone: they know nothing about how the data was collected or
//! stored; converters turn raw interposer records into this model.

/// One GPU, as `agent_info.csv` and the database describe it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Agent {
    /// KFD node id (`gpu-id` in rocprof's files).
    pub node_id: u32,
    /// Index among the GPUs, from 0.
    pub gpu_index: u32,
    /// gfx target name, e.g. `gfx942`.
    pub name: String,
    /// Marketing name when known, else empty.
    pub product_name: String,
    /// The KFD node's `name` file (its lines joined by spaces; empty for a CPU node).
    pub model_name: String,
    /// KFD topology properties (`simd_count`, `cu_count`, ...), by name.
    pub properties: Vec<(String, u64)>,
}

impl Agent {
    /// The KFD property `name`, 0 when absent.
    pub fn property(&self, name: &str) -> u64 {
        self.find_property(name).unwrap_or(0)
    }

    /// The KFD property `name`, `None` when absent.
    pub fn find_property(&self, name: &str) -> Option<u64> {
        self.properties
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// One requested counter's value for one dispatch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Counter {
    /// Counter name as requested.
    pub name: String,
    /// The sum over every dimension position (rocprofv3's `Counter_Value`).
    pub total: f64,
    /// The dimensions of `values`, in rocprofv3's listing style (`DIMENSION_XCC[0:7] ...`);
    /// `DIMENSION_NONE` for a scalar.
    pub dimensions: String,
    /// One value per dimension position, row-major (last dimension fastest).
    pub values: Vec<f64>,
}

/// One kernel dispatch and the counters collected for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dispatch {
    /// Process id.
    pub pid: u32,
    /// Thread id of the submitting thread.
    pub tid: u32,
    /// KFD node id of the GPU.
    pub agent: u32,
    /// Queue id.
    pub queue_id: u64,
    /// The queue's order of creation on its GPU in its process, from 1 (0 when unknown).
    pub queue_order: u32,
    /// Packet index in the application's queue.
    pub queue_index: u64,
    /// Process-wide dispatch id, from 1.
    pub dispatch_id: u64,
    /// Correlation id.
    pub correlation_id: u64,
    /// Kernel name.
    pub kernel: String,
    /// Kernel descriptor address.
    pub kernel_object: u64,
    /// The kernel symbol's id as rocprofiler-sdk gives it (`Kernel_Id`), 0 when unknown.
    pub kernel_id: u64,
    /// Grid size, x/y/z work-items.
    pub grid: [u32; 3],
    /// Workgroup size, x/y/z work-items.
    pub workgroup: [u32; 3],
    /// LDS bytes per workgroup as dispatched (writers round to 512 where the peers do).
    pub lds: u32,
    /// Scratch bytes per work-item.
    pub scratch: u32,
    /// Architected VGPRs.
    pub arch_vgpr: u32,
    /// Accumulation VGPRs.
    pub accum_vgpr: u32,
    /// SGPRs.
    pub sgpr: u32,
    /// Wavefront size.
    pub wave_size: u32,
    /// The application's completion signal handle (0 when unknown).
    pub signal: u64,
    /// Kernel start, ns.
    pub start_ns: u64,
    /// Kernel end, ns.
    pub end_ns: u64,
    /// The counters collected for this dispatch, in request order.
    pub counters: Vec<Counter>,
}

impl Counter {
    /// Makes this counter a copy of `other`, reusing its strings and vector.
    pub fn copy_from(&mut self, other: &Counter) {
        self.name.clone_from(&other.name);
        self.total = other.total;
        self.dimensions.clone_from(&other.dimensions);
        self.values.clone_from(&other.values);
    }
}

impl Dispatch {
    /// Makes this dispatch a copy of `other`, reusing its strings and vectors.
    pub fn copy_from(&mut self, other: &Dispatch) {
        let mut kernel = std::mem::take(&mut self.kernel);
        let mut counters = std::mem::take(&mut self.counters);
        kernel.clone_from(&other.kernel);
        counters.truncate(other.counters.len());
        for (mine, theirs) in counters.iter_mut().zip(&other.counters) {
            mine.copy_from(theirs);
        }
        counters.extend(other.counters[counters.len()..].iter().cloned());
        *self = Dispatch {
            kernel,
            counters,
            ..*other
        };
    }

    /// The counters in rocprofv3's order: by their position in rocprofiler-sdk's counter
    /// definitions (rocprofiler-sdk's counter ids follow it), then the counters those do not
    /// define in [`Dispatch::counters`]' order.
    pub fn counters_in_rocprofv3_order(&self) -> Vec<&Counter> {
        let mut order = Vec::new();
        rocprofv3_order(&self.counters, &mut order);
        order.iter().map(|&i| &self.counters[i]).collect()
    }

    /// The counter `name`, looked for at index `at` first: where the dispatches of a profile,
    /// which mostly have the same counters in the same order, usually have it.
    pub fn counter(&self, name: &str, at: usize) -> Option<&Counter> {
        match self.counters.get(at) {
            Some(c) if c.name == name => Some(c),
            _ => self.counters.iter().find(|c| c.name == name),
        }
    }

    /// Work-items in the grid (x·y·z).
    pub fn grid_size(&self) -> u64 {
        self.grid.iter().map(|&v| u64::from(v)).product()
    }

    /// Work-items per workgroup (x·y·z).
    pub fn workgroup_size(&self) -> u64 {
        self.workgroup.iter().map(|&v| u64::from(v)).product()
    }

    /// LDS bytes rounded up to the 512-byte allocation granule, as rocprof prints them.
    pub fn lds_block_size(&self) -> u64 {
        u64::from(self.lds).div_ceil(512) * 512
    }
}

/// Puts in `order` the indices of `counters` in rocprofv3's order (see
/// [`Dispatch::counters_in_rocprofv3_order`]).
fn rocprofv3_order(counters: &[Counter], order: &mut Vec<usize>) {
    order.clear();
    order.extend(0..counters.len());
    order.sort_by_key(|&i| {
        rtl_pmc_counters::rocprofiler_sdk_position(&counters[i].name).unwrap_or(usize::MAX)
    });
}

/// [`Dispatch::counters_in_rocprofv3_order`] for a stream of dispatches, most of which have the
/// counters of the one before: the order is worked out again only when their names change.
#[derive(Debug, Clone, Default)]
pub struct Rocprofv3Order {
    names: Vec<String>,
    order: Vec<usize>,
}

impl Rocprofv3Order {
    /// The indices of `d`'s counters in rocprofv3's order.
    pub fn of(&mut self, d: &Dispatch) -> &[usize] {
        let same = self.names.len() == d.counters.len()
            && self
                .names
                .iter()
                .zip(&d.counters)
                .all(|(n, c)| *n == c.name);
        if !same {
            self.names.clear();
            self.names.extend(d.counters.iter().map(|c| c.name.clone()));
            rocprofv3_order(&d.counters, &mut self.order);
        }
        &self.order
    }
}

/// One kernel's durations over its merged dispatches (`--stats`).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelStats {
    /// Kernel name.
    pub kernel: String,
    /// Dispatches.
    pub calls: u64,
    /// Total duration, ns.
    pub total_ns: u64,
    /// Average duration, ns.
    pub average_ns: f64,
    /// Share of all kernels' total duration, percent.
    pub percent: f64,
    /// Shortest duration, ns.
    pub min_ns: u64,
    /// Longest duration, ns.
    pub max_ns: u64,
    /// Population standard deviation of the duration, ns.
    pub stddev_ns: f64,
}

/// What the counter catalog says of a counter, for rocpd's `rocpd_info_pmc`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CounterInfo {
    /// Counter name.
    pub name: String,
    /// Unit (`percent`, `cycles`, ...), empty for none.
    pub unit: String,
    /// What it measures.
    pub description: String,
    /// Its hardware block, for a basic counter.
    pub block: Option<String>,
    /// Its expression, for a derived counter.
    pub expression: Option<String>,
    /// Whether it is derived.
    pub derived: bool,
}

/// What a profile's JSON header says beside the agents (see `Database::facts`).
#[derive(Debug, Clone, Default)]
pub struct ProfileFacts {
    /// The counters: database id, catalog facts, dimensions (`DIMENSION_XCC[0:7] ...`).
    pub counters: Vec<(i64, CounterInfo, String)>,
    /// The kernel names by database id.
    pub kernels: Vec<(i64, String)>,
    /// The application processes of the merged dispatches.
    pub processes: Vec<u32>,
    /// The first start and the last end of a merged dispatch, ns (0 when none).
    pub span: (u64, u64),
    /// The application's command line and environment.
    pub run: RunInfo,
    /// Every merged dispatch has its kernel symbol's id (rocprofiler-sdk's `kernel_id`).
    pub symbol_ids: bool,
}

/// What the database says of the run beyond its dispatches.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The application's command line.
    pub command: Vec<String>,
    /// The environment the application inherited (without what rtl-pmc adds for a pass), as
    /// `(NAME, value)` pairs.
    pub environment: Vec<(String, String)>,
    /// The application processes' parent (rtl-pmc itself), when it is known.
    pub ppid: Option<u32>,
}

/// This machine as rocpd's node row and rocprofv3's JSON metadata describe it.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// `/etc/machine-id` (the host name when there is none).
    pub machine_id: String,
    /// uname's system name.
    pub system_name: String,
    /// uname's node name.
    pub hostname: String,
    /// uname's release.
    pub release: String,
    /// uname's version.
    pub version: String,
    /// uname's machine.
    pub hardware_name: String,
    /// uname's domain name.
    pub domain_name: String,
}

/// One region: a range, a mark, a control or naming call, or a misuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionRow {
    /// Row id (after `store_pass`; in `pair`'s output, the index in its vector).
    pub id: i64,
    /// The pass it was recorded in.
    pub pass: u32,
    /// Process id.
    pub pid: u32,
    /// The thread that began it.
    pub tid: u32,
    /// See the module's table.
    pub kind: String,
    /// The message or name.
    pub name: Option<String>,
    /// Begin, ns on the dispatch clock.
    pub start_ns: u64,
    /// End, ns (equal to the begin for instants).
    pub end_ns: u64,
    /// The thread that ended it.
    pub end_tid: u32,
    /// Push/pop level from 0, else -1.
    pub depth: i32,
    /// The enclosing push/pop range (row id; index in `pair`'s output).
    pub parent: Option<i64>,
    /// The application's range id, 0 for none.
    pub roctx_id: u64,
    /// The object of a naming or control call; the count of dropped events.
    pub object: u64,
    /// What was wrong, if anything.
    pub problem: Option<String>,
}

/// The dispatches that could not be joined in every pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unmatched {
    /// Merged dispatches (after joining).
    pub merged: u64,
    /// Merged dispatches missing from at least one pass.
    pub incomplete: u64,
    /// Per pass: `(pass, its dispatches, those not joined in every pass)`.
    pub per_pass: Vec<(u32, u64, u64)>,
}

/// One kernel's line of the `rtl_top` view.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    /// Kernel name.
    pub kernel: String,
    /// Dispatches.
    pub calls: u64,
    /// Total kernel time, ns.
    pub total_ns: u64,
    /// Average kernel time, ns.
    pub average_ns: f64,
    /// Share of all kernel time, percent.
    pub percent: f64,
}

/// One counter of one kernel in the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelCounter {
    /// Counter name.
    pub name: String,
    /// Its value over the kernel's dispatches (see [`Database::kernel_counters`]).
    pub value: f64,
    /// Its unit as the catalog gives it, empty for none.
    pub unit: String,
}

/// One GPU's line of the `rtl_busy` view.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentBusy {
    /// KFD node id.
    pub agent: u32,
    /// gfx name ('' when unknown).
    pub name: String,
    /// Dispatches.
    pub dispatches: u64,
    /// Sum of kernel times, ns.
    pub busy_ns: u64,
    /// Busy time over the span from the first start to the last end, percent.
    pub busy_percent: f64,
}

/// The upper bounds of the idle-gap buckets, ns; the last bucket holds every longer gap.
pub const GAP_BOUNDS_NS: [u64; 7] = [
    10_000,
    20_000,
    50_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The idle gaps between the dispatches of one GPU, counted per bucket of [`GAP_BOUNDS_NS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleGaps {
    /// Gaps per bucket, shortest first.
    pub counts: [u64; 8],
}

impl IdleGaps {
    /// Counts one gap of `ns`.
    pub fn add(&mut self, ns: u64) {
        let bucket = GAP_BOUNDS_NS
            .iter()
            .position(|&bound| ns < bound)
            .unwrap_or(GAP_BOUNDS_NS.len());
        self.counts[bucket] += 1;
    }

    /// Both sets of gaps together.
    pub fn merge(&mut self, other: &IdleGaps) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
    }
}

/// What the summary reads of a stored profile: the narrow interface between the store and the
/// summary, which thus knows nothing of how the profile is stored.
pub trait SummarySource {
    /// Why a read failed.
    type Error;
    /// Every kernel with its merged dispatches' times, by total time, longest first.
    fn kernel_times(&self) -> Result<Vec<KernelTime>, Self::Error>;
    /// The counters of `kernel` over its merged dispatches, in the profile's counter order.
    fn kernel_counters(&self, kernel: &str) -> Result<Vec<KernelCounter>, Self::Error>;
    /// Each GPU's busy time, by KFD node.
    fn busy(&self) -> Result<Vec<AgentBusy>, Self::Error>;
    /// Each GPU's idle gaps, by KFD node.
    fn idle_gaps(&self) -> Vec<(u32, IdleGaps)>;
    /// The summary's lines about roctx regions and their misuse.
    fn region_lines(&self) -> Result<Vec<String>, Self::Error>;
}

/// The columns `results.csv` adds for counters estimated rather than measured in some
/// dispatches: the narrow interface between the estimates and the CSV writer.
pub trait EstimateColumns {
    /// The names of the columns, after `EndNs`.
    fn columns(&self) -> Vec<String>;
    /// Appends the fields of those columns for `d`, each after a comma.
    fn push_fields(&self, line: &mut Vec<u8>, d: &Dispatch);
}

/// What `results.csv` prints for a counter a dispatch has no value for (as rocprof v1 does).
pub const MISSING: &str = "None";

#[cfg(test)]
pub fn format_value(value: f64) -> String {
    let mut text = Vec::new();
    push_value(&mut text, value);
    String::from_utf8(text).unwrap_or_default()
}

/// Whether `value` is an integer that `i64` holds exactly (and not negative zero, which prints
/// its sign).
fn exact_integer(value: f64) -> bool {
    integral(value).is_some() && !(value == 0.0 && value.is_sign_negative())
}

/// `value` as an integer when it has no fraction and `i64` holds it exactly (negative zero as 0).
/// Without `f64::fract`, which is a call into libm on the baseline x86-64 target.
pub fn integral(value: f64) -> Option<i64> {
    let integer = value as i64;
    (value.abs() < 9.007_199_254_740_992e15 && integer as f64 == value).then_some(integer)
}

// The writers build their lines as bytes (all of it ASCII but the names they copy in), which
// numbers are appended to without a UTF-8 check or a formatter.

/// Appends a counter value to `text` without allocating: integers without a fraction, other
/// values in Rust's shortest round-trip form.
pub fn push_value(text: &mut Vec<u8>, value: f64) {
    use std::io::Write as _;
    if let Some(integer) = integral(value) {
        push_integer_bytes(text, integer);
    } else if value.abs() >= 1e16 {
        let _ = write!(text, "{value:e}");
    } else {
        let _ = write!(text, "{value}");
    }
}

/// Appends `value` with six decimals, exactly as `{:.6}` prints it; integers skip the slow
/// exact-decimal path of the formatter.
pub fn push_fixed6(text: &mut Vec<u8>, value: f64) {
    use std::io::Write as _;
    if exact_integer(value) {
        push_integer_bytes(text, value as i64);
        text.extend_from_slice(b".000000");
    } else {
        let _ = write!(text, "{value:.6}");
    }
}

/// Appends `value` in decimal.
pub fn push_integer_bytes(text: &mut Vec<u8>, value: i64) {
    if value < 0 {
        text.push(b'-');
    }
    push_unsigned(text, value.unsigned_abs());
}

/// Two decimal digits per entry: "00" to "99".
const PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};

/// Appends `value` in decimal: the digits above the last four first, then those four, two at a
/// time, straight into `text` (most values written are small: one step, no buffer).
pub fn push_unsigned(text: &mut Vec<u8>, value: u64) {
    if value >= 10_000 {
        push_unsigned(text, value / 10_000);
        let low = (value % 10_000) as usize;
        text.extend_from_slice(&PAIRS[low / 100]);
        text.extend_from_slice(&PAIRS[low % 100]);
    } else if value >= 100 {
        let value = value as usize;
        push_below_100(text, value / 100);
        text.extend_from_slice(&PAIRS[value % 100]);
    } else {
        push_below_100(text, value as usize);
    }
}

/// Appends `value` (below 100) in decimal.
fn push_below_100(text: &mut Vec<u8>, value: usize) {
    match value < 10 {
        true => text.push(b'0' + value as u8),
        false => text.extend_from_slice(&PAIRS[value % 100]),
    }
}

/// Appends `value` in lower-case hexadecimal, without a prefix.
pub fn push_hex(text: &mut Vec<u8>, value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
    for at in (0..digits).rev() {
        text.push(DIGITS[((value >> (4 * at)) & 0xf) as usize]);
    }
}

/// Appends `,value` for each of `values`.
pub fn push_fields(text: &mut Vec<u8>, values: &[u64]) {
    for &value in values {
        text.push(b',');
        push_unsigned(text, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_values_print_as_the_peers_do() {
        let d = Dispatch {
            grid: [1024, 2, 1],
            workgroup: [64, 4, 1],
            lds: 513,
            start_ns: 10,
            end_ns: 25,
            ..Dispatch::default()
        };
        assert_eq!(
            (d.grid_size(), d.workgroup_size(), d.lds_block_size()),
            (2048, 256, 1024)
        );
        assert_eq!(format_value(4096.0), "4096");
        assert_eq!(format_value(-3.0), "-3");
        assert_eq!(format_value(0.25), "0.25");
        assert_eq!(format_value(1e300), "1e300");
        for v in [
            0.0,
            -0.0,
            7.0,
            -3.0,
            0.25,
            1e15,
            9.1e15,
            1e300,
            -2.5e-7,
            f64::NAN,
            f64::INFINITY,
            1e17,
            9_007_199_254_740_991.0,
            -0.5,
        ] {
            let mut text = Vec::new();
            push_fixed6(&mut text, v);
            assert_eq!(text, format!("{v:.6}").into_bytes(), "{v}");
        }
        let mut integers = vec![0, 7, -1, 10, 99, 100, -101, i64::MAX, i64::MIN];
        integers.extend([-9_007_199_254_740_993, 0xf, 0x10, 0xfff_ffff, 1 << 40]);
        integers.extend(
            (0..19)
                .map(|e| 10i64.pow(e))
                .flat_map(|p| [p - 1, p, p + 1]),
        );
        for v in integers {
            let mut text = Vec::new();
            push_integer_bytes(&mut text, v);
            push_hex(&mut text, v as u64);
            push_unsigned(&mut text, v as u64);
            let expected = format!("{v}{:x}{}", v as u64, v as u64);
            assert_eq!(text, expected.into_bytes(), "{v}");
        }
        let mut text = Vec::new();
        push_fields(&mut text, &[1, 20, u64::MAX]);
        assert_eq!(text, b",1,20,18446744073709551615");
        for (v, expected) in [
            (1e16, "1e16"),
            (-2.5e17, "-2.5e17"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (9.007_199_254_740_992e15, "9007199254740992"),
            (-0.0, "0"),
            (-5.0, "-5"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (9_007_199_254_740_991.0, "9007199254740991"),
            (-0.5, "-0.5"),
        ] {
            assert_eq!(format_value(v), expected);
        }
    }

    #[test]
    fn the_counter_order_is_worked_out_again_when_the_names_change() {
        let dispatch = |names: &[&str]| Dispatch {
            counters: names
                .iter()
                .map(|n| Counter {
                    name: n.to_string(),
                    ..Counter::default()
                })
                .collect(),
            ..Dispatch::default()
        };
        let mut order = Rocprofv3Order::default();
        // rocprofiler-sdk lists GRBM_COUNT before SQ_WAVES; a name it does not know goes last,
        // others of those keeping their order.
        for (names, expected) in [
            (
                &["SQ_WAVES", "GRBM_COUNT", "X"][..],
                &["GRBM_COUNT", "SQ_WAVES", "X"][..],
            ),
            (
                &["GRBM_COUNT", "SQ_WAVES", "X"],
                &["GRBM_COUNT", "SQ_WAVES", "X"],
            ),
            (&["X", "GRBM_COUNT"], &["GRBM_COUNT", "X"]),
            (&["Y", "X", "SQ_WAVES"], &["SQ_WAVES", "Y", "X"]),
            (
                &["SQ_WAVES", "GRBM_COUNT", "X"],
                &["GRBM_COUNT", "SQ_WAVES", "X"],
            ),
        ] {
            let d = dispatch(names);
            let got: Vec<&str> = order
                .of(&d)
                .iter()
                .map(|&i| d.counters[i].name.as_str())
                .collect();
            assert_eq!(got, expected, "{names:?}");
        }
    }
}

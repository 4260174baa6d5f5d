//! The catalog: every block and counter of one GPU architecture.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::dimension::{Dimension, Shape};
use crate::expr::{Accumulation, Expr};
use crate::topology::Topology;
use crate::Error;

/// One architecture as the build script compiled it from `arch-defs/` (shared groups merged,
/// counters sorted by name).
struct BuiltinArch {
    arch: &'static str,
    reference: Option<(&'static str, &'static [(&'static str, u64)])>,
    blocks: &'static [BuiltinBlock],
    counters: &'static [BuiltinCounter],
}

struct BuiltinBlock {
    name: &'static str,
    aql_block_id: u32,
    counters_per_pass: u32,
    instances_per_xcc: u32,
    scaled_by_cus: bool,
    per_xcc: bool,
    dimensions: &'static [&'static str],
    budget: Option<&'static str>,
    max_event_id: Option<u32>,
}

struct BuiltinCounter {
    name: &'static str,
    description: &'static str,
    unit: Option<&'static str>,
    block: Option<&'static str>,
    event: Option<u64>,
    expression: Option<&'static str>,
}

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// Architecture names with built-in definitions, in `arch-defs/` order.
static ARCHITECTURES: OnceLock<Vec<&'static str>> = OnceLock::new();

/// One hardware event to program: two counters needing the same `HwEvent` share one counter
/// register. The accumulate flags make an event distinct.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HwEvent {
    /// Block name as aqlprofile spells it (`SQ`, `TCC`, `GL2C`, ...).
    pub block: String,
    /// aqlprofile's numeric block id (`hsa_ven_amd_aqlprofile_block_name_t`).
    pub block_id: u32,
    /// Event select number.
    pub event: u32,
    /// aqlprofile event flags: for SQ the accumulate resolution (0 none, 1 LOW_RES, 2 HIGH_RES).
    pub flags: u32,
}

/// A counter block of one architecture, as aqlprofile exposes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Block name (`SQ`, `TCC`, ...).
    pub name: String,
    /// aqlprofile's numeric block id.
    pub aql_block_id: u32,
    /// How many distinct events of this block (and the blocks sharing its budget) one pass may hold.
    pub counters_per_pass: u32,
    /// Instances per XCC in aqlprofile's table; for CU-scaled blocks, the cap (see [`Block::instances`]).
    pub instances_per_xcc: u32,
    /// True for gfx9 texture blocks (TA, TD, TCP) whose instance count follows the CU count.
    pub scaled_by_cus: bool,
    /// False for blocks aqlprofile reads once per pass rather than once per XCC (MI300 ATC and
    /// RPB, gfx12 RPB-class blocks): their samples have no XCC coordinate.
    pub per_xcc: bool,
    /// The sample dimensions below XCC, outermost first (XCC is added when the GPU has more
    /// than one and the block is read per XCC).
    pub dimensions: Vec<Dimension>,
    /// The block whose counter registers this block uses (gfx9 `SQ_CS` uses `SQ`'s); otherwise its own name.
    pub budget: String,
    /// Largest event id aqlprofile's table declares, when known (informational; not enforced).
    pub max_event_id: Option<u32>,
}

impl Block {
    /// Instances per XCC on a GPU: the table value, or for CU-scaled blocks
    /// `min(instances_per_xcc, ceil(cu_count / array_count) + 1)`.
    pub fn instances(&self, topology: &Topology) -> u32 {
        if self.scaled_by_cus {
            topology.cu_scaled_instances(self.instances_per_xcc)
        } else {
            self.instances_per_xcc
        }
    }

    /// The shape of one event's samples on a GPU, in aqlprofile's sample order (last fastest).
    pub fn shape(&self, topology: &Topology) -> Shape {
        let mut dims = Vec::with_capacity(self.dimensions.len() + 1);
        if self.per_xcc && topology.xcc_count() > 1 {
            dims.push((Dimension::Xcc, topology.xcc_count() as u32));
        }
        for dim in &self.dimensions {
            let extent = match dim {
                Dimension::Instance => self.instances(topology),
                Dimension::ShaderEngine => topology.se_per_xcc() as u32,
                Dimension::ShaderArray => topology.arrays_per_se() as u32,
                Dimension::Wgp => topology.wgp_per_array() as u32,
                Dimension::Aid => 4,
                Dimension::Xcc | Dimension::Agent => 1,
            };
            dims.push((*dim, extent));
        }
        Shape::new(dims)
    }
}

/// How a counter is obtained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// Read from a hardware block.
    Basic {
        /// Block name.
        block: String,
        /// Event select number.
        event: u32,
        /// aqlprofile event flags (the high 32 bits of a 64-bit `event` in the YAML; usually 0).
        flags: u32,
    },
    /// Computed from other counters and constants.
    Derived {
        /// The expression text.
        expression: String,
    },
}

impl CounterKind {
    /// The kind of a definition with these fields: `block` and `event` (whose high 32 bits are
    /// aqlprofile event flags, as in rocprofiler-sdk) or `expression`; `None` for any other mix.
    pub(crate) fn from_parts(
        block: Option<&str>,
        event: Option<u64>,
        expression: Option<&str>,
    ) -> Option<CounterKind> {
        match (block, event, expression) {
            (Some(block), Some(event), None) => Some(CounterKind::Basic {
                block: block.to_string(),
                event: event as u32,
                flags: (event >> 32) as u32,
            }),
            (None, None, Some(expression)) => Some(CounterKind::Derived {
                expression: expression.to_string(),
            }),
            _ => None,
        }
    }
}

/// Where a counter definition comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The built-in `arch-defs`.
    Builtin,
    /// An extra-counter file (`-E`), at the given 1-based line.
    Extra {
        /// The file.
        path: PathBuf,
        /// The line of the counter's definition.
        line: u64,
    },
    /// rocprof's spelling of a counter of the catalog: `NAME[i]`, `NAME_ACCUM` or
    /// `NAME_ACCUM_LOW_RES` (see [`Catalog::add_rocprof_form`]).
    RocprofForm,
}

/// One counter of an architecture.
#[derive(Clone, Debug)]
pub struct CounterDef {
    /// Counter name.
    pub name: String,
    /// What it measures.
    pub description: String,
    /// Unit, when one is stated (`percent`, `cycles`, ...).
    pub unit: Option<String>,
    /// Basic (block + event) or derived (expression).
    pub kind: CounterKind,
    /// Built-in or from an extra file.
    pub origin: Origin,
    parsed: OnceLock<Result<Expr, Error>>,
}

impl CounterDef {
    pub(crate) fn new(
        name: String,
        description: String,
        unit: Option<String>,
        kind: CounterKind,
        origin: Origin,
    ) -> CounterDef {
        CounterDef {
            name,
            description,
            unit,
            kind,
            origin,
            parsed: OnceLock::new(),
        }
    }

    /// The parsed expression of a derived counter (`None` for a basic counter). Parsed once,
    /// on first use.
    pub fn expression(&self) -> Option<Result<&Expr, Error>> {
        match &self.kind {
            CounterKind::Basic { .. } => None,
            CounterKind::Derived { expression } => {
                let parsed = self
                    .parsed
                    .get_or_init(|| Expr::parse(&self.name, expression));
                Some(parsed.as_ref().map_err(Clone::clone))
            }
        }
    }
}

/// The reference GPU of an architecture: the topology `--list-avail --arch` shows dimensions for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceGpu {
    /// Product name, e.g. `MI300X`.
    pub product: String,
    /// Its KFD topology properties.
    pub topology: Topology,
}

/// All counters and blocks of one architecture (built-ins plus any extra files).
#[derive(Clone, Debug)]
pub struct Catalog {
    arch: String,
    counters: Vec<CounterDef>,
    index: HashMap<String, usize>,
    blocks: Vec<Block>,
    block_index: HashMap<String, usize>,
    reference: Option<ReferenceGpu>,
    /// Counters that extra files define for other architectures only (for clearer errors).
    pub(crate) foreign: HashMap<String, crate::extra::ForeignCounter>,
}

impl Catalog {
    /// The built-in catalog of an architecture, e.g. `"gfx942"`. An unknown architecture is
    /// [`Error::UnknownArchitecture`], which lists the known ones.
    pub fn builtin(arch: &str) -> Result<Catalog, Error> {
        let Some(builtin) = BUILTIN.iter().find(|b| b.arch == arch) else {
            return Err(Error::UnknownArchitecture {
                arch: arch.to_string(),
                known: Catalog::architectures().join(", "),
            });
        };
        let broken = |message: String| Error::Builtin {
            arch: arch.to_string(),
            message,
        };
        let mut catalog = Catalog {
            arch: arch.to_string(),
            counters: Vec::with_capacity(builtin.counters.len()),
            index: HashMap::with_capacity(builtin.counters.len()),
            blocks: Vec::with_capacity(builtin.blocks.len()),
            block_index: HashMap::with_capacity(builtin.blocks.len()),
            reference: None,
            foreign: HashMap::new(),
        };
        for block in builtin.blocks {
            let block = block_from_builtin(block).map_err(&broken)?;
            catalog
                .block_index
                .insert(block.name.clone(), catalog.blocks.len());
            catalog.blocks.push(block);
        }
        for counter in builtin.counters {
            let kind = CounterKind::from_parts(counter.block, counter.event, counter.expression)
                .ok_or_else(|| broken(format!("counter {} has no definition", counter.name)))?;
            let unit = counter.unit.filter(|u| !u.is_empty()).map(str::to_string);
            let def = CounterDef::new(
                counter.name.to_string(),
                counter.description.to_string(),
                unit,
                kind,
                Origin::Builtin,
            );
            catalog.push(def).map_err(&broken)?;
        }
        if let Some((product, properties)) = builtin.reference {
            let properties = properties
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect();
            let topology = Topology::new(properties).map_err(|e| broken(e.to_string()))?;
            catalog.reference = Some(ReferenceGpu {
                product: product.to_string(),
                topology,
            });
        }
        Ok(catalog)
    }

    /// Architecture names with built-in definitions.
    pub fn architectures() -> &'static [&'static str] {
        ARCHITECTURES.get_or_init(|| {
            let mut names: Vec<&'static str> = BUILTIN.iter().map(|b| b.arch).collect();
            names.sort_by_key(|name| arch_sort_key(name));
            names
        })
    }

    /// The architecture, e.g. `gfx942`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// The reference GPU of this architecture, when the built-in definitions name one.
    pub fn reference_gpu(&self) -> Option<&ReferenceGpu> {
        self.reference.as_ref()
    }

    /// Every counter name, in catalog order (built-ins by name, then extra counters in file order).
    pub fn counter_names(&self) -> impl Iterator<Item = &str> {
        self.counters.iter().map(|c| c.name.as_str())
    }

    /// Every counter, in catalog order.
    pub fn counters(&self) -> impl Iterator<Item = &CounterDef> {
        self.counters.iter()
    }

    /// One counter by exact name.
    pub fn counter(&self, name: &str) -> Option<&CounterDef> {
        self.index.get(name).map(|&i| &self.counters[i])
    }

    /// One block by name.
    pub fn block(&self, name: &str) -> Option<&Block> {
        self.block_index.get(name).map(|&i| &self.blocks[i])
    }

    /// Defines `name` when it is rocprof's spelling of a counter of the catalog and not a counter
    /// itself: `NAME[i]` is `NAME` on instance `i` (rocprof v1's per-channel form, summed over
    /// the other dimensions), `NAME_ACCUM` and `NAME_ACCUM_LOW_RES` accumulate `NAME` (high and
    /// low resolution; rocprof-compute's `<LEVEL>_ACCUM`). Returns whether it added `name`;
    /// an instance beyond the counter's block is [`Error::Expression`].
    pub fn add_rocprof_form(&mut self, name: &str) -> Result<bool, Error> {
        if self.counter(name).is_some() {
            return Ok(false);
        }
        let (expression, description) = if let Some((base, index)) = name
            .strip_suffix(']')
            .and_then(|n| n.split_once('['))
            .filter(|(_, i)| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
        {
            let Some(def) = self.counter(base) else {
                return Ok(false);
            };
            let instances = self.instances_per_xcc(base)?;
            let index: u64 = index.parse().unwrap_or(u64::MAX);
            if index >= u64::from(instances) {
                return Err(Error::Expression {
                    counter: name.to_string(),
                    message: format!(
                        "{base} has instances 0-{} on {}",
                        instances.saturating_sub(1),
                        self.arch
                    ),
                });
            }
            (
                format!("select({base},[DIMENSION_INSTANCE=[{index}]])"),
                format!("{base} on instance {index}: {}", def.description),
            )
        } else {
            let (base, resolution) = match name.strip_suffix("_ACCUM_LOW_RES") {
                Some(base) => (base, "LOW_RES"),
                None => match name.strip_suffix("_ACCUM") {
                    Some(base) => (base, "HIGH_RES"),
                    None => return Ok(false),
                },
            };
            if self.counter(base).is_none() {
                return Ok(false);
            }
            (
                format!("accumulate({base},{resolution})"),
                format!("{base} accumulated over the kernel's cycles ({resolution})"),
            )
        };
        self.add_form(name, expression, description)
    }

    /// Adds derived counter `name` (`expression`) as one of rocprof's forms, unless it does not
    /// resolve to hardware events.
    fn add_form(
        &mut self,
        name: &str,
        expression: String,
        description: String,
    ) -> Result<bool, Error> {
        let kind = CounterKind::Derived { expression };
        let def = CounterDef::new(
            name.to_string(),
            description,
            None,
            kind,
            Origin::RocprofForm,
        );
        let before = self.len();
        self.push(def).map_err(|message| Error::Expression {
            counter: name.to_string(),
            message,
        })?;
        if let Err(e) = self.hardware_events(name) {
            self.truncate(before);
            return Err(e);
        }
        Ok(true)
    }

    /// Instances per XCC of the blocks counter `base` counts in.
    fn instances_per_xcc(&self, base: &str) -> Result<u32, Error> {
        Ok(self
            .hardware_events(base)?
            .iter()
            .filter_map(|e| self.block(&e.block))
            .map(|b| b.instances_per_xcc)
            .max()
            .unwrap_or(1))
    }

    /// Defines `NAME[i]` as rocprof-compute's definitions of a GPU with `xcds` XCDs do: channel
    /// `i` counted across the XCDs, `i / channels` its XCD and `i % channels` its instance there
    /// (rocprof's own form, [`Catalog::add_rocprof_form`], with one XCD). Returns whether it
    /// added `name`; an index beyond the GPU's channels is [`Error::Expression`].
    pub fn add_channel_counter(&mut self, name: &str, xcds: u32) -> Result<bool, Error> {
        let parsed = name
            .strip_suffix(']')
            .and_then(|n| n.split_once('['))
            .and_then(|(base, i)| Some((base, i.parse::<u64>().ok()?)));
        let Some((base, index)) = parsed.filter(|_| xcds > 1) else {
            return self.add_rocprof_form(name);
        };
        let Some(def) = self.counter(base) else {
            return Ok(false);
        };
        if self.counter(name).is_some() {
            return Ok(false);
        }
        let instances = u64::from(self.instances_per_xcc(base)?);
        if index >= instances * u64::from(xcds) {
            return Err(Error::Expression {
                counter: name.to_string(),
                message: format!(
                    "{base} has channels 0-{} on {} with {xcds} XCDs",
                    instances * u64::from(xcds) - 1,
                    self.arch
                ),
            });
        }
        let (xcd, channel) = (index / instances, index % instances);
        let expression =
            format!("select({base},[DIMENSION_XCC=[{xcd}], DIMENSION_INSTANCE=[{channel}]])");
        let description = format!(
            "{base} on XCD {xcd}, instance {channel}: {}",
            def.description
        );
        self.add_form(name, expression, description)
    }

    /// Every block, by aqlprofile block id.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter()
    }

    /// The distinct hardware events needed to compute `name` (recursively through derived
    /// expressions), deduplicated and sorted. An unknown name is [`Error::UnknownCounter`]
    /// with the closest names as suggestions.
    pub fn hardware_events(&self, name: &str) -> Result<Vec<HwEvent>, Error> {
        let counter = self.lookup(name)?;
        let mut events = BTreeSet::new();
        self.collect_events(counter, &mut Vec::new(), &mut events)?;
        Ok(events.into_iter().collect())
    }

    /// The counter called `name`, or [`Error::UnknownCounter`] with suggestions.
    pub fn lookup(&self, name: &str) -> Result<&CounterDef, Error> {
        if let (None, Some(foreign)) = (self.counter(name), self.foreign.get(name)) {
            let mut architectures = foreign.architectures.clone();
            architectures.sort();
            return Err(Error::NotForArchitecture {
                name: name.to_string(),
                arch: self.arch.clone(),
                path: foreign.path.clone(),
                architectures: architectures.join(", "),
            });
        }
        self.counter(name).ok_or_else(|| Error::UnknownCounter {
            name: name.to_string(),
            arch: self.arch.clone(),
            suggestions: crate::suggest::closest(name, self.counter_names()),
        })
    }

    /// The hardware event of basic counter `counter` with the given accumulation.
    pub(crate) fn basic_event(
        &self,
        counter: &CounterDef,
        accumulation: Accumulation,
    ) -> Result<HwEvent, Error> {
        let CounterKind::Basic {
            block,
            event,
            flags,
        } = &counter.kind
        else {
            return Err(Error::Expression {
                counter: counter.name.clone(),
                message: "only a basic counter has a hardware event".into(),
            });
        };
        let block_def = self.block(block).ok_or_else(|| Error::Expression {
            counter: counter.name.clone(),
            message: format!("block {block} does not exist on {}", self.arch),
        })?;
        let flags = match accumulation {
            Accumulation::None => *flags,
            resolution => resolution as u32,
        };
        Ok(HwEvent {
            block: block.clone(),
            block_id: block_def.aql_block_id,
            event: *event,
            flags,
        })
    }

    fn collect_events(
        &self,
        counter: &CounterDef,
        stack: &mut Vec<String>,
        out: &mut BTreeSet<HwEvent>,
    ) -> Result<(), Error> {
        let expr = match counter.expression() {
            None => {
                out.insert(self.basic_event(counter, Accumulation::None)?);
                return Ok(());
            }
            Some(expr) => expr?,
        };
        if stack.contains(&counter.name) {
            let mut path = stack.clone();
            path.push(counter.name.clone());
            return Err(Error::Cycle {
                counter: stack[0].clone(),
                path,
            });
        }
        stack.push(counter.name.clone());
        let result = self.visit_references(counter, expr, &mut |reference| match reference {
            Reference::Counter(def) => self.collect_events(def, stack, out),
            Reference::Accumulated(def, resolution) => {
                out.insert(self.accumulated_event(counter, def, resolution)?);
                Ok(())
            }
            Reference::Constant(_) => Ok(()),
        });
        stack.pop();
        result
    }

    /// The event of `accumulate(def, resolution)` inside `owner`'s expression.
    pub(crate) fn accumulated_event(
        &self,
        owner: &CounterDef,
        def: &CounterDef,
        resolution: Accumulation,
    ) -> Result<HwEvent, Error> {
        let misuse = |message: String| Error::Expression {
            counter: owner.name.clone(),
            message,
        };
        let CounterKind::Basic { block, .. } = &def.kind else {
            return Err(misuse(format!(
                "accumulate() needs a basic counter, but '{}' is derived",
                def.name
            )));
        };
        let is_sq = self.block(block).is_some_and(|b| b.budget == "SQ");
        if resolution != Accumulation::None && !is_sq {
            return Err(misuse(format!(
                "accumulate() with LOW_RES or HIGH_RES needs an SQ counter, but '{}' belongs to {block}",
                def.name
            )));
        }
        self.basic_event(def, resolution)
    }

    /// Resolves every name `expr` (the expression of `owner`) mentions and calls `visit` on it.
    pub(crate) fn visit_references<'a>(
        &'a self,
        owner: &CounterDef,
        expr: &'a Expr,
        visit: &mut dyn FnMut(Reference<'a>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        match expr {
            Expr::Number(_) => Ok(()),
            Expr::Name(name) | Expr::LegacyReduce { name, .. } => match self.counter(name) {
                Some(def) => visit(Reference::Counter(def)),
                None if Topology::is_constant_name(name)
                    && !matches!(expr, Expr::LegacyReduce { .. }) =>
                {
                    visit(Reference::Constant(name))
                }
                None => Err(self.unknown_reference(owner, name)),
            },
            Expr::Accumulate { name, resolution } => match self.counter(name) {
                Some(def) => visit(Reference::Accumulated(def, *resolution)),
                None => Err(self.unknown_reference(owner, name)),
            },
            Expr::Negate(arg) | Expr::Reduce { arg, .. } | Expr::Select { arg, .. } => {
                self.visit_references(owner, arg, visit)
            }
            Expr::Binary(_, a, b) => {
                self.visit_references(owner, a, visit)?;
                self.visit_references(owner, b, visit)
            }
        }
    }

    fn unknown_reference(&self, owner: &CounterDef, name: &str) -> Error {
        let mut message = format!(
            "'{name}' is neither a counter of {} nor a GPU constant",
            self.arch
        );
        let suggestions = crate::suggest::closest(name, self.counter_names());
        if !suggestions.is_empty() {
            message += &format!("; did you mean {}?", suggestions.join(", "));
        }
        Error::Expression {
            counter: owner.name.clone(),
            message,
        }
    }

    /// Appends a counter; a duplicate name is an error message.
    pub(crate) fn push(&mut self, counter: CounterDef) -> Result<(), String> {
        if self.index.contains_key(&counter.name) {
            return Err(format!("counter {} is defined twice", counter.name));
        }
        self.index.insert(counter.name.clone(), self.counters.len());
        self.counters.push(counter);
        Ok(())
    }

    /// Removes the counters appended after the first `len` (undoes a failed extra file).
    pub(crate) fn truncate(&mut self, len: usize) {
        for counter in self.counters.drain(len..) {
            self.index.remove(&counter.name);
        }
    }

    /// The number of counters.
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    /// True when the catalog has no counters.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }
}

/// What a name inside an expression refers to.
pub(crate) enum Reference<'a> {
    /// Another counter.
    Counter(&'a CounterDef),
    /// `accumulate(counter, resolution)`.
    Accumulated(&'a CounterDef, Accumulation),
    /// A GPU constant (property or named constant).
    Constant(&'a str),
}

fn arch_sort_key(name: &str) -> (usize, String) {
    (name.len(), name.to_string())
}

fn block_from_builtin(block: &BuiltinBlock) -> Result<Block, String> {
    let dimensions = block
        .dimensions
        .iter()
        .map(|d| {
            Dimension::from_short_name(d)
                .ok_or_else(|| format!("block {}: unknown dimension '{d}'", block.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Block {
        name: block.name.to_string(),
        aql_block_id: block.aql_block_id,
        counters_per_pass: block.counters_per_pass,
        instances_per_xcc: block.instances_per_xcc,
        scaled_by_cus: block.scaled_by_cus,
        per_xcc: block.per_xcc,
        dimensions,
        budget: block.budget.unwrap_or(block.name).to_string(),
        max_event_id: block.max_event_id,
    })
}

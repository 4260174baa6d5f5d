//! Resolving counter names for one GPU into the hardware events to program, with every
//! value's shape inferred statically, and evaluating the requested counters from raw samples.

use std::collections::HashMap;

use crate::catalog::{Catalog, CounterDef, HwEvent, Reference};
use crate::dimension::{Dimension, Shape};
use crate::expr::{Accumulation, BinaryOp, Expr, ReduceOp};
use crate::topology::Topology;
use crate::Error;

/// One hardware event of a [`CounterSet`], with the layout of its samples on this GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedEvent {
    /// The event to program.
    pub event: HwEvent,
    /// Block instances per XCC (aqlprofile programs the event on each).
    pub instances_per_xcc: u32,
    /// The dimensions of its samples, in aqlprofile sample order (last fastest).
    pub shape: Shape,
}

impl ResolvedEvent {
    /// The number of samples aqlprofile returns for this event per dispatch.
    pub fn sample_count(&self) -> usize {
        self.shape.size()
    }
}

/// The value of one requested counter for one dispatch.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterValue {
    /// Counter name.
    pub name: String,
    /// The dimensions of `values` (scalar for fully reduced counters).
    pub shape: Shape,
    /// One value per position of `shape`, row-major (last dimension fastest).
    pub values: Vec<f64>,
    /// The sum of `values` (what rocprofv3 prints as `Counter_Value`).
    pub total: f64,
}

/// A resolved set of counters for one GPU: the distinct hardware events to program and a
/// compiled evaluator for each requested counter. Every shape error is found when the set is
/// resolved, never when data arrives.
#[derive(Clone, Debug)]
pub struct CounterSet {
    events: Vec<ResolvedEvent>,
    nodes: Vec<Node>,
    shapes: Vec<Shape>,
    /// Node `n`'s values lie at `offsets[n]..offsets[n + 1]` of the evaluation buffer.
    offsets: Vec<usize>,
    outputs: Vec<(String, usize)>,
}

/// One step of the compiled evaluator; operands are indices of earlier nodes.
#[derive(Clone, Debug)]
enum Node {
    Event(usize),
    Constant(f64),
    Negate(usize),
    Binary {
        op: BinaryOp,
        a: usize,
        b: usize,
        layout: Combine,
    },
    Reduce {
        op: ReduceOp,
        arg: usize,
        group: Vec<u32>,
    },
    Gather {
        arg: usize,
        indices: Vec<u32>,
    },
    /// A full reduction of raw event samples, read straight from the samples.
    ReduceEvent {
        op: ReduceOp,
        event: usize,
    },
}

/// How the positions of two operands line up.
#[derive(Clone, Debug)]
enum Combine {
    Same,
    ScalarLeft,
    ScalarRight,
    Indexed(Vec<u32>, Vec<u32>),
}

impl Catalog {
    /// Resolves `names` for a GPU with this `topology`: collects the distinct hardware events
    /// (deduplicated across counters) and compiles each counter, inferring the shape of every
    /// value. Unknown names, unknown GPU properties and shape mismatches are errors here.
    pub fn resolve<S: AsRef<str>>(
        &self,
        names: &[S],
        topology: &Topology,
    ) -> Result<CounterSet, Error> {
        let mut compiler = Compiler {
            catalog: self,
            topology,
            set: CounterSet {
                events: Vec::new(),
                nodes: Vec::new(),
                shapes: Vec::new(),
                offsets: Vec::new(),
                outputs: Vec::new(),
            },
            event_nodes: HashMap::new(),
            counter_nodes: HashMap::new(),
            unique: HashMap::new(),
            stack: Vec::new(),
        };
        for name in names {
            let name = name.as_ref();
            if compiler.set.outputs.iter().any(|(n, _)| n == name) {
                continue;
            }
            let def = self.lookup(name)?;
            let node = compiler.counter(def)?;
            compiler.set.outputs.push((name.to_string(), node));
        }
        let mut set = compiler.set;
        set.lay_out();
        Ok(set)
    }

    /// The shape of counter `name`'s values on a GPU with this topology.
    pub fn shape(&self, name: &str, topology: &Topology) -> Result<Shape, Error> {
        let set = self.resolve(&[name], topology)?;
        Ok(set.shapes[set.outputs[0].1].clone())
    }
}

impl CounterSet {
    /// The distinct hardware events to program, in the order [`CounterSet::evaluate`] expects
    /// their samples.
    pub fn events(&self) -> &[ResolvedEvent] {
        &self.events
    }

    /// The requested counters (duplicates removed) with the shape of their values.
    pub fn counters(&self) -> impl Iterator<Item = (&str, &Shape)> {
        self.outputs
            .iter()
            .map(|(name, node)| (name.as_str(), &self.shapes[*node]))
    }

    /// Evaluates every requested counter. `samples[i]` holds the raw values of `events()[i]`
    /// in aqlprofile sample order (`events()[i].sample_count()` of them).
    pub fn evaluate<S: AsRef<[u64]>>(&self, samples: &[S]) -> Result<Vec<CounterValue>, Error> {
        let mut values = Vec::with_capacity(self.outputs.len());
        self.evaluate_each(samples, &mut Vec::new(), |name, shape, v| {
            values.push(CounterValue {
                name: name.to_string(),
                shape: shape.clone(),
                values: v.to_vec(),
                total: v.iter().sum(),
            })
        })?;
        Ok(values)
    }

    /// Like [`CounterSet::evaluate`], without allocating per call: `buffer` is reused between
    /// calls, and `visit` receives each requested counter's name, shape and values (in request
    /// order), borrowed from it. For merging many dispatches.
    pub fn evaluate_each<S: AsRef<[u64]>>(
        &self,
        samples: &[S],
        buffer: &mut Vec<f64>,
        mut visit: impl FnMut(&str, &Shape, &[f64]),
    ) -> Result<(), Error> {
        self.run(samples, buffer)?;
        for (name, node) in &self.outputs {
            visit(
                name,
                &self.shapes[*node],
                &buffer[self.offsets[*node]..self.offsets[*node + 1]],
            );
        }
        Ok(())
    }

    /// Fuses full reductions of raw events and places every node's values in the evaluation
    /// buffer; an event read only by fused reductions takes no space.
    fn lay_out(&mut self) {
        for n in 0..self.nodes.len() {
            if let Node::Reduce { op, arg, group } = &self.nodes[n] {
                if let (true, Node::Event(event)) = (group.is_empty(), &self.nodes[*arg]) {
                    self.nodes[n] = Node::ReduceEvent {
                        op: *op,
                        event: *event,
                    };
                }
            }
        }
        let mut needed = vec![false; self.nodes.len()];
        for node in &self.nodes {
            match node {
                Node::Negate(a) | Node::Reduce { arg: a, .. } | Node::Gather { arg: a, .. } => {
                    needed[*a] = true
                }
                Node::Binary { a, b, .. } => {
                    needed[*a] = true;
                    needed[*b] = true;
                }
                Node::Event(_) | Node::Constant(_) | Node::ReduceEvent { .. } => {}
            }
        }
        for (_, node) in &self.outputs {
            needed[*node] = true;
        }
        self.offsets = Vec::with_capacity(self.nodes.len() + 1);
        self.offsets.push(0);
        let mut end = 0;
        for (n, node) in self.nodes.iter().enumerate() {
            if !matches!(node, Node::Event(_)) || needed[n] {
                end += self.shapes[n].size();
            }
            self.offsets.push(end);
        }
    }

    /// Evaluates every node into `buffer` (resized as needed, so callers can reuse it); node
    /// `n`'s values end up at `offsets[n]..offsets[n + 1]`.
    fn run<S: AsRef<[u64]>>(&self, samples: &[S], buffer: &mut Vec<f64>) -> Result<(), Error> {
        self.check_samples(samples)?;
        // Every node overwrites all of its values, so a reused buffer needs no clearing.
        let len = self.offsets[self.nodes.len()];
        if buffer.len() != len {
            buffer.clear();
            buffer.resize(len, 0.0);
        }
        for (n, node) in self.nodes.iter().enumerate() {
            // Operands always precede the node, so they lie in `done`.
            let (done, rest) = buffer.split_at_mut(self.offsets[n]);
            let out = &mut rest[..self.offsets[n + 1] - self.offsets[n]];
            let operand = |i: usize| &done[self.offsets[i]..self.offsets[i + 1]];
            match node {
                Node::Event(i) => {
                    for (slot, &v) in out.iter_mut().zip(samples[*i].as_ref()) {
                        *slot = v as f64;
                    }
                }
                Node::Constant(c) => out[0] = *c,
                Node::Negate(a) => {
                    for (slot, v) in out.iter_mut().zip(operand(*a)) {
                        *slot = -v;
                    }
                }
                Node::Binary { op, a, b, layout } => {
                    combine(*op, operand(*a), operand(*b), layout, out)
                }
                Node::Reduce { op, arg, group, .. } => reduce(*op, operand(*arg), group, out),
                Node::ReduceEvent { op, event } => {
                    out[0] = reduce_samples(*op, samples[*event].as_ref())
                }
                Node::Gather { arg, indices } => {
                    let input = operand(*arg);
                    for (slot, &i) in out.iter_mut().zip(indices) {
                        *slot = input[i as usize];
                    }
                }
            }
        }
        Ok(())
    }

    fn check_samples<S: AsRef<[u64]>>(&self, samples: &[S]) -> Result<(), Error> {
        if samples.len() != self.events.len() {
            return Err(Error::Samples(format!(
                "{} events resolved, samples given for {}",
                self.events.len(),
                samples.len()
            )));
        }
        for (event, given) in self.events.iter().zip(samples) {
            if given.as_ref().len() != event.sample_count() {
                return Err(Error::Samples(format!(
                    "{} event {} has {} samples, {} given",
                    event.event.block,
                    event.event.event,
                    event.sample_count(),
                    given.as_ref().len()
                )));
            }
        }
        Ok(())
    }
}

fn apply(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        // Division by zero yields 0, as in rocprof and rocprofiler-sdk.
        BinaryOp::Div if b == 0.0 => 0.0,
        BinaryOp::Div => a / b,
    }
}

fn combine(op: BinaryOp, a: &[f64], b: &[f64], layout: &Combine, out: &mut [f64]) {
    match layout {
        Combine::Same => {
            for ((slot, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *slot = apply(op, x, y);
            }
        }
        Combine::ScalarLeft => {
            for (slot, &y) in out.iter_mut().zip(b) {
                *slot = apply(op, a[0], y);
            }
        }
        Combine::ScalarRight => {
            for (slot, &x) in out.iter_mut().zip(a) {
                *slot = apply(op, x, b[0]);
            }
        }
        Combine::Indexed(ia, ib) => {
            for ((slot, &i), &j) in out.iter_mut().zip(ia).zip(ib) {
                *slot = apply(op, a[i as usize], b[j as usize]);
            }
        }
    }
}

fn reduce_samples(op: ReduceOp, samples: &[u64]) -> f64 {
    match op {
        ReduceOp::Sum => sum_samples(samples),
        ReduceOp::Avr => sum_samples(samples) / samples.len().max(1) as f64,
        ReduceOp::Min => samples.iter().min().map_or(0.0, |&v| v as f64),
        ReduceOp::Max => samples.iter().max().map_or(0.0, |&v| v as f64),
    }
}

/// The sum of raw samples, with independent partial sums so the loop vectorises.
fn sum_samples(samples: &[u64]) -> f64 {
    let mut partial = [0.0f64; 4];
    let chunks = samples.chunks_exact(4);
    let tail: f64 = chunks.remainder().iter().map(|&v| v as f64).sum();
    for chunk in chunks {
        for (p, &v) in partial.iter_mut().zip(chunk) {
            *p += v as f64;
        }
    }
    partial.iter().sum::<f64>() + tail
}

fn reduce(op: ReduceOp, input: &[f64], group: &[u32], out: &mut [f64]) {
    let init = match op {
        ReduceOp::Sum | ReduceOp::Avr => 0.0,
        ReduceOp::Min => f64::INFINITY,
        ReduceOp::Max => f64::NEG_INFINITY,
    };
    let fold = |acc: f64, value: f64| match op {
        ReduceOp::Sum | ReduceOp::Avr => acc + value,
        ReduceOp::Min => acc.min(value),
        ReduceOp::Max => acc.max(value),
    };
    if out.len() == 1 {
        out[0] = input.iter().fold(init, |acc, &v| fold(acc, v));
    } else {
        out.fill(init);
        for (&value, &g) in input.iter().zip(group) {
            out[g as usize] = fold(out[g as usize], value);
        }
    }
    if op == ReduceOp::Avr {
        let per_group = (input.len() / out.len().max(1)) as f64;
        for slot in out.iter_mut() {
            *slot /= per_group;
        }
    }
}

struct Compiler<'a> {
    catalog: &'a Catalog,
    topology: &'a Topology,
    set: CounterSet,
    event_nodes: HashMap<HwEvent, usize>,
    counter_nodes: HashMap<String, usize>,
    unique: HashMap<String, usize>,
    stack: Vec<String>,
}

impl<'a> Compiler<'a> {
    /// Appends a node, or returns the identical node compiled before (common subexpressions,
    /// such as `reduce(GRBM_GUI_ACTIVE,max)` in many metrics, are evaluated once).
    fn push(&mut self, node: Node, shape: Shape) -> usize {
        let key = format!("{node:?}");
        if let Some(&existing) = self.unique.get(&key) {
            return existing;
        }
        self.unique.insert(key, self.set.nodes.len());
        self.set.nodes.push(node);
        self.set.shapes.push(shape);
        self.set.nodes.len() - 1
    }

    fn counter(&mut self, def: &'a CounterDef) -> Result<usize, Error> {
        if let Some(&node) = self.counter_nodes.get(&def.name) {
            return Ok(node);
        }
        let node = match def.expression() {
            None => {
                let event = self.catalog.basic_event(def, Accumulation::None)?;
                self.event(event)?
            }
            Some(expr) => {
                let expr = expr?;
                if self.stack.contains(&def.name) {
                    let mut path = self.stack.clone();
                    path.push(def.name.clone());
                    return Err(Error::Cycle {
                        counter: self.stack[0].clone(),
                        path,
                    });
                }
                self.stack.push(def.name.clone());
                let node = self.expr(def, expr);
                self.stack.pop();
                node?
            }
        };
        self.counter_nodes.insert(def.name.clone(), node);
        Ok(node)
    }

    fn event(&mut self, event: HwEvent) -> Result<usize, Error> {
        if let Some(&node) = self.event_nodes.get(&event) {
            return Ok(node);
        }
        // `basic_event` only returns events of blocks the catalog has.
        let block = self
            .catalog
            .block(&event.block)
            .ok_or_else(|| Error::Builtin {
                arch: self.catalog.arch().to_string(),
                message: format!("event of unknown block {}", event.block),
            })?;
        let shape = block.shape(self.topology);
        self.set.events.push(ResolvedEvent {
            event: event.clone(),
            instances_per_xcc: block.instances(self.topology),
            shape: shape.clone(),
        });
        let node = self.push(Node::Event(self.set.events.len() - 1), shape);
        self.event_nodes.insert(event, node);
        Ok(node)
    }

    fn expr(&mut self, owner: &'a CounterDef, expr: &'a Expr) -> Result<usize, Error> {
        let misuse = |message: String| Error::Expression {
            counter: owner.name.clone(),
            message,
        };
        match expr {
            Expr::Number(value) => Ok(self.push(Node::Constant(*value), Shape::scalar())),
            Expr::Name(_) | Expr::Accumulate { .. } | Expr::LegacyReduce { .. } => {
                let mut found = None;
                self.catalog
                    .visit_references(owner, expr, &mut |reference| {
                        found = Some(reference);
                        Ok(())
                    })?;
                let reference = found.ok_or_else(|| misuse("empty reference".into()))?;
                let node = match reference {
                    Reference::Counter(def) => self.counter(def)?,
                    Reference::Accumulated(def, resolution) => {
                        let event = self.catalog.accumulated_event(owner, def, resolution)?;
                        self.event(event)?
                    }
                    Reference::Constant(name) => {
                        let value =
                            self.topology
                                .constant(name)
                                .ok_or_else(|| Error::UnknownProperty {
                                    counter: owner.name.clone(),
                                    property: name.to_string(),
                                })?;
                        self.push(Node::Constant(value), Shape::scalar())
                    }
                };
                match expr {
                    Expr::LegacyReduce {
                        op,
                        name,
                        instances,
                    } => self.legacy_reduce(owner, node, *op, name, *instances),
                    _ => Ok(node),
                }
            }
            Expr::Negate(arg) => {
                let arg = self.expr(owner, arg)?;
                let shape = self.set.shapes[arg].clone();
                Ok(self.push(Node::Negate(arg), shape))
            }
            Expr::Binary(op, a, b) => {
                let a = self.expr(owner, a)?;
                let b = self.expr(owner, b)?;
                let (layout, shape) =
                    line_up(&self.set.shapes[a], &self.set.shapes[b]).map_err(misuse)?;
                Ok(self.push(
                    Node::Binary {
                        op: *op,
                        a,
                        b,
                        layout,
                    },
                    shape,
                ))
            }
            Expr::Reduce {
                arg,
                op,
                dimensions,
            } => {
                let arg = self.expr(owner, arg)?;
                let input = self.set.shapes[arg].clone();
                let keep: Vec<(Dimension, u32)> = match dimensions {
                    None => Vec::new(),
                    Some(list) => input
                        .dims()
                        .iter()
                        .filter(|(d, _)| !list.contains(d))
                        .copied()
                        .collect(),
                };
                Ok(self.reduction(arg, *op, &input, Shape::new(keep)))
            }
            Expr::Select { arg, selections } => {
                let arg = self.expr(owner, arg)?;
                let input = self.set.shapes[arg].clone();
                let (indices, shape) = selection(&input, selections).map_err(misuse)?;
                Ok(self.push(Node::Gather { arg, indices }, shape))
            }
        }
    }

    fn reduction(&mut self, arg: usize, op: ReduceOp, input: &Shape, output: Shape) -> usize {
        // A full reduction needs no group map.
        let group = if output.is_scalar() {
            Vec::new()
        } else {
            positions_in(input, &output)
        };
        self.push(Node::Reduce { op, arg, group }, output)
    }

    fn legacy_reduce(
        &mut self,
        owner: &CounterDef,
        node: usize,
        op: ReduceOp,
        name: &str,
        instances: u32,
    ) -> Result<usize, Error> {
        let input = self.set.shapes[node].clone();
        let Some(extent) = input.extent(Dimension::Instance) else {
            return Err(Error::Expression {
                counter: owner.name.clone(),
                message: format!(
                    "{}({name}, {instances}) needs DIMENSION_INSTANCE, but {name} has {input}",
                    op.name()
                ),
            });
        };
        if instances > extent {
            return Err(Error::Expression {
                counter: owner.name.clone(),
                message: format!("{name} has {extent} instances on this GPU, fewer than the {instances} asked for"),
            });
        }
        let positions = (0..instances).collect();
        let (indices, shape) =
            selection(&input, &[(Dimension::Instance, positions)]).map_err(|message| {
                Error::Expression {
                    counter: owner.name.clone(),
                    message,
                }
            })?;
        let gathered = self.push(Node::Gather { arg: node, indices }, shape.clone());
        Ok(self.reduction(gathered, op, &shape, Shape::scalar()))
    }
}

/// How two shapes combine: dimensions are matched by name (a dimension missing on one side is
/// broadcast), and a dimension on both sides must have the same extent.
fn line_up(a: &Shape, b: &Shape) -> Result<(Combine, Shape), String> {
    if a == b {
        return Ok((Combine::Same, a.clone()));
    }
    if a.is_scalar() {
        return Ok((Combine::ScalarLeft, b.clone()));
    }
    if b.is_scalar() {
        return Ok((Combine::ScalarRight, a.clone()));
    }
    let mut dims: Vec<(Dimension, u32)> = a.dims().to_vec();
    for &(dim, extent) in b.dims() {
        match a.extent(dim) {
            Some(e) if e != extent => {
                return Err(format!(
                    "cannot combine values shaped {a} and {b}: {dim} differs"
                ))
            }
            Some(_) => {}
            None => dims.push((dim, extent)),
        }
    }
    let shape = Shape::new(dims);
    let layout = Combine::Indexed(positions_in(&shape, a), positions_in(&shape, b));
    Ok((layout, shape))
}

/// For every position of `shape`, the flat index in `operand` of the position with the same
/// coordinates on the dimensions both have (dimensions `operand` lacks are ignored).
fn positions_in(shape: &Shape, operand: &Shape) -> Vec<u32> {
    let strides = operand.strides();
    (0..shape.size())
        .map(|i| {
            shape
                .dims()
                .iter()
                .zip(shape.coordinates(i))
                .filter_map(|((d, _), c)| {
                    let k = operand.dims().iter().position(|(o, _)| o == d)?;
                    Some(c as usize * strides[k])
                })
                .sum::<usize>() as u32
        })
        .collect()
}

/// The input index of every output position of a `select`, and the output shape. A dimension
/// selected at one position disappears; selected at several, it keeps one position per
/// selection, in the order written.
fn selection(
    input: &Shape,
    selections: &[(Dimension, Vec<u32>)],
) -> Result<(Vec<u32>, Shape), String> {
    let mut kept: Vec<Vec<u32>> = input
        .dims()
        .iter()
        .map(|(_, n)| (0..*n).collect())
        .collect();
    for (dim, positions) in selections {
        match input.dims().iter().position(|(d, _)| d == dim) {
            Some(k) => {
                let extent = input.dims()[k].1;
                if let Some(bad) = positions.iter().find(|&&p| p >= extent) {
                    return Err(format!(
                        "select position {bad} of {dim} is out of range [0:{}]",
                        extent - 1
                    ));
                }
                kept[k] = positions.clone();
            }
            // A GPU without the dimension has exactly position 0 of it.
            None if positions.iter().all(|&p| p == 0) => {}
            None => {
                return Err(format!(
                    "select on {dim}, which these values ({input}) do not have"
                ))
            }
        }
    }
    let output_dims: Vec<(Dimension, u32)> = input
        .dims()
        .iter()
        .zip(&kept)
        .filter(|((d, _), positions)| {
            !(positions.len() == 1 && selections.iter().any(|(s, _)| s == d))
        })
        .map(|((d, _), positions)| (*d, positions.len() as u32))
        .collect();
    let output = Shape::new(output_dims);
    let strides = input.strides();
    let mut indices = vec![0u32];
    for (positions, &stride) in kept.iter().zip(&strides) {
        indices = indices
            .iter()
            .flat_map(|&base| positions.iter().map(move |&p| base + p * stride as u32))
            .collect();
    }
    Ok((indices, output))
}

//! Evaluation of panel metrics over the dispatches of one kernel.
//!
//! Values follow rocprof-compute's arithmetic so that the panels agree with its `analyze`:
//! per-dispatch values are vectors over the kernel's dispatches, division is IEEE (x/0 is
//! infinite, 0/0 no value), comparisons with no value are false except `!=`, aggregates skip
//! dispatches without a value, and a metric that names a counter the data lacks has no value.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use rtl_pmc_counters::{ArithOp, ChannelIndex, Function, PanelExpr};

use crate::chunked::{self, compare, floored_mod, is_true, least_greatest, trunc, truth};
use crate::quantiles::quantiles;
use crate::{ColumnKind, Metric, PanelSet, Table, TableStyle};

/// The frame of the main per-dispatch counters (the others are named after a level counter).
pub const MAIN_FRAME: &str = "pmc_perf";

/// Per-dispatch values of one kernel: each column has one value per dispatch (NaN where the
/// dispatch has none).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// Column name to values, one per dispatch.
    pub columns: HashMap<String, Vec<f64>>,
    /// The number of dispatches.
    pub rows: usize,
    /// For estimated columns: the error of each dispatch's value (0 where it was measured).
    pub errors: HashMap<String, Vec<f64>>,
}

/// What a kernel's metrics are computed from: the main frame, and for rocprof-compute
/// workloads a frame per level counter (`SQ_LEVEL_WAVES.csv`, ...). Without a level frame, a
/// level metric reads `<LEVEL>_ACCUM` from the main frame.
#[derive(Debug, Clone, Default)]
pub struct KernelData {
    /// Frames by name: [`MAIN_FRAME`] and level counter names.
    pub frames: HashMap<String, Frame>,
    /// Whether level metrics read `<LEVEL>_ACCUM` from the main frame (an rtl-pmc profile)
    /// rather than `SQ_ACCUM_PREV_HIRES` from the level's own frame (a rocprof-compute
    /// workload, where a level without its file has no values).
    pub accumulations_in_main: bool,
}

/// GPU constants by name (`max_sclk`, `cu_per_gpu`, `num_xcd`, `total_l2_chan`, ...).
pub type Constants = BTreeMap<String, f64>;

/// What `$denom` stands for, and the word that replaces `normUnit` in units and titles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalization {
    /// Per wavefront.
    PerWave,
    /// Per GPU cycle of one XCD.
    PerCycle,
    /// Per second.
    PerSecond,
    /// Per kernel (the default).
    PerKernel,
}

impl Normalization {
    /// The key in the definitions' `denominators` (`per_kernel`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Normalization::PerWave => "per_wave",
            Normalization::PerCycle => "per_cycle",
            Normalization::PerSecond => "per_second",
            Normalization::PerKernel => "per_kernel",
        }
    }

    /// Parses a key.
    pub fn parse(text: &str) -> Option<Normalization> {
        [
            Normalization::PerWave,
            Normalization::PerCycle,
            Normalization::PerSecond,
            Normalization::PerKernel,
        ]
        .into_iter()
        .find(|n| n.key() == text)
    }
}

/// One cell of an evaluated table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A fixed label or unit.
    Text(String),
    /// A computed value; `None` when it has none (a missing counter, 0/0, an empty selection).
    Value(Option<f64>),
}

/// One evaluated row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The metric id, `table.row` (`2.1.0`).
    pub id: String,
    /// The metric's name (the channel number in a per-channel table).
    pub name: String,
    /// The cells, in the order of [`EvaluatedTable::headings`] after the name.
    pub cells: Vec<Cell>,
    /// Counters the data lacks for this row (its values are then empty).
    pub missing: Vec<String>,
    /// Per cell, the error a value computed from estimated counters carries (`None` when its
    /// inputs were all measured): each estimated input shifted by its error on every dispatch
    /// at once, the inputs' effects added in quadrature.
    pub errors: Vec<Option<f64>>,
}

/// A table evaluated for one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluatedTable {
    /// The table id.
    pub id: String,
    /// Its title, `normUnit` replaced.
    pub title: String,
    /// Column headings, the name column first.
    pub headings: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
}

/// A value: one for the kernel, or one per dispatch (borrowed from the data where possible).
#[derive(Debug, Clone)]
enum Val<'a> {
    Scalar(f64),
    Series(Cow<'a, [f64]>),
}

fn owned<'a>(values: Vec<f64>) -> Val<'a> {
    Val::Series(Cow::Owned(values))
}

#[derive(Debug, Clone)]
enum Failure {
    Missing(String),
}

struct Context<'a> {
    panels: &'a PanelSet,
    data: &'a KernelData,
    constants: &'a Constants,
    normalization: Normalization,
    /// Variables evaluated once per kernel.
    variables: std::cell::RefCell<HashMap<String, Val<'a>>>,
    /// While propagating errors: the estimated column read shifted by its error.
    shifted: std::cell::RefCell<Option<String>>,
}

/// Expressions parsed once per process: the same definitions serve every kernel and table.
fn parsed_cache() -> &'static Mutex<HashMap<String, Arc<PanelExpr>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<PanelExpr>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Evaluates `table` for one kernel. Expressions that do not parse are reported as errors
/// naming the table and metric.
pub fn evaluate_table(
    panels: &PanelSet,
    table: &Table,
    data: &KernelData,
    constants: &Constants,
    normalization: Normalization,
) -> Result<EvaluatedTable, rtl_pmc_counters::Error> {
    let context = Context {
        panels,
        data,
        constants,
        normalization,
        variables: Default::default(),
        shifted: Default::default(),
    };
    context.table(table)
}

/// Replaces `normUnit` in a unit or title with the normalisation's words.
pub fn normalize_text(text: &str, normalization: Normalization) -> String {
    static UNIT: OnceLock<regex::Regex> = OnceLock::new();
    let unit = UNIT
        .get_or_init(|| regex::Regex::new(r"\((\w*)\s+\+\s+\$normUnit\)").expect("unit pattern"));
    let words = normalization.key().replace('_', " ");
    // "(Req + $normUnit)" is "Req per kernel"; "(per normUnit)" in a title is "(per kernel)".
    let text = unit.replace_all(text, format!("$1 {words}").as_str());
    let text = text.replace("$normUnit", &words);
    text.replace("per normUnit", &words)
        .replace("normUnit", &words)
}

const BOX: [(&str, Function, Option<f64>); 5] = [
    ("Min", Function::AggMin, None),
    ("Q1", Function::AggQuantile, Some(0.25)),
    ("Median", Function::AggMedian, None),
    ("Q3", Function::AggQuantile, Some(0.75)),
    ("Max", Function::AggMax, None),
];

impl<'a> Context<'a> {
    fn table(&self, table: &Table) -> Result<EvaluatedTable, rtl_pmc_counters::Error> {
        let mut headings = vec![table.name_heading.clone()];
        let is_box = table.style == TableStyle::Box;
        if is_box {
            headings.extend(BOX.iter().map(|(h, _, _)| h.to_string()));
        }
        for column in &table.columns {
            if is_box && column.key == "expr" {
                continue;
            }
            headings.push(column.heading.clone());
        }
        let mut rows = Vec::new();
        match &table.per_channel {
            Some(range) => {
                let count = self
                    .scalar_of(&table.id, range, None, None)?
                    .unwrap_or(0.0)
                    .max(0.0) as u32;
                let metric = table.metrics.first();
                for channel in 0..count {
                    let Some(metric) = metric else { break };
                    let mut row = self.row(table, metric, Some(channel), is_box)?;
                    row.id = format!("{}.{channel}", table.id);
                    row.name = channel.to_string();
                    rows.push(row);
                }
            }
            None => {
                for (index, metric) in table.metrics.iter().enumerate() {
                    let mut row = self.row(table, metric, None, is_box)?;
                    row.id = format!("{}.{index}", table.id);
                    rows.push(row);
                }
            }
        }
        Ok(EvaluatedTable {
            id: table.id.clone(),
            title: normalize_text(&table.title, self.normalization),
            headings,
            rows,
        })
    }

    fn row(
        &self,
        table: &Table,
        metric: &Metric,
        channel: Option<u32>,
        is_box: bool,
    ) -> Result<Row, rtl_pmc_counters::Error> {
        let mut cells = Vec::new();
        let mut errors = Vec::new();
        let mut missing = Vec::new();
        let level = metric.level.as_deref();
        // A box table's five aggregates share one evaluation of their expression, and so do
        // a row's aggregates of one expression (`agg_avg(x)`, `agg_min(x)`, `agg_max(x)`).
        let memo: std::cell::RefCell<Option<AggregateMemo<'a>>> = Default::default();
        let mut value = |text: &str, wrap: Option<(Function, Option<f64>)>| {
            let expr = self.parse(&metric.name, text)?;
            let compute = || {
                let shifted = self.shifted.borrow().is_some();
                let (inner, wrap) = match (shifted, wrap, &*expr) {
                    (true, _, _) => (None, wrap),
                    (false, Some(_), e) => (Some(e), wrap),
                    (false, None, e) => match aggregate_of_one(e) {
                        Some((function, inner)) => (Some(inner), Some((function, None))),
                        None => (None, None),
                    },
                };
                let Some(inner) = inner else {
                    return self.eval(&expr, level, channel).map(|v| wrapped(v, wrap));
                };
                // Evaluated once for all of its aggregates, which read it in place.
                let mut memo = memo.borrow_mut();
                if !matches!(&*memo, Some(m) if m.expr == *inner) {
                    *memo = None;
                }
                let memo = memo.get_or_insert_with(|| AggregateMemo {
                    expr: inner.clone(),
                    value: self.eval(inner, level, channel),
                    quartiles: None,
                    extremes: None,
                });
                match &memo.value {
                    Ok(v) => Ok(box_aggregate(
                        v,
                        wrap,
                        &mut memo.quartiles,
                        &mut memo.extremes,
                    )),
                    Err(e) => Err(e.clone()),
                }
            };
            Ok::<_, rtl_pmc_counters::Error>(match compute() {
                Ok(v) => {
                    let mut estimated = Vec::new();
                    self.estimated_inputs(&expr, level, &mut estimated);
                    let error = (!estimated.is_empty() && v.is_finite()).then(|| {
                        let mut sum = 0.0;
                        for name in estimated {
                            *self.shifted.borrow_mut() = Some(name);
                            if let Ok(w) = compute() {
                                sum += (w - v) * (w - v);
                            }
                        }
                        *self.shifted.borrow_mut() = None;
                        sum.sqrt()
                    });
                    (Cell::Value(finite_or_inf(v)), error)
                }
                Err(Failure::Missing(name)) => {
                    if !missing.contains(&name) {
                        missing.push(name);
                    }
                    (Cell::Value(None), None)
                }
            })
        };
        if is_box {
            let text = metric
                .cells
                .get("expr")
                .map(String::as_str)
                .unwrap_or("none");
            for (_, f, q) in BOX {
                let (cell, error) = value(text, Some((f, q)))?;
                cells.push(cell);
                errors.push(error);
            }
        }
        for column in &table.columns {
            if is_box && column.key == "expr" {
                continue;
            }
            let cell = metric.cells.get(&column.key);
            let (cell, error) = match (column.kind, cell) {
                (_, None) => (Cell::Text(String::new()), None),
                (ColumnKind::Text, Some(text)) => (Cell::Text(text.clone()), None),
                (ColumnKind::Unit, Some(text)) => {
                    (Cell::Text(normalize_text(text, self.normalization)), None)
                }
                (ColumnKind::Expr, Some(text)) => value(text, None)?,
            };
            cells.push(cell);
            errors.push(error);
        }
        Ok(Row {
            id: String::new(),
            name: metric.name.clone(),
            cells,
            missing,
            errors,
        })
    }

    fn parse(&self, metric: &str, text: &str) -> Result<Arc<PanelExpr>, rtl_pmc_counters::Error> {
        let cache = parsed_cache();
        if let Some(e) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(text) {
            return Ok(Arc::clone(e));
        }
        let e = Arc::new(PanelExpr::parse(metric, text)?);
        cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(text.to_string(), Arc::clone(&e));
        Ok(e)
    }

    fn scalar_of(
        &self,
        what: &str,
        text: &str,
        level: Option<&str>,
        channel: Option<u32>,
    ) -> Result<Option<f64>, rtl_pmc_counters::Error> {
        let e = self.parse(what, text)?;
        Ok(match self.eval(&e, level, channel) {
            Ok(v) => finite_or_inf(scalar(v)),
            Err(_) => None,
        })
    }

    fn frame(&self, level: Option<&str>) -> Option<&'a Frame> {
        match level {
            Some(_) if self.data.accumulations_in_main => self.data.frames.get(MAIN_FRAME),
            Some(l) => self.data.frames.get(l),
            None => self.data.frames.get(MAIN_FRAME),
        }
    }

    fn column(&self, name: &str, level: Option<&str>) -> Result<Val<'a>, Failure> {
        let frame = self
            .frame(level)
            .ok_or_else(|| Failure::Missing(name.to_string()))?;
        // Without a frame of its own, a level metric reads its level counter's accumulation.
        let renamed;
        let name = match level {
            Some(l) if name == "SQ_ACCUM_PREV_HIRES" && self.data.accumulations_in_main => {
                renamed = format!("{l}_ACCUM");
                renamed.as_str()
            }
            _ => name,
        };
        let values = frame
            .columns
            .get(name)
            .ok_or_else(|| Failure::Missing(name.to_string()))?;
        let shifted = self.shifted.borrow();
        match (shifted.as_deref(), frame.errors.get(name)) {
            (Some(s), Some(errors)) if s == name => Ok(owned(
                values.iter().zip(errors).map(|(v, e)| v + e).collect(),
            )),
            _ => Ok(Val::Series(Cow::Borrowed(values.as_slice()))),
        }
    }

    /// The estimated columns `expr` reads, directly or through variables (which read the
    /// main frame).
    fn estimated_inputs(&self, expr: &PanelExpr, level: Option<&str>, out: &mut Vec<String>) {
        let mut seen = Vec::new();
        self.collect_estimated(expr, self.frame(level), out, &mut seen);
    }

    fn collect_estimated(
        &self,
        expr: &PanelExpr,
        frame: Option<&Frame>,
        out: &mut Vec<String>,
        seen: &mut Vec<String>,
    ) {
        let mut variables = Vec::new();
        expr.walk(&mut |e| {
            let name = match e {
                PanelExpr::Name(n) => n.clone(),
                PanelExpr::Indexed(n, ChannelIndex::Fixed(i)) => format!("{n}[{i}]"),
                PanelExpr::Variable(v) => {
                    variables.push(v.clone());
                    return;
                }
                _ => return,
            };
            if frame.is_some_and(|f| f.errors.contains_key(&name)) && !out.contains(&name) {
                out.push(name);
            }
        });
        for v in variables {
            if seen.contains(&v) {
                continue;
            }
            seen.push(v.clone());
            let text = match v.as_str() {
                "denom" => self.panels.denominators.get(self.normalization.key()),
                _ => self.panels.variables.get(&v),
            };
            if let Some(inner) = text.and_then(|t| self.parse(&v, t).ok()) {
                self.collect_estimated(&inner, self.data.frames.get(MAIN_FRAME), out, seen);
            }
        }
    }

    fn variable(&self, name: &str) -> Result<Val<'a>, Failure> {
        if let Some(v) = self.constants.get(name) {
            return Ok(Val::Scalar(*v));
        }
        if name == "denom" {
            let text = self
                .panels
                .denominators
                .get(self.normalization.key())
                .ok_or_else(|| Failure::Missing("$denom".into()))?;
            let e = self
                .parse("$denom", text)
                .map_err(|_| Failure::Missing("$denom".into()))?;
            return self.eval(&e, None, None);
        }
        let shifting = self.shifted.borrow().is_some();
        if let Some(v) = self.variables.borrow().get(name).filter(|_| !shifting) {
            return Ok(v.clone());
        }
        let text = self
            .panels
            .variables
            .get(name)
            .ok_or_else(|| Failure::Missing(format!("${name}")))?;
        let e = self
            .parse(name, text)
            .map_err(|_| Failure::Missing(format!("${name}")))?;
        // Variables are computed from the main counters, whatever the metric's level.
        let v = self.eval(&e, None, None)?;
        if !shifting {
            self.variables
                .borrow_mut()
                .insert(name.to_string(), v.clone());
        }
        Ok(v)
    }

    /// The value of `e`: its element-wise steps done chunk by chunk (see [`chunked`]), a step
    /// at a time when its series differ in length or an input is shifted by its error.
    fn eval(
        &self,
        e: &PanelExpr,
        level: Option<&str>,
        channel: Option<u32>,
    ) -> Result<Val<'a>, Failure> {
        let leaf = matches!(
            e,
            PanelExpr::Number(_)
                | PanelExpr::None
                | PanelExpr::Name(_)
                | PanelExpr::Indexed(..)
                | PanelExpr::Variable(_)
        );
        if leaf || self.shifted.borrow().is_some() {
            return self.steps(e, level, channel);
        }
        let mut inputs = Vec::new();
        let step = self.chunk_steps(e, level, channel, &mut inputs)?;
        let mut rows = None;
        for input in &inputs {
            if let Val::Series(s) = input {
                match rows {
                    Some(n) if n != s.len() => return self.steps(e, level, channel),
                    _ => rows = Some(s.len()),
                }
            }
        }
        let inputs: Vec<chunked::Input<'_>> = inputs
            .iter()
            .map(|v| match v {
                Val::Scalar(x) => chunked::Input::Scalar(*x),
                Val::Series(s) => chunked::Input::Series(s),
            })
            .collect();
        Ok(match chunked::evaluate(&step, &inputs, rows) {
            chunked::Value::Scalar(x) => Val::Scalar(x),
            chunked::Value::Series(s) => owned(s),
        })
    }

    /// `e` as steps over its inputs, which are evaluated (in the order [`Context::steps`]
    /// evaluates them) and appended to `inputs`; an aggregate is an input.
    fn chunk_steps(
        &self,
        e: &PanelExpr,
        level: Option<&str>,
        channel: Option<u32>,
        inputs: &mut Vec<Val<'a>>,
    ) -> Result<chunked::Step, Failure> {
        use chunked::{Binary, Step, Unary};
        let sub = |e: &PanelExpr, inputs: &mut Vec<Val<'a>>| {
            self.chunk_steps(e, level, channel, inputs).map(Box::new)
        };
        Ok(match e {
            PanelExpr::Negate(a) => Step::Unary(Unary::Negate, sub(a, inputs)?),
            PanelExpr::Not(a) => Step::Unary(Unary::Not, sub(a, inputs)?),
            PanelExpr::Arith(op, a, b) => {
                Step::Binary(Binary::Arith(*op), sub(a, inputs)?, sub(b, inputs)?)
            }
            PanelExpr::Compare(op, a, b) => {
                Step::Binary(Binary::Compare(*op), sub(a, inputs)?, sub(b, inputs)?)
            }
            PanelExpr::And(parts) | PanelExpr::Or(parts) => {
                let op = match e {
                    PanelExpr::And(_) => Binary::And,
                    _ => Binary::Or,
                };
                let mut acc = sub(&parts[0], inputs)?;
                for p in &parts[1..] {
                    acc = Box::new(Step::Binary(op, acc, sub(p, inputs)?));
                }
                *acc
            }
            PanelExpr::If(c, t, f) => Step::Pick(sub(c, inputs)?, sub(t, inputs)?, sub(f, inputs)?),
            PanelExpr::Call(function, args) if !function.is_aggregate() => {
                let a = sub(&args[0], inputs)?;
                let b = match args.get(1) {
                    Some(b) => Some(sub(b, inputs)?),
                    None => None,
                };
                let b_or_none = |b: Option<Box<Step>>, inputs: &mut Vec<Val<'a>>| {
                    b.unwrap_or_else(|| Box::new(input(inputs, Val::Scalar(f64::NAN))))
                };
                match function {
                    Function::Int => Step::Unary(Unary::Int, a),
                    Function::Round => {
                        // The digits are the second argument's value (its first, for a series).
                        let digits = match b.as_deref() {
                            Some(Step::Input(i)) => match &inputs[*i] {
                                Val::Scalar(x) => *x,
                                Val::Series(s) => s.first().copied().unwrap_or(f64::NAN),
                            },
                            Some(_) => return Ok(input(inputs, self.steps(e, level, channel)?)),
                            None => f64::NAN,
                        };
                        Step::Unary(Unary::Round(10f64.powi(digits as i32)), a)
                    }
                    Function::Mod => {
                        Step::Binary(Binary::Arith(ArithOp::Mod), a, b_or_none(b, inputs))
                    }
                    Function::Least => Step::Binary(Binary::Least, a, b_or_none(b, inputs)),
                    Function::Greatest => Step::Binary(Binary::Greatest, a, b_or_none(b, inputs)),
                    _ => *a,
                }
            }
            _ => return Ok(input(inputs, self.steps(e, level, channel)?)),
        })
    }

    /// The value of `e`, a step at a time, each step a whole series.
    fn steps(
        &self,
        e: &PanelExpr,
        level: Option<&str>,
        channel: Option<u32>,
    ) -> Result<Val<'a>, Failure> {
        Ok(match e {
            PanelExpr::Number(n) => Val::Scalar(*n),
            PanelExpr::None => Val::Scalar(f64::NAN),
            PanelExpr::Name(name) => match name.as_str() {
                "start_ns" => self.column("Start_Timestamp", None)?,
                "end_ns" => self.column("End_Timestamp", None)?,
                _ => self.column(name, level)?,
            },
            PanelExpr::Indexed(name, index) => {
                let i = match index {
                    ChannelIndex::Fixed(i) => *i,
                    ChannelIndex::Row => channel.unwrap_or(0),
                };
                self.column(&format!("{name}[{i}]"), level)?
            }
            PanelExpr::Variable(name) => self.variable(name)?,
            PanelExpr::Negate(a) => map1(self.eval(a, level, channel)?, |x| -x),
            PanelExpr::Not(a) => map1(self.eval(a, level, channel)?, |x| truth(x == 0.0)),
            PanelExpr::Arith(op, a, b) => {
                let (a, b) = (self.eval(a, level, channel)?, self.eval(b, level, channel)?);
                let op = *op;
                map2(a, b, move |x, y| match op {
                    ArithOp::Add => x + y,
                    ArithOp::Sub => x - y,
                    ArithOp::Mul => x * y,
                    ArithOp::Div => x / y,
                    ArithOp::Mod => floored_mod(x, y),
                })
            }
            PanelExpr::Compare(op, a, b) => {
                let (a, b) = (self.eval(a, level, channel)?, self.eval(b, level, channel)?);
                let op = *op;
                map2(a, b, move |x, y| truth(compare(op, x, y)))
            }
            PanelExpr::And(parts) | PanelExpr::Or(parts) => {
                let is_and = matches!(e, PanelExpr::And(_));
                let mut acc = self.eval(&parts[0], level, channel)?;
                for p in &parts[1..] {
                    let v = self.eval(p, level, channel)?;
                    acc = map2(acc, v, |x, y| {
                        let (x, y) = (is_true(x), is_true(y));
                        truth(if is_and { x && y } else { x || y })
                    });
                }
                acc
            }
            PanelExpr::If(c, t, f) => {
                let c = self.eval(c, level, channel)?;
                let t = self.eval(t, level, channel)?;
                let f = self.eval(f, level, channel)?;
                where3(c, t, f)
            }
            PanelExpr::Call(function, args) => {
                let a = self.eval(&args[0], level, channel)?;
                let b = match args.get(1) {
                    Some(b) => Some(self.eval(b, level, channel)?),
                    None => None,
                };
                call(*function, a, b)
            }
        })
    }
}

/// An expression evaluated once for the aggregates a row takes of it (a box table's five).
struct AggregateMemo<'a> {
    expr: PanelExpr,
    value: Result<Val<'a>, Failure>,
    /// Its quartiles, computed together when the first is asked for.
    quartiles: Option<[f64; 3]>,
    /// Its least and greatest values, found in one pass when the first is asked for.
    extremes: Option<[f64; 2]>,
}

/// The aggregate and its one argument, when `e` is an aggregate of one expression other than
/// a quantile.
fn aggregate_of_one(e: &PanelExpr) -> Option<(Function, &PanelExpr)> {
    match e {
        PanelExpr::Call(function, args)
            if function.is_aggregate() && *function != Function::AggQuantile =>
        {
            match args.as_slice() {
                [inner] => Some((*function, inner)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The quantiles of a box table.
const QUARTILES: [f64; 3] = [0.25, 0.5, 0.75];

/// One of a box table's aggregates of `v`, its quartiles taken from `quartiles` and its
/// least and greatest values from `extremes`.
fn box_aggregate(
    v: &Val<'_>,
    wrap: Option<(Function, Option<f64>)>,
    quartiles: &mut Option<[f64; 3]>,
    extremes: &mut Option<[f64; 2]>,
) -> f64 {
    let Val::Series(s) = v else {
        return wrapped(borrowed(v), wrap);
    };
    let quartile = match wrap {
        Some((Function::AggMedian, _)) => Some(0.5),
        Some((Function::AggQuantile, q)) => q,
        _ => None,
    }
    .and_then(|q| QUARTILES.iter().position(|&x| x == q));
    match (wrap, quartile) {
        (_, Some(at)) => quartiles.get_or_insert_with(|| quantiles(s, QUARTILES))[at],
        (Some((Function::AggMin, _)), _) => {
            extremes.get_or_insert_with(|| least_and_greatest(s))[0]
        }
        (Some((Function::AggMax, _)), _) => {
            extremes.get_or_insert_with(|| least_and_greatest(s))[1]
        }
        _ => wrapped(borrowed(v), wrap),
    }
}

/// The least and greatest values present, in one pass (each as `agg_min` and `agg_max`
/// find it).
fn least_and_greatest(values: &[f64]) -> [f64; 2] {
    let mut count = 0usize;
    let (mut least, mut greatest) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in values.iter().copied().filter(|x| !x.is_nan()) {
        least = least.min(x);
        greatest = greatest.max(x);
        count += 1;
    }
    if count == 0 {
        [f64::NAN; 2]
    } else {
        [least, greatest]
    }
}

/// `v` as an input of a chunked expression.
fn input<'a>(inputs: &mut Vec<Val<'a>>, v: Val<'a>) -> chunked::Step {
    inputs.push(v);
    chunked::Step::Input(inputs.len() - 1)
}

/// A metric's value from its expression's value, through an aggregate if it has one.
fn wrapped(v: Val<'_>, wrap: Option<(Function, Option<f64>)>) -> f64 {
    match wrap {
        None => scalar(v),
        Some((f, q)) => scalar(call(f, v, q.map(Val::Scalar))),
    }
}

/// A value read in place.
fn borrowed<'b>(v: &'b Val<'_>) -> Val<'b> {
    match v {
        Val::Scalar(x) => Val::Scalar(*x),
        Val::Series(s) => Val::Series(Cow::Borrowed(s)),
    }
}

fn finite_or_inf(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

/// A metric's value: a scalar, or the mean of a series left unaggregated.
fn scalar(v: Val<'_>) -> f64 {
    match v {
        Val::Scalar(x) => x,
        Val::Series(s) => aggregate(Function::AggAvg, &s, None),
    }
}

fn map1<'a>(v: Val<'_>, f: impl Fn(f64) -> f64) -> Val<'a> {
    match v {
        Val::Scalar(x) => Val::Scalar(f(x)),
        Val::Series(s) => {
            // A series computed here is rewritten in place rather than copied.
            let mut s = s.into_owned();
            s.iter_mut().for_each(|x| *x = f(*x));
            owned(s)
        }
    }
}

fn map2<'a>(a: Val<'_>, b: Val<'_>, f: impl Fn(f64, f64) -> f64) -> Val<'a> {
    match (a, b) {
        (Val::Scalar(x), Val::Scalar(y)) => Val::Scalar(f(x, y)),
        (Val::Series(s), Val::Scalar(y)) => map1(Val::Series(s), |x| f(x, y)),
        (Val::Scalar(x), Val::Series(s)) => map1(Val::Series(s), |y| f(x, y)),
        (Val::Series(s), Val::Series(t)) => {
            // The result takes the place of an operand computed here; a shorter series has no
            // value past its end.
            let n = s.len().max(t.len());
            let at = |v: &[f64], i: usize| v.get(i).copied().unwrap_or(f64::NAN);
            if s.len() == t.len() {
                // Series of one length (the usual case): element by element, no bounds to test.
                return match (s, t) {
                    (Cow::Owned(mut s), t) => {
                        s.iter_mut().zip(t.iter()).for_each(|(x, &y)| *x = f(*x, y));
                        owned(s)
                    }
                    (s, Cow::Owned(mut t)) => {
                        t.iter_mut().zip(s.iter()).for_each(|(y, &x)| *y = f(x, *y));
                        owned(t)
                    }
                    (s, t) => owned(s.iter().zip(t.iter()).map(|(&x, &y)| f(x, y)).collect()),
                };
            }
            match (s, t) {
                (Cow::Owned(mut s), t) => {
                    s.resize(n, f64::NAN);
                    for (i, x) in s.iter_mut().enumerate() {
                        *x = f(*x, at(&t, i));
                    }
                    owned(s)
                }
                (s, Cow::Owned(mut t)) => {
                    t.resize(n, f64::NAN);
                    for (i, y) in t.iter_mut().enumerate() {
                        *y = f(at(&s, i), *y);
                    }
                    owned(t)
                }
                (s, t) => owned((0..n).map(|i| f(at(&s, i), at(&t, i))).collect()),
            }
        }
    }
}

fn where3<'a>(c: Val<'a>, t: Val<'a>, f: Val<'a>) -> Val<'a> {
    let pick = |c: f64, t: f64, f: f64| if is_true(c) { t } else { f };
    match (&c, &t, &f) {
        (Val::Scalar(c), Val::Scalar(t), Val::Scalar(f)) => Val::Scalar(pick(*c, *t, *f)),
        _ => {
            let n = [&c, &t, &f]
                .iter()
                .map(|v| match v {
                    Val::Series(s) => s.len(),
                    Val::Scalar(_) => 0,
                })
                .max()
                .unwrap_or(0);
            let at = |v: &Val<'_>, i: usize| match v {
                Val::Scalar(x) => *x,
                Val::Series(s) => s.get(i).copied().unwrap_or(f64::NAN),
            };
            if let (Val::Series(cs), Val::Series(ts), Val::Scalar(f)) = (&c, &t, &f) {
                // `if(condition, series, constant)` over series of one length (the usual case).
                if cs.len() == n && ts.len() == n {
                    return owned(
                        cs.iter()
                            .zip(ts.iter())
                            .map(|(&c, &t)| pick(c, t, *f))
                            .collect(),
                    );
                }
            }
            owned(
                (0..n)
                    .map(|i| pick(at(&c, i), at(&t, i), at(&f, i)))
                    .collect(),
            )
        }
    }
}

fn call<'a>(function: Function, a: Val<'a>, b: Option<Val<'a>>) -> Val<'a> {
    let second = || match &b {
        Some(Val::Scalar(x)) => *x,
        Some(Val::Series(s)) => s.first().copied().unwrap_or(f64::NAN),
        None => f64::NAN,
    };
    if function.is_aggregate() {
        let q = (function == Function::AggQuantile).then(second);
        return Val::Scalar(match a {
            Val::Scalar(x) => {
                if function == Function::AggStd {
                    f64::NAN
                } else {
                    x
                }
            }
            Val::Series(s) => aggregate(function, &s, q),
        });
    }
    match function {
        Function::Int => map1(a, trunc),
        Function::Round => {
            let digits = second();
            let scale = 10f64.powi(digits as i32);
            map1(a, move |x| (x * scale).round_ties_even() / scale)
        }
        Function::Mod => map2(a, b.unwrap_or(Val::Scalar(f64::NAN)), floored_mod),
        Function::Least | Function::Greatest => {
            let least = function == Function::Least;
            map2(a, b.unwrap_or(Val::Scalar(f64::NAN)), move |x, y| {
                least_greatest(least, x, y)
            })
        }
        _ => a,
    }
}

/// An aggregate over dispatches, skipping those without a value.
fn aggregate(function: Function, values: &[f64], q: Option<f64>) -> f64 {
    let mut count = 0usize;
    let present = values.iter().copied().filter(|x| !x.is_nan());
    // The count is taken in the same pass as the sum, least or greatest.
    let counted = present.clone().inspect(|_| count += 1);
    let value = match function {
        Function::AggAvg => counted.sum::<f64>() / count as f64,
        Function::AggMin => counted.fold(f64::INFINITY, f64::min),
        Function::AggMax => counted.fold(f64::NEG_INFINITY, f64::max),
        Function::AggStd => {
            let n = counted.count() as f64;
            if n < 2.0 {
                return f64::NAN;
            }
            let mean = present.clone().sum::<f64>() / n;
            return (present.map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt();
        }
        Function::AggMedian => return quantiles(values, [0.5])[0],
        Function::AggQuantile => return quantiles(values, [q.unwrap_or(f64::NAN)])[0],
        _ => return f64::NAN,
    };
    if count == 0 {
        f64::NAN
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{architectures, load};

    #[test]
    fn every_expression_of_every_architecture_parses() {
        for arch in architectures() {
            let set = load(arch).unwrap();
            let mut count = 0;
            for table in set.sections.iter().flat_map(|s| &s.tables) {
                for column in table.columns.iter().filter(|c| c.kind == ColumnKind::Expr) {
                    for metric in &table.metrics {
                        if let Some(text) = metric.cells.get(&column.key) {
                            PanelExpr::parse(&metric.name, text).unwrap();
                            count += 1;
                        }
                    }
                }
                if let Some(range) = &table.per_channel {
                    PanelExpr::parse(&table.id, range).unwrap();
                }
            }
            for (name, text) in set.variables.iter().chain(&set.denominators) {
                PanelExpr::parse(name, text).unwrap();
            }
            assert!(count > 900, "{arch}: {count} expressions");
        }
    }

    fn data(columns: &[(&str, &[f64])]) -> KernelData {
        let frame = Frame {
            rows: columns[0].1.len(),
            columns: columns
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_vec()))
                .collect(),
            errors: HashMap::new(),
        };
        KernelData {
            frames: [(MAIN_FRAME.to_string(), frame)].into_iter().collect(),
            accumulations_in_main: true,
        }
    }

    fn one(text: &str, data: &KernelData) -> Option<f64> {
        let set = load("gfx942").unwrap();
        let constants: Constants = [("num_xcd".to_string(), 8.0)].into_iter().collect();
        let context = Context {
            panels: set,
            data,
            constants: &constants,
            normalization: Normalization::PerKernel,
            variables: Default::default(),
            shifted: Default::default(),
        };
        context.scalar_of("t", text, None, None).unwrap()
    }

    #[test]
    fn arithmetic_follows_rocprof_compute() {
        let d = data(&[("A", &[1.0, 2.0, 3.0, 10.0]), ("Z", &[0.0, 0.0, 0.0, 0.0])]);
        assert_eq!(one("agg_avg(A)", &d), Some(4.0));
        assert_eq!(one("agg_median(A)", &d), Some(2.5));
        assert_eq!(one("agg_quantile(A, 0.25)", &d), Some(1.75));
        assert_eq!(one("agg_std(A)", &d), Some(4.08248290463863));
        assert_eq!(one("agg_avg(A / Z)", &d), Some(f64::INFINITY));
        assert_eq!(one("agg_avg(Z / Z)", &d), None);
        assert_eq!(one("agg_avg(if((Z != 0), A / Z, none))", &d), None);
        assert_eq!(one("agg_avg(if((A > 2), A, 0))", &d), Some(3.25));
        assert_eq!(one("round(2.5, 0) + round(3.5, 0)", &d), Some(6.0));
        assert_eq!(one("mod(-7, 3)", &d), Some(2.0));
        assert_eq!(one("agg_avg($GRBM_GUI_ACTIVE_PER_XCD)", &d), None);
        assert_eq!(one("agg_max(A) / $num_xcd", &d), Some(1.25));
    }

    /// Series of 2,500 dispatches (more than two chunks) with zeros of both signs, missing,
    /// infinite and fractional values.
    fn awkward_data() -> KernelData {
        let special = [0.0, -0.0, f64::NAN, f64::INFINITY, -2.5, 7.5, 1e300];
        let series = |seed: usize| -> Vec<f64> {
            (0..2500)
                .map(|i| {
                    let k = i * 7 + seed * 13;
                    if k.is_multiple_of(5) {
                        special[k % special.len()]
                    } else {
                        (k % 97) as f64 * 0.37 - 11.0
                    }
                })
                .collect()
        };
        let (a, b, c) = (series(1), series(2), series(3));
        data(&[("A", &a), ("B", &b), ("C", &c)])
    }

    #[test]
    fn chunked_steps_give_the_values_of_single_steps() {
        let d = awkward_data();
        let set = load("gfx942").unwrap();
        let constants: Constants = [("num_xcd".to_string(), 8.0)].into_iter().collect();
        let context = Context {
            panels: set,
            data: &d,
            constants: &constants,
            normalization: Normalization::PerKernel,
            variables: Default::default(),
            shifted: Default::default(),
        };
        let texts = [
            "if(A + B != 0, 100 * A / (A + B), none)",
            "-A * B - C / $num_xcd + mod(A, 3) - mod(B, C)",
            "not (A > B) and (C <= 2) or (A == B) and not (C != 1) and B",
            "least(A, B) + greatest(B, 0.5) - int(C / 7) + round(A, 1) + round(B, -1)",
            "if(A >= 0, if(B < 0, none, B), C) + agg_max(A) - agg_avg(B) * 2",
            "1 + 2 * $num_xcd",
            "int(B) / 1 + (A - C) * (A + C)",
        ];
        let bits = |v: &Val<'_>| -> Vec<u64> {
            match v {
                Val::Scalar(x) => vec![x.to_bits()],
                Val::Series(s) => s.iter().map(|x| x.to_bits()).collect(),
            }
        };
        for text in texts {
            let e = PanelExpr::parse("t", text).unwrap();
            let chunked = context.eval(&e, None, None).unwrap();
            // Shifting a column no frame has sends every level step by step, reading the
            // columns as they are.
            *context.shifted.borrow_mut() = Some(String::new());
            let single = context.eval(&e, None, None).unwrap();
            *context.shifted.borrow_mut() = None;
            assert_eq!(bits(&chunked), bits(&single), "{text}");
        }
    }

    #[test]
    fn a_box_s_aggregates_taken_together_are_those_taken_one_by_one() {
        let d = awkward_data();
        let frame = &d.frames[MAIN_FRAME];
        for name in ["A", "B", "C"] {
            let values = &frame.columns[name];
            for len in [0, 1, 2, 3, 4, 5, 10, 2500] {
                let values = &values[..len];
                let one_by_one =
                    QUARTILES.map(|q| aggregate(Function::AggQuantile, values, Some(q)));
                let together = quantiles(values, QUARTILES);
                assert_eq!(one_by_one.map(f64::to_bits), together.map(f64::to_bits));
                // Against the values present sorted, linear between the two nearest.
                let mut sorted: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
                sorted.sort_by(f64::total_cmp);
                let by_sorting = QUARTILES.map(|q| match sorted.len() {
                    0 => f64::NAN,
                    n => {
                        let at = q * (n - 1) as f64;
                        let (lo, hi) = (sorted[at.floor() as usize], sorted[at.ceil() as usize]);
                        lo + (hi - lo) * (at - at.floor())
                    }
                });
                assert_eq!(by_sorting.map(f64::to_bits), together.map(f64::to_bits));
                let extremes = [Function::AggMin, Function::AggMax]
                    .map(|f| aggregate(f, values, None).to_bits());
                assert_eq!(extremes, least_and_greatest(values).map(f64::to_bits));
            }
        }
        assert_eq!(
            aggregate(Function::AggMedian, &[4.0, f64::NAN, 1.0, 3.0], None),
            3.0
        );
    }

    /// A plain table 9.1 of `metrics`, with an expression column of each key.
    fn expr_table(keys: &[String], metrics: Vec<crate::Metric>) -> Table {
        Table {
            id: "9.1".into(),
            title: "t".into(),
            style: TableStyle::Table,
            name_heading: "Metric".into(),
            columns: keys
                .iter()
                .map(|key| crate::Column {
                    key: key.clone(),
                    heading: key.clone(),
                    kind: ColumnKind::Expr,
                })
                .collect(),
            metrics,
            per_channel: None,
        }
    }

    #[test]
    fn estimated_inputs_carry_their_error() {
        let mut frame = Frame {
            rows: 2,
            columns: [
                ("A", vec![10.0, 20.0]),
                ("B", vec![4.0, 4.0]),
                ("C", vec![1.0, 1.0]),
            ]
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect(),
            errors: HashMap::new(),
        };
        frame.errors.insert("A".into(), vec![0.0, 2.0]);
        frame.errors.insert("B".into(), vec![1.0, 1.0]);
        let data = KernelData {
            frames: [(MAIN_FRAME.to_string(), frame)].into_iter().collect(),
            accumulations_in_main: true,
        };
        let cell = |text: &str| crate::Metric {
            name: "m".into(),
            cells: [("avg".to_string(), text.to_string())]
                .into_iter()
                .collect(),
            level: None,
        };
        let table = expr_table(
            &["avg".to_string()],
            vec![cell("agg_avg(A / B)"), cell("agg_avg(C)")],
        );
        let set = load("gfx942").unwrap();
        let t = evaluate_table(
            set,
            &table,
            &data,
            &Constants::new(),
            Normalization::PerKernel,
        )
        .unwrap();
        assert_eq!(t.rows[0].cells, [Cell::Value(Some(3.75))]);
        // A shifted by its error: 4.0 (+0.25); B shifted: 3.0 (-0.75); in quadrature.
        assert_eq!(t.rows[0].errors, [Some(0.625f64.sqrt())]);
        // Measured inputs only: no error.
        assert_eq!(t.rows[1].cells, [Cell::Value(Some(1.0))]);
        assert_eq!(t.rows[1].errors, [None]);
    }

    #[test]
    fn a_row_s_aggregates_of_one_expression_are_those_taken_alone() {
        let d = awkward_data();
        let texts = [
            "agg_avg(A / B)",
            "agg_min(A / B)",
            "agg_max(A / B)",
            "agg_median(A / B)",
            "agg_std(A / B)",
            "agg_avg(C)",
            "agg_max(A / B)",
            "agg_quantile(A / B, 0.25)",
            "agg_min(MISSING)",
            "A + 1",
        ];
        let keys: Vec<String> = (0..texts.len()).map(|i| format!("c{i}")).collect();
        let metric = crate::Metric {
            name: "m".into(),
            cells: keys.iter().cloned().zip(texts.map(String::from)).collect(),
            level: None,
        };
        let table = expr_table(&keys, vec![metric]);
        let set = load("gfx942").unwrap();
        let constants: Constants = [("num_xcd".to_string(), 8.0)].into_iter().collect();
        let row = &evaluate_table(set, &table, &d, &constants, Normalization::PerKernel)
            .unwrap()
            .rows[0];
        let together: Vec<Option<u64>> = row
            .cells
            .iter()
            .map(|c| match c {
                Cell::Value(v) => v.map(f64::to_bits),
                Cell::Text(t) => panic!("text {t}"),
            })
            .collect();
        let alone: Vec<Option<u64>> = texts.iter().map(|t| one(t, &d).map(f64::to_bits)).collect();
        assert_eq!(together, alone);
        assert_eq!(row.missing, ["MISSING"]);
    }

    #[test]
    fn units_and_titles_name_the_normalization() {
        let n = Normalization::PerWave;
        assert_eq!(normalize_text("(Req  + $normUnit)", n), "Req per wave");
        assert_eq!(
            normalize_text("L2 Requests (per normUnit)", n),
            "L2 Requests (per wave)"
        );
        assert_eq!(
            normalize_text(
                "L2-Fabric (128B read requests per normUnit)",
                Normalization::PerKernel
            ),
            "L2-Fabric (128B read requests per kernel)"
        );
        assert_eq!(normalize_text("GB/s", n), "GB/s");
    }
}

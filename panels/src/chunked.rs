//! An expression's element-wise steps done together, a chunk of dispatches at a time.
//!
//! Evaluating `if(A + B != 0, 100 * A / (A + B), none)` a step at a time makes a series of
//! the kernel's length per step and reads each back from memory for the next. Here the
//! expression becomes a tree of [`Step`]s over its inputs (counter series and values for the
//! kernel), and every step is applied to [`CHUNK`] dispatches before the next chunk, in
//! buffers that stay in the processor's cache; only the result is a whole series. Each
//! dispatch's value goes through the same operations in the same order as step by step, so
//! the results are the same to the bit.

use rtl_pmc_counters::{ArithOp, CompareOp};

/// Dispatches evaluated together.
pub(crate) const CHUNK: usize = 1024;

/// An input of an expression: one value for the kernel, or one per dispatch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input<'v> {
    Scalar(f64),
    Series(&'v [f64]),
}

/// An operation on one value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unary {
    Negate,
    Not,
    Int,
    /// Rounding to the digits that `10^digits` gives.
    Round(f64),
}

/// An operation on two values.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Binary {
    Arith(ArithOp),
    Compare(CompareOp),
    And,
    Or,
    Least,
    Greatest,
}

/// A step of an expression: an input (by its position in the inputs) or an operation on
/// steps.
#[derive(Debug)]
pub(crate) enum Step {
    Input(usize),
    Unary(Unary, Box<Step>),
    Binary(Binary, Box<Step>, Box<Step>),
    /// `if(condition, then, otherwise)`.
    Pick(Box<Step>, Box<Step>, Box<Step>),
}

/// The value of `step` for each dispatch, `rows` of them (every series input has that many),
/// or for the kernel when no input is a series.
pub(crate) fn evaluate(step: &Step, inputs: &[Input<'_>], rows: Option<usize>) -> Value {
    let mut spare = Vec::new();
    match rows {
        None => {
            let mut one = [0.0];
            fill(step, inputs, 0, &mut one, &mut spare);
            Value::Scalar(one[0])
        }
        Some(rows) => {
            let mut out = vec![0.0; rows];
            for (at, part) in out.chunks_mut(CHUNK).enumerate() {
                fill(step, inputs, at * CHUNK, part, &mut spare);
            }
            Value::Series(out)
        }
    }
}

/// What [`evaluate`] gives.
pub(crate) enum Value {
    Scalar(f64),
    Series(Vec<f64>),
}

/// An operand as read for one chunk.
enum Operand<'s> {
    Scalar(f64),
    Slice(&'s [f64]),
}

/// Writes the values of `step` for the dispatches from `from` on into `out`; `spare` holds
/// chunk buffers for reuse.
fn fill(
    step: &Step,
    inputs: &[Input<'_>],
    from: usize,
    out: &mut [f64],
    spare: &mut Vec<Vec<f64>>,
) {
    let len = out.len();
    match step {
        Step::Input(i) => match inputs[*i] {
            Input::Scalar(x) => out.fill(x),
            Input::Series(s) => out.copy_from_slice(&s[from..from + len]),
        },
        Step::Unary(op, a) => {
            let x = first_operand(a, inputs, from, out, spare);
            unary(*op, out, x);
        }
        Step::Binary(op, a, b) => {
            let x = first_operand(a, inputs, from, out, spare);
            let mut buffer = spare.pop().unwrap_or_default();
            binary(
                *op,
                out,
                x,
                operand(b, inputs, from, len, spare, &mut buffer),
            );
            spare.push(buffer);
        }
        Step::Pick(c, t, f) => {
            fill(c, inputs, from, out, spare);
            let (mut first, mut second) = (
                spare.pop().unwrap_or_default(),
                spare.pop().unwrap_or_default(),
            );
            let t = operand(t, inputs, from, len, spare, &mut first);
            let f = operand(f, inputs, from, len, spare, &mut second);
            pick(out, t, f);
            spare.extend([first, second]);
        }
    }
}

/// The first operand of an operation whose result goes to `out`: a series input read in place
/// (not copied to `out` first), anything else computed into `out` (then `None`).
fn first_operand<'s>(
    step: &Step,
    inputs: &[Input<'s>],
    from: usize,
    out: &mut [f64],
    spare: &mut Vec<Vec<f64>>,
) -> Option<&'s [f64]> {
    if let Step::Input(i) = step {
        if let Input::Series(s) = inputs[*i] {
            return Some(&s[from..from + out.len()]);
        }
    }
    fill(step, inputs, from, out, spare);
    None
}

/// The values of `step` for `len` dispatches from `from`: an input read in place, anything
/// else computed into `buffer`.
fn operand<'s>(
    step: &Step,
    inputs: &[Input<'s>],
    from: usize,
    len: usize,
    spare: &mut Vec<Vec<f64>>,
    buffer: &'s mut Vec<f64>,
) -> Operand<'s> {
    match step {
        Step::Input(i) => match inputs[*i] {
            Input::Scalar(x) => Operand::Scalar(x),
            Input::Series(s) => Operand::Slice(&s[from..from + len]),
        },
        _ => {
            buffer.resize(len, 0.0);
            fill(step, inputs, from, buffer, spare);
            Operand::Slice(buffer)
        }
    }
}

/// `out[i] = op(x[i])`, `x` being `out` itself when `None`.
fn unary(op: Unary, out: &mut [f64], x: Option<&[f64]>) {
    match op {
        Unary::Negate => each(out, x, |x| -x),
        Unary::Not => each(out, x, |x| truth(x == 0.0)),
        Unary::Int => each(out, x, trunc),
        Unary::Round(scale) => each(out, x, |x| (x * scale).round_ties_even() / scale),
    }
}

/// `out[i] = f(x[i])`, `x` being `out` itself when `None`.
#[inline(always)]
fn each(out: &mut [f64], x: Option<&[f64]>, f: impl Fn(f64) -> f64) {
    match x {
        None => out.iter_mut().for_each(|o| *o = f(*o)),
        Some(x) => out.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x)),
    }
}

/// `out[i] = op(x[i], y[i])`, `x` being `out` itself when `None`.
fn binary(op: Binary, out: &mut [f64], x: Option<&[f64]>, y: Operand<'_>) {
    match op {
        Binary::Arith(ArithOp::Add) => combine(out, x, y, |x, y| x + y),
        Binary::Arith(ArithOp::Sub) => combine(out, x, y, |x, y| x - y),
        Binary::Arith(ArithOp::Mul) => combine(out, x, y, |x, y| x * y),
        Binary::Arith(ArithOp::Div) => combine(out, x, y, |x, y| x / y),
        Binary::Arith(ArithOp::Mod) => combine(out, x, y, floored_mod),
        Binary::Compare(op) => combine(out, x, y, |x, y| truth(compare(op, x, y))),
        Binary::And => combine(out, x, y, |x, y| truth(is_true(x) && is_true(y))),
        Binary::Or => combine(out, x, y, |x, y| truth(is_true(x) || is_true(y))),
        Binary::Least => combine(out, x, y, |x, y| least_greatest(true, x, y)),
        Binary::Greatest => combine(out, x, y, |x, y| least_greatest(false, x, y)),
    }
}

/// `out[i] = f(x[i], y[i])`, written once per kind of operand so that each loop is plain.
#[inline(always)]
fn combine(out: &mut [f64], x: Option<&[f64]>, y: Operand<'_>, f: impl Fn(f64, f64) -> f64) {
    match (x, y) {
        (None, Operand::Scalar(y)) => out.iter_mut().for_each(|x| *x = f(*x, y)),
        (None, Operand::Slice(y)) => out.iter_mut().zip(y).for_each(|(x, &y)| *x = f(*x, y)),
        (Some(x), Operand::Scalar(y)) => {
            out.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x, y));
        }
        (Some(x), Operand::Slice(y)) => {
            let pairs = x.iter().zip(y);
            out.iter_mut()
                .zip(pairs)
                .for_each(|(o, (&x, &y))| *o = f(x, y));
        }
    }
}

fn pick(out: &mut [f64], t: Operand<'_>, f: Operand<'_>) {
    let at = |v: &Operand<'_>, i: usize| match v {
        Operand::Scalar(x) => *x,
        Operand::Slice(s) => s[i],
    };
    for (i, c) in out.iter_mut().enumerate() {
        *c = if is_true(*c) { at(&t, i) } else { at(&f, i) };
    }
}

/// A condition's value: not 0 and not missing.
pub(crate) fn is_true(x: f64) -> bool {
    x != 0.0 && !x.is_nan()
}

pub(crate) fn compare(op: CompareOp, x: f64, y: f64) -> bool {
    match op {
        CompareOp::Eq => x == y,
        CompareOp::Ne => x != y,
        CompareOp::Lt => x < y,
        CompareOp::Le => x <= y,
        CompareOp::Gt => x > y,
        CompareOp::Ge => x >= y,
    }
}

/// `least` or `greatest` of two values; missing if either is.
pub(crate) fn least_greatest(least: bool, x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if least {
        x.min(y)
    } else {
        x.max(y)
    }
}

/// `x` without its fraction (as `f64::trunc`, done here with a conversion).
pub(crate) fn trunc(x: f64) -> f64 {
    if x.abs() < 4_503_599_627_370_496.0 {
        (x as i64 as f64).copysign(x)
    } else {
        x
    }
}

pub(crate) fn truth(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

pub(crate) fn floored_mod(x: f64, y: f64) -> f64 {
    let r = x % y;
    if r != 0.0 && (r < 0.0) != (y < 0.0) {
        r + y
    } else {
        r
    }
}

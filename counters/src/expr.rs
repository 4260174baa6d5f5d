//! The typed syntax tree of derived-counter expressions and its parser (`derived.pest`).

use pest::iterators::Pair;
use pest::Parser;
use pest_derive::Parser;

use crate::dimension::Dimension;
use crate::Error;

#[derive(Parser)]
#[grammar = "derived.pest"]
struct ExpressionParser;

/// A binary arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (x/0 = 0)
    Div,
}

/// How `reduce` combines the values it collapses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Arithmetic mean (spelled `avr`, as in rocprofiler-sdk).
    Avr,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl ReduceOp {
    /// The spelling in expressions: `sum`, `avr`, `min` or `max`.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Avr => "avr",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }

    fn parse(text: &str) -> ReduceOp {
        match text {
            "sum" => ReduceOp::Sum,
            "avr" => ReduceOp::Avr,
            "min" => ReduceOp::Min,
            _ => ReduceOp::Max,
        }
    }
}

/// The resolution of an SQ accumulator (`accumulate(NAME, ...)`); the value is the
/// aqlprofile event flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Accumulation {
    /// The plain event.
    None = 0,
    /// Accumulated every 4 cycles.
    LowRes = 1,
    /// Accumulated every cycle.
    HighRes = 2,
}

/// An expression, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal (integers and decimals alike).
    Number(f64),
    /// A counter or constant name.
    Name(String),
    /// `-e`
    Negate(Box<Expr>),
    /// `a op b`
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `reduce(e, op)` collapses every dimension; `reduce(e, op, [D, ...])` only those listed.
    Reduce {
        /// The reduced expression.
        arg: Box<Expr>,
        /// How values are combined.
        op: ReduceOp,
        /// The dimensions to collapse; `None` collapses all.
        dimensions: Option<Vec<Dimension>>,
    },
    /// `select(e, [D=[i, j:k], ...])` keeps the listed positions (ranges inclusive).
    Select {
        /// The expression selected from.
        arg: Box<Expr>,
        /// Per dimension, the positions kept, in order.
        selections: Vec<(Dimension, Vec<u32>)>,
    },
    /// `accumulate(NAME, resolution)`: the hardware accumulator of a basic SQ counter.
    Accumulate {
        /// The basic counter.
        name: String,
        /// The accumulator resolution.
        resolution: Accumulation,
    },
    /// rocprof v1's `op(NAME, N)`: `op` over instances `0..N` of NAME and all its other dimensions.
    LegacyReduce {
        /// How values are combined.
        op: ReduceOp,
        /// The counter.
        name: String,
        /// The number of instances.
        instances: u32,
    },
}

impl Expr {
    /// Parses `text`, the expression of counter `counter` (named in errors).
    pub fn parse(counter: &str, text: &str) -> Result<Expr, Error> {
        parse_rule(Rule::expression, counter, text, build)
    }

    /// Calls `visit` for every counter or constant name the expression mentions (including
    /// the counters inside `accumulate` and rocprof v1 reductions), in order of appearance.
    pub fn for_each_name<'a>(&'a self, visit: &mut impl FnMut(&'a str)) {
        match self {
            Expr::Number(_) => {}
            Expr::Name(name) | Expr::Accumulate { name, .. } | Expr::LegacyReduce { name, .. } => {
                visit(name)
            }
            Expr::Negate(arg) | Expr::Reduce { arg, .. } | Expr::Select { arg, .. } => {
                arg.for_each_name(visit)
            }
            Expr::Binary(_, a, b) => {
                a.for_each_name(visit);
                b.for_each_name(visit);
            }
        }
    }
}

/// Parses `text` (the expression of `counter`, named in errors) with the grammar's `rule` and
/// builds its tree with `build`; errors give the 1-based column.
pub(crate) fn parse_rule<E>(
    rule: Rule,
    counter: &str,
    text: &str,
    build: impl Fn(Pair<Rule>) -> Result<E, (usize, String)>,
) -> Result<E, Error> {
    let syntax = |column: usize, message: String| Error::Syntax {
        counter: counter.to_string(),
        expression: text.to_string(),
        column,
        message,
    };
    let mut pairs = ExpressionParser::parse(rule, text).map_err(|e| {
        let column = match e.line_col {
            pest::error::LineColLocation::Pos((_, c))
            | pest::error::LineColLocation::Span((_, c), _) => c,
        };
        syntax(column, describe_expected(&e.variant))
    })?;
    let top = pairs.next().and_then(|p| p.into_inner().next());
    let Some(top) = top else {
        return Err(syntax(1, "empty expression".into()));
    };
    build(top).map_err(|(offset, message)| syntax(offset + 1, message))
}

fn describe_expected(variant: &pest::error::ErrorVariant<Rule>) -> String {
    match variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            let mut names: Vec<&str> = positives.iter().filter_map(|r| rule_label(*r)).collect();
            names.sort_unstable();
            names.dedup();
            if names.is_empty() {
                "unexpected input".into()
            } else {
                format!("expected {}", names.join(" or "))
            }
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    }
}

fn rule_label(rule: Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::EOI => "end of expression",
        Rule::sum
        | Rule::product
        | Rule::unary
        | Rule::number
        | Rule::name
        | Rule::reduce
        | Rule::select
        | Rule::accumulate
        | Rule::legacy_reduce
        | Rule::negate => "a value",
        Rule::add_op | Rule::mul_op => "an operator",
        Rule::reduce_op => "sum, avr, min or max",
        Rule::resolution => "NONE, LOW_RES or HIGH_RES",
        Rule::dimension | Rule::dimension_list => "a DIMENSION_ name",
        Rule::selection => "DIMENSION_NAME=[positions]",
        Rule::position | Rule::integer => "an integer",
        _ => return None,
    })
}

type BuildResult = Result<Expr, (usize, String)>;

fn build(pair: Pair<Rule>) -> BuildResult {
    let offset = pair.as_span().start();
    match pair.as_rule() {
        Rule::sum | Rule::product => {
            let mut inner = pair.into_inner();
            let first = inner
                .next()
                .ok_or((offset, "missing operand".to_string()))?;
            let mut acc = build(first)?;
            while let (Some(op), Some(rhs)) = (inner.next(), inner.next()) {
                let op = match op.as_str() {
                    "+" => BinaryOp::Add,
                    "-" => BinaryOp::Sub,
                    "*" => BinaryOp::Mul,
                    _ => BinaryOp::Div,
                };
                acc = Expr::Binary(op, Box::new(acc), Box::new(build(rhs)?));
            }
            Ok(acc)
        }
        Rule::unary => unary(pair, build, |e| Expr::Negate(Box::new(e))),
        Rule::number => number(&pair).map(Expr::Number),
        Rule::name => Ok(Expr::Name(pair.as_str().to_string())),
        Rule::reduce => {
            let mut inner = pair.into_inner();
            let arg = next_expr(&mut inner, offset)?;
            let op = ReduceOp::parse(inner.next().map(|p| p.as_str()).unwrap_or("sum"));
            let dimensions = match inner.next() {
                Some(list) => Some(
                    list.into_inner()
                        .map(dimension)
                        .collect::<Result<Vec<_>, _>>()?,
                ),
                None => None,
            };
            Ok(Expr::Reduce {
                arg: Box::new(arg),
                op,
                dimensions,
            })
        }
        Rule::select => {
            let mut inner = pair.into_inner();
            let arg = next_expr(&mut inner, offset)?;
            let mut selections = Vec::new();
            for selection in inner {
                let mut parts = selection.into_inner();
                let dim_pair = parts
                    .next()
                    .ok_or((offset, "missing dimension".to_string()))?;
                let dim = dimension(dim_pair)?;
                let mut positions = Vec::new();
                for position in parts {
                    let start = position.as_span().start();
                    let bounds: Vec<u32> = position
                        .into_inner()
                        .map(|n| {
                            n.as_str().parse::<u32>().map_err(|_| {
                                (n.as_span().start(), "position too large".to_string())
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    match bounds[..] {
                        [single] => positions.push(single),
                        [low, high] if low <= high => positions.extend(low..=high),
                        [low, high] => return Err((start, format!("empty range {low}:{high}"))),
                        _ => return Err((start, "bad position".to_string())),
                    }
                }
                if selections.iter().any(|(d, _)| *d == dim) {
                    return Err((offset, format!("{dim} is selected twice")));
                }
                selections.push((dim, positions));
            }
            Ok(Expr::Select {
                arg: Box::new(arg),
                selections,
            })
        }
        Rule::accumulate => {
            let mut inner = pair.into_inner();
            let name = inner
                .next()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let resolution = match inner.next().map(|p| p.as_str()) {
                Some("LOW_RES") => Accumulation::LowRes,
                Some("HIGH_RES") => Accumulation::HighRes,
                _ => Accumulation::None,
            };
            Ok(Expr::Accumulate { name, resolution })
        }
        Rule::legacy_reduce => {
            let mut inner = pair.into_inner();
            let op = ReduceOp::parse(inner.next().map(|p| p.as_str()).unwrap_or("sum"));
            let name = inner
                .next()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let count = inner
                .next()
                .ok_or((offset, "missing instance count".to_string()))?;
            let instances = count
                .as_str()
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or((
                    count.as_span().start(),
                    format!("bad instance count '{}'", count.as_str()),
                ))?;
            Ok(Expr::LegacyReduce {
                op,
                name,
                instances,
            })
        }
        other => Err((offset, format!("unexpected {other:?}"))),
    }
}

/// A unary rule's operand under its leading `-` signs, for both expression languages.
pub(crate) fn unary<E>(
    pair: Pair<Rule>,
    build: impl Fn(Pair<Rule>) -> Result<E, (usize, String)>,
    negate: impl Fn(E) -> E,
) -> Result<E, (usize, String)> {
    let offset = pair.as_span().start();
    let mut negations = 0;
    let mut value = None;
    for part in pair.into_inner() {
        if part.as_rule() == Rule::negate {
            negations += 1;
        } else {
            value = Some(build(part)?);
        }
    }
    let mut expr = value.ok_or((offset, "missing operand".to_string()))?;
    for _ in 0..negations {
        expr = negate(expr);
    }
    Ok(expr)
}

/// A number literal's value.
pub(crate) fn number(pair: &Pair<Rule>) -> Result<f64, (usize, String)> {
    pair.as_str().parse::<f64>().map_err(|_| {
        (
            pair.as_span().start(),
            format!("'{}' is not a number", pair.as_str()),
        )
    })
}

fn next_expr(inner: &mut pest::iterators::Pairs<Rule>, offset: usize) -> BuildResult {
    build(
        inner
            .next()
            .ok_or((offset, "missing argument".to_string()))?,
    )
}

fn dimension(pair: Pair<Rule>) -> Result<Dimension, (usize, String)> {
    Dimension::from_name(pair.as_str()).ok_or_else(|| {
        let known: Vec<&str> = Dimension::ALL.iter().map(|d| d.name()).collect();
        (
            pair.as_span().start(),
            format!(
                "unknown dimension '{}' (known: {})",
                pair.as_str(),
                known.join(", ")
            ),
        )
    })
}

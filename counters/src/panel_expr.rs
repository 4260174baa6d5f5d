//! Metric expressions of analysis panels: the derived-counter arithmetic over per-dispatch
//! values, extended with comparisons, conditionals, `none`, GPU constants (`$name`), L2
//! channel indexing and aggregates over a kernel's dispatches (`panel_expression` in
//! `derived.pest`).

use pest::iterators::Pair;

use crate::expr::{number, parse_rule, unary, Rule};
use crate::Error;

/// An arithmetic operator of a panel expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (IEEE: x/0 is ±inf, 0/0 is not a number, as in rocprof-compute)
    Div,
    /// `%`, the floored remainder (the sign of the divisor)
    Mod,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A function of a panel expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// `agg_avg(e)`: the mean over the kernel's dispatches (missing values skipped).
    AggAvg,
    /// `agg_min(e)`
    AggMin,
    /// `agg_max(e)`
    AggMax,
    /// `agg_median(e)`
    AggMedian,
    /// `agg_std(e)`: the sample standard deviation.
    AggStd,
    /// `agg_quantile(e, q)`: linear interpolation between the closest ranks.
    AggQuantile,
    /// `least(a, b)`
    Least,
    /// `greatest(a, b)`
    Greatest,
    /// `round(e, digits)`: half to even.
    Round,
    /// `int(e)`: towards zero.
    Int,
    /// `mod(a, b)`: the floored remainder.
    Mod,
}

impl Function {
    fn parse(text: &str) -> Function {
        match text {
            "agg_avg" => Function::AggAvg,
            "agg_min" => Function::AggMin,
            "agg_max" => Function::AggMax,
            "agg_median" => Function::AggMedian,
            "agg_std" => Function::AggStd,
            "agg_quantile" => Function::AggQuantile,
            "least" => Function::Least,
            "greatest" => Function::Greatest,
            "round" => Function::Round,
            "int" => Function::Int,
            _ => Function::Mod,
        }
    }

    /// The number of arguments the function takes.
    pub fn arity(self) -> usize {
        match self {
            Function::AggQuantile
            | Function::Least
            | Function::Greatest
            | Function::Round
            | Function::Mod => 2,
            _ => 1,
        }
    }

    /// Whether it collapses a kernel's dispatches into one value.
    pub fn is_aggregate(self) -> bool {
        matches!(
            self,
            Function::AggAvg
                | Function::AggMin
                | Function::AggMax
                | Function::AggMedian
                | Function::AggStd
                | Function::AggQuantile
        )
    }
}

/// Which L2 channel an indexed counter names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelIndex {
    /// A fixed channel, `NAME[3]`.
    Fixed(u32),
    /// The channel of a per-channel table's row, `NAME[channel]`.
    Row,
}

/// A panel metric expression, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum PanelExpr {
    /// A literal.
    Number(f64),
    /// `none`: no value.
    None,
    /// A counter or per-dispatch field (`start_ns`, `end_ns`).
    Name(String),
    /// `NAME[i]` or `NAME[channel]`.
    Indexed(String, ChannelIndex),
    /// `$name`: a GPU constant or a panel variable.
    Variable(String),
    /// `-e`
    Negate(Box<PanelExpr>),
    /// `not e`
    Not(Box<PanelExpr>),
    /// `a op b`
    Arith(ArithOp, Box<PanelExpr>, Box<PanelExpr>),
    /// `a cmp b`
    Compare(CompareOp, Box<PanelExpr>, Box<PanelExpr>),
    /// `a and b and ...`
    And(Vec<PanelExpr>),
    /// `a or b or ...`
    Or(Vec<PanelExpr>),
    /// `if(condition, then, else)`
    If(Box<PanelExpr>, Box<PanelExpr>, Box<PanelExpr>),
    /// `function(args...)`
    Call(Function, Vec<PanelExpr>),
}

impl PanelExpr {
    /// Parses `text`, the expression of metric `metric` (named in errors).
    pub fn parse(metric: &str, text: &str) -> Result<PanelExpr, Error> {
        parse_rule(Rule::panel_expression, metric, text, build)
    }

    /// Calls `visit` for every node, parents before children.
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(&'a PanelExpr)) {
        visit(self);
        match self {
            PanelExpr::Number(_)
            | PanelExpr::None
            | PanelExpr::Name(_)
            | PanelExpr::Indexed(..)
            | PanelExpr::Variable(_) => {}
            PanelExpr::Negate(a) | PanelExpr::Not(a) => a.walk(visit),
            PanelExpr::Arith(_, a, b) | PanelExpr::Compare(_, a, b) => {
                a.walk(visit);
                b.walk(visit);
            }
            PanelExpr::And(v) | PanelExpr::Or(v) | PanelExpr::Call(_, v) => {
                v.iter().for_each(|e| e.walk(visit))
            }
            PanelExpr::If(c, t, e) => {
                c.walk(visit);
                t.walk(visit);
                e.walk(visit);
            }
        }
    }
}

type Built = Result<PanelExpr, (usize, String)>;

fn build(pair: Pair<Rule>) -> Built {
    let offset = pair.as_span().start();
    let rule = pair.as_rule();
    match rule {
        Rule::disjunction | Rule::conjunction => {
            let mut parts: Vec<PanelExpr> = pair
                .into_inner()
                .filter(|p| !matches!(p.as_rule(), Rule::kw_and | Rule::kw_or))
                .map(build)
                .collect::<Result<_, _>>()?;
            if parts.len() == 1 {
                return Ok(parts.remove(0));
            }
            Ok(if rule == Rule::disjunction {
                PanelExpr::Or(parts)
            } else {
                PanelExpr::And(parts)
            })
        }
        Rule::inversion => {
            let mut nots = 0;
            let mut value = None;
            for part in pair.into_inner() {
                if part.as_rule() == Rule::not_op {
                    nots += 1;
                } else {
                    value = Some(build(part)?);
                }
            }
            let mut e = value.ok_or((offset, "missing operand".to_string()))?;
            for _ in 0..nots {
                e = PanelExpr::Not(Box::new(e));
            }
            Ok(e)
        }
        Rule::comparison => {
            let mut inner = pair.into_inner();
            let left = build(
                inner
                    .next()
                    .ok_or((offset, "missing operand".to_string()))?,
            )?;
            match (inner.next(), inner.next()) {
                (Some(op), Some(right)) => {
                    let op = match op.as_str() {
                        "==" => CompareOp::Eq,
                        "!=" => CompareOp::Ne,
                        "<" => CompareOp::Lt,
                        "<=" => CompareOp::Le,
                        ">" => CompareOp::Gt,
                        _ => CompareOp::Ge,
                    };
                    Ok(PanelExpr::Compare(
                        op,
                        Box::new(left),
                        Box::new(build(right)?),
                    ))
                }
                _ => Ok(left),
            }
        }
        Rule::panel_sum | Rule::panel_product => {
            let mut inner = pair.into_inner();
            let mut acc = build(
                inner
                    .next()
                    .ok_or((offset, "missing operand".to_string()))?,
            )?;
            while let (Some(op), Some(rhs)) = (inner.next(), inner.next()) {
                let op = match op.as_str() {
                    "+" => ArithOp::Add,
                    "-" => ArithOp::Sub,
                    "*" => ArithOp::Mul,
                    "/" => ArithOp::Div,
                    _ => ArithOp::Mod,
                };
                acc = PanelExpr::Arith(op, Box::new(acc), Box::new(build(rhs)?));
            }
            Ok(acc)
        }
        Rule::panel_unary => unary(pair, build, |e| PanelExpr::Negate(Box::new(e))),
        Rule::number => number(&pair).map(PanelExpr::Number),
        Rule::none => Ok(PanelExpr::None),
        Rule::name => Ok(PanelExpr::Name(pair.as_str().to_string())),
        Rule::variable => Ok(PanelExpr::Variable(pair.as_str()[1..].to_string())),
        Rule::indexed => {
            let mut inner = pair.into_inner();
            let name = inner
                .next()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let index = match inner.next() {
                Some(p) if p.as_rule() == Rule::integer => ChannelIndex::Fixed(
                    p.as_str()
                        .parse()
                        .map_err(|_| (p.as_span().start(), "channel too large".to_string()))?,
                ),
                _ => ChannelIndex::Row,
            };
            Ok(PanelExpr::Indexed(name, index))
        }
        Rule::conditional => {
            let mut inner = pair.into_inner().filter(|p| p.as_rule() != Rule::kw_if);
            let mut next = || -> Built {
                build(
                    inner
                        .next()
                        .ok_or((offset, "missing argument".to_string()))?,
                )
            };
            let (c, t, e) = (next()?, next()?, next()?);
            Ok(PanelExpr::If(Box::new(c), Box::new(t), Box::new(e)))
        }
        Rule::call => {
            let mut inner = pair.into_inner();
            let name = inner.next().map(|p| p.as_str()).unwrap_or_default();
            let function = Function::parse(name);
            let args: Vec<PanelExpr> = inner.map(build).collect::<Result<_, _>>()?;
            if args.len() != function.arity() {
                return Err((
                    offset,
                    format!(
                        "{name} takes {} argument{}, not {}",
                        function.arity(),
                        if function.arity() == 1 { "" } else { "s" },
                        args.len()
                    ),
                ));
            }
            Ok(PanelExpr::Call(function, args))
        }
        other => Err((offset, format!("unexpected {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> PanelExpr {
        PanelExpr::parse("m", text).unwrap()
    }

    #[test]
    fn conditionals_comparisons_and_none() {
        assert_eq!(
            p("if((A != 0), (B / A), none)"),
            PanelExpr::If(
                Box::new(PanelExpr::Compare(
                    CompareOp::Ne,
                    Box::new(PanelExpr::Name("A".into())),
                    Box::new(PanelExpr::Number(0.0))
                )),
                Box::new(PanelExpr::Arith(
                    ArithOp::Div,
                    Box::new(PanelExpr::Name("B".into())),
                    Box::new(PanelExpr::Name("A".into()))
                )),
                Box::new(PanelExpr::None)
            )
        );
    }

    #[test]
    fn logic_binds_looser_than_comparison() {
        assert_eq!(
            p("not A > 1 and B or C"),
            PanelExpr::Or(vec![
                PanelExpr::And(vec![
                    PanelExpr::Not(Box::new(PanelExpr::Compare(
                        CompareOp::Gt,
                        Box::new(PanelExpr::Name("A".into())),
                        Box::new(PanelExpr::Number(1.0))
                    ))),
                    PanelExpr::Name("B".into()),
                ]),
                PanelExpr::Name("C".into()),
            ])
        );
    }

    #[test]
    fn variables_channels_and_functions() {
        assert_eq!(
            p("agg_avg(TCC_HIT[3] % $num_xcd)"),
            PanelExpr::Call(
                Function::AggAvg,
                vec![PanelExpr::Arith(
                    ArithOp::Mod,
                    Box::new(PanelExpr::Indexed("TCC_HIT".into(), ChannelIndex::Fixed(3))),
                    Box::new(PanelExpr::Variable("num_xcd".into()))
                )]
            )
        );
        assert_eq!(
            p("round(TCC_REQ[channel], 0)"),
            PanelExpr::Call(
                Function::Round,
                vec![
                    PanelExpr::Indexed("TCC_REQ".into(), ChannelIndex::Row),
                    PanelExpr::Number(0.0)
                ]
            )
        );
        // Names that begin like keywords are names.
        assert_eq!(
            p("notes + ifetch"),
            PanelExpr::Arith(
                ArithOp::Add,
                Box::new(PanelExpr::Name("notes".into())),
                Box::new(PanelExpr::Name("ifetch".into()))
            )
        );
    }

    #[test]
    fn bad_input_names_the_column() {
        let err = PanelExpr::parse("m", "round(A)").unwrap_err();
        assert_eq!(
            err.to_string(),
            "counter 'm': syntax error in expression 'round(A)' at column 1: round takes 2 arguments, not 1"
        );
        let err = PanelExpr::parse("m", "A ==").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("counter 'm': syntax error in expression 'A ==' at column 5"),
            "{err}"
        );
    }
}

//! One test per production of `derived.pest`, with good and bad input.

use rtl_pmc_counters::{Accumulation, BinaryOp, Dimension, Expr, ReduceOp};

fn parse(text: &str) -> Expr {
    Expr::parse("T", text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn fails(text: &str) -> String {
    Expr::parse("T", text).unwrap_err().to_string()
}

fn name(n: &str) -> Box<Expr> {
    Box::new(Expr::Name(n.to_string()))
}

#[test]
fn numbers_keep_decimals() {
    assert_eq!(parse("0.5"), Expr::Number(0.5));
    assert_eq!(parse("1.5e3"), Expr::Number(1500.0));
    assert_eq!(parse(".25"), Expr::Number(0.25));
    assert_eq!(parse("7."), Expr::Number(7.0));
    assert_eq!(fails("1.2.3"), "counter 'T': syntax error in expression '1.2.3' at column 4: expected an operator or end of expression");
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(
        parse("A - B - C * D / E"),
        Expr::Binary(
            BinaryOp::Sub,
            Box::new(Expr::Binary(BinaryOp::Sub, name("A"), name("B"))),
            Box::new(Expr::Binary(
                BinaryOp::Div,
                Box::new(Expr::Binary(BinaryOp::Mul, name("C"), name("D"))),
                name("E")
            ))
        )
    );
    assert_eq!(
        parse("(A + B) * C"),
        Expr::Binary(
            BinaryOp::Mul,
            Box::new(Expr::Binary(BinaryOp::Add, name("A"), name("B"))),
            name("C")
        )
    );
    assert_eq!(
        fails("A * "),
        "counter 'T': syntax error in expression 'A * ' at column 5: expected a value"
    );
}

#[test]
fn unary_minus() {
    assert_eq!(parse("-A"), Expr::Negate(name("A")));
    assert_eq!(
        parse("2*-A"),
        Expr::Binary(
            BinaryOp::Mul,
            Box::new(Expr::Number(2.0)),
            Box::new(Expr::Negate(name("A")))
        )
    );
    assert_eq!(
        parse("--1"),
        Expr::Negate(Box::new(Expr::Negate(Box::new(Expr::Number(1.0)))))
    );
}

#[test]
fn names_and_comments() {
    assert_eq!(
        parse("TCC_HIT_sum // the L2 hits\n"),
        Expr::Name("TCC_HIT_sum".into())
    );
    assert_eq!(parse("reduce_x"), Expr::Name("reduce_x".into()));
    assert_eq!(parse("sum_of_all"), Expr::Name("sum_of_all".into()));
    assert_eq!(fails("A $ B"), "counter 'T': syntax error in expression 'A $ B' at column 3: expected an operator or end of expression");
}

#[test]
fn reduce_with_and_without_dimensions() {
    assert_eq!(
        parse("reduce(A, avr)"),
        Expr::Reduce {
            arg: name("A"),
            op: ReduceOp::Avr,
            dimensions: None
        }
    );
    assert_eq!(
        parse("reduce(A,max,[DIMENSION_XCC, DIMENSION_SHADER_ENGINE])"),
        Expr::Reduce {
            arg: name("A"),
            op: ReduceOp::Max,
            dimensions: Some(vec![Dimension::Xcc, Dimension::ShaderEngine])
        }
    );
    assert_eq!(
        fails("reduce(A)"),
        "counter 'T': syntax error in expression 'reduce(A)' at column 9: expected an operator"
    );
    assert_eq!(fails("reduce(A,Sum)"), "counter 'T': syntax error in expression 'reduce(A,Sum)' at column 10: expected sum, avr, min or max");
}

#[test]
fn select_with_positions_and_ranges() {
    assert_eq!(
        parse("select(A, [DIMENSION_XCC=[0], DIMENSION_INSTANCE=[1:3, 7]])"),
        Expr::Select {
            arg: name("A"),
            selections: vec![
                (Dimension::Xcc, vec![0]),
                (Dimension::Instance, vec![1, 2, 3, 7])
            ]
        }
    );
    assert_eq!(
        fails("select(A,[DIMENSION_XCC=[0],DIMENSION_XCC=[1]])"),
        "counter 'T': syntax error in expression 'select(A,[DIMENSION_XCC=[0],DIMENSION_XCC=[1]])' at column 1: DIMENSION_XCC is selected twice"
    );
    assert_eq!(fails("select(A,[DIMENSION_XCC=[]])"), "counter 'T': syntax error in expression 'select(A,[DIMENSION_XCC=[]])' at column 26: expected an integer");
}

#[test]
fn accumulate_resolutions() {
    assert_eq!(
        parse("accumulate(SQ_LEVEL_WAVES, HIGH_RES)"),
        Expr::Accumulate {
            name: "SQ_LEVEL_WAVES".into(),
            resolution: Accumulation::HighRes
        }
    );
    assert_eq!(
        parse("accumulate(X,LOW_RES)"),
        Expr::Accumulate {
            name: "X".into(),
            resolution: Accumulation::LowRes
        }
    );
    assert_eq!(
        parse("accumulate(X,NONE)"),
        Expr::Accumulate {
            name: "X".into(),
            resolution: Accumulation::None
        }
    );
    assert_eq!(
        fails("accumulate(X, MEDIUM)"),
        "counter 'T': syntax error in expression 'accumulate(X, MEDIUM)' at column 15: expected NONE, LOW_RES or HIGH_RES"
    );
}

#[test]
fn rocprof_v1_reductions() {
    assert_eq!(
        parse("sum(TCC_HIT,16)"),
        Expr::LegacyReduce {
            op: ReduceOp::Sum,
            name: "TCC_HIT".into(),
            instances: 16
        }
    );
    assert_eq!(
        parse("max(TA_TA_BUSY, 4)"),
        Expr::LegacyReduce {
            op: ReduceOp::Max,
            name: "TA_TA_BUSY".into(),
            instances: 4
        }
    );
    assert_eq!(fails("sum(TCC_HIT,0)"), "counter 'T': syntax error in expression 'sum(TCC_HIT,0)' at column 13: bad instance count '0'");
}

#[test]
fn names_visited_in_order() {
    let expr =
        parse("reduce(A,sum)/select(B,[DIMENSION_XCC=[0]]) + accumulate(C, NONE) - sum(D, 2)");
    let mut names = Vec::new();
    expr.for_each_name(&mut |n| names.push(n));
    assert_eq!(names, vec!["A", "B", "C", "D"]);
}

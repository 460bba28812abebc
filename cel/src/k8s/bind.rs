//! cel-go's `ext.Bindings`: the `cel.bind(name, init, expr)` macro.
//!
//! As in cel-go, it expands into a comprehension over an empty list whose
//! accumulator is the bound name: `init` is evaluated once, when the
//! comprehension starts, and `expr` is its result, with the name in scope
//! (shadowing a variable of that name). A call on anything but the plain
//! identifier `cel` is left alone, and a name that is not a simple
//! identifier is a compile error with cel-go's message.

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::parser::{Macro, MacroExprHelper};
use cel::{DeclarationError, Env, ParseError};

/// The iteration variable of the comprehension, never read (cel-go's).
const UNUSED_ITER_VAR: &str = "#unused";

/// Adds the `cel.bind` macro.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_macro(Macro::receiver("bind", 3, expand))
}

fn expand(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    // Only `cel.bind(...)`: declining must leave the call untouched.
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(name)) if name == "cel") {
        return Ok(None);
    }
    let name = match &args[0].expr {
        Expr::Ident(name) => name.clone(),
        _ => {
            return Err(helper.new_error(
                args[0].id,
                "cel.bind() variable names must be simple identifiers",
            ))
        }
    };
    let result = args.pop().expect("three arguments");
    let init = args.pop().expect("three arguments");
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: UNUSED_ITER_VAR.to_owned(),
        iter_var2: None,
        accu_var: name.clone(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(name)),
        result,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

#[cfg(test)]
mod tests {
    use super::super::eval;
    use crate::{compile_heterogeneous, convert, Bindings};
    use cel::Value;

    #[test]
    fn binds_evaluates_once_and_shadows() {
        assert_eq!(
            eval("cel.bind(a, 'x' + 'y', a + a)"),
            Ok(convert::string("xyxy"))
        );
        assert_eq!(
            eval("cel.bind(a, 1, cel.bind(a, a + 1, a * 10)) + 0"),
            Ok(Value::Int(20))
        );
        // The bound name shadows a variable of the same name.
        let expr = compile_heterogeneous("cel.bind(object, 2, object + 1)").expect("compiles");
        let bindings = Bindings::builder()
            .value("object", convert::to_cel(&serde_json::json!("a string")))
            .build();
        assert_eq!(expr.eval(&bindings), Ok(Value::Int(3)));
    }

    #[test]
    fn only_cel_bind_with_a_simple_name_is_expanded() {
        let err = compile_heterogeneous("cel.bind(a.b, 1, 2)").unwrap_err();
        assert!(
            err.contains("cel.bind() variable names must be simple identifiers"),
            "{err}"
        );
        // Another target leaves the call, which is not a function ivpol has.
        let err = compile_heterogeneous("ceel.bind(a, 1, a)").unwrap_err();
        assert!(err.contains("bind"), "{err}");
    }
}

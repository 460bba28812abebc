//! The CEL environment IVP expressions run in: compilation with load-time
//! checks, variable bindings, lazy `variables`, and Kyverno's function
//! libraries (see `image_lib`).
//!
//! Built on the `cel` crate (cel-rust). What it supports beyond the CEL
//! standard library is listed in `docs/cel.md`; any other function is a load
//! diagnostic, so a policy never silently passes on an unknown call.

// Nothing here needs unsafe code.
#![forbid(unsafe_code)]
// The engine reads this crate's API from its docs: every public item says
// what it is.
#![deny(missing_docs)]

pub mod all_signed;
mod calls;
pub mod check;
pub mod convert;
pub mod image_data;
pub mod image_lib;
mod k8s;
mod known;
mod kyverno;
mod lazy;
mod regex_lib;
pub mod resource_lib;
mod services;
#[cfg(test)]
mod spec_conformance;
pub mod verify_lib;

pub use lazy::{Bindings, BindingsBuilder, JsonSource, LazyVariables, Shared};

use cel::{Context, Env, FunctionRegistry, Program, Value};
use std::sync::{Arc, OnceLock};

/// A compiled expression with its source, for messages.
#[derive(Debug, Clone)]
pub struct Expression {
    /// The expression's CEL source, as written in the policy.
    pub source: String,
    program: Arc<Program>,
    output: check::Ty,
}

/// The runtime cost one expression evaluation may use: Kubernetes'
/// `PerCallLimit`. What a unit is: `cel::cost` (the vendored patch,
/// `docs/cel.md`). The `variables` an expression reads are charged to it.
pub const PER_CALL_COST_LIMIT: u64 = 1_000_000;

/// The most a library function builds from one call (a decompressed,
/// generated, marshalled or replaced text): 1 MiB, more than any admission
/// request holds. Beyond it the call is an error rather than a trap for
/// the whole instance.
const MAX_BUILT_BYTES: usize = 1 << 20;

/// The error of an expression that went over [`PER_CALL_COST_LIMIT`]
/// (Kubernetes' wording).
pub const COST_LIMIT_MESSAGE: &str = "operation cancelled: actual cost limit exceeded";

/// Why an expression did not evaluate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// It went over [`PER_CALL_COST_LIMIT`], itself or in an expression a
    /// function it called evaluates. Never taken as "no match": that would
    /// let a large enough object skip a policy.
    #[error("{0}")]
    CostLimit(cel::ExecutionError),
    /// Any other runtime error: CEL's.
    #[error("{0}")]
    Execution(cel::ExecutionError),
}

impl From<cel::ExecutionError> for EvalError {
    fn from(e: cel::ExecutionError) -> EvalError {
        // A nested evaluation's cost error reaches here inside the calling
        // function's error, as its message.
        let over = matches!(e, cel::ExecutionError::CostLimitExceeded)
            || matches!(&e, cel::ExecutionError::FunctionError { message, .. }
                if message.contains(COST_LIMIT_MESSAGE));
        match over {
            true => EvalError::CostLimit(e),
            false => EvalError::Execution(e),
        }
    }
}

impl Expression {
    /// Whether the expression names `variable` anywhere (evaluated or not).
    pub fn reads(&self, variable: &str) -> bool {
        self.program.references().has_variable(variable)
    }

    /// Evaluates against `bindings`, within [`PER_CALL_COST_LIMIT`].
    pub fn eval(&self, bindings: &Bindings) -> Result<Value, EvalError> {
        let ctx = bindings.context();
        let (result, _cost) =
            cel::cost::with_limit(PER_CALL_COST_LIMIT, || self.program.execute(&ctx));
        Ok(result?)
    }

    /// Whether the API server can evaluate this as a webhook
    /// matchCondition: it reads only `object`, `oldObject` and `request`,
    /// and calls only CEL's standard functions, the strings extension and
    /// Kubernetes' libraries (no `namespaceObject`, no Kyverno library).
    /// Conservative: a `false` costs only a webhook call ivpol answers.
    pub fn api_server_evaluable(&self) -> bool {
        let refs = self.program.references();
        let reads_ok = refs
            .variables()
            .into_iter()
            .all(|v| !known::is_variable(v) || known::WEBHOOK_VARIABLES.contains(&v));
        reads_ok && refs.functions().into_iter().all(known::api_server_has)
    }

    /// Its type as far as the load-time check knows it (`check`).
    pub fn output_type(&self) -> &check::Ty {
        &self.output
    }

    /// Its type with the policy's `variables` of the types given (Kyverno
    /// declares each as its expression's type), or the type error that
    /// knowing them reveals.
    pub fn output_type_with(&self, variables: &check::Variables) -> Result<check::Ty, String> {
        if variables.is_empty() {
            return Ok(self.output.clone());
        }
        check::output_type_in(self.program.expression(), variables).map_err(|e| e.to_string())
    }

    /// The compiled program.
    pub fn program(&self) -> &Program {
        &self.program
    }
}

/// The shared environment: the standard library plus cel-go's strings,
/// lists, math and base64 extensions as cel-rust provides them, and the
/// cel-go and Kubernetes libraries of `k8s` (`cel.bind`, `sets`, lists,
/// quantity, semver).
pub fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // The extensions only fail on duplicate declarations, which a fresh
        // stdlib environment cannot have.
        let _ = cel::extensions::strings(&mut env);
        let _ = cel::extensions::lists(&mut env);
        let _ = cel::extensions::math(&mut env);
        let _ = cel::extensions::encoders(&mut env);
        kyverno::register_env(&mut env);
        // cel-go's and Kubernetes' libraries Kyverno adds (`k8s`); the
        // same: only a clash could fail, which its tests rule out.
        let _ = k8s::register(&mut env);
        k8s::parse::declare(&mut env);
        Arc::new(env)
    })
    .clone()
}

/// Kyverno's functions, registered once: every evaluation's context
/// shares this table (the registry- and cluster-backed ones find their
/// evaluation's services through `services`).
fn functions() -> Arc<FunctionRegistry> {
    static FUNCTIONS: OnceLock<Arc<FunctionRegistry>> = OnceLock::new();
    FUNCTIONS
        .get_or_init(|| {
            let mut ctx = Context::with_env(env());
            image_lib::register(&mut ctx);
            regex_lib::register(&mut ctx);
            image_data::register(&mut ctx);
            verify_lib::register(&mut ctx);
            resource_lib::register(&mut ctx);
            kyverno::register(&mut ctx);
            k8s::parse::register(&mut ctx);
            ctx.functions()
        })
        .clone()
}

/// A root context with Kyverno's functions.
pub fn new_context<'v>() -> Context<'v, 'v> {
    Context::with_functions(env(), functions())
}

/// Compiles `source`, rejecting functions this engine does not implement.
///
/// The error quotes the expression, as Kyverno's compile errors do.
pub fn compile(source: &str) -> Result<Expression, String> {
    compile_with(source, false)
}

/// The variables a data-only expression sees: the request and its
/// namespace, nothing the policy computed or may call.
pub const DATA_VARIABLES: &[&str] = &["object", "oldObject", "request", "namespaceObject"];

/// [`compile`] for an expression that must be data only (a
/// PolicyException's matchConditions): it may read [`DATA_VARIABLES`] and
/// call the pure libraries, but nothing that reaches a registry, a
/// verifier, credentials or cluster objects, nor the policy's own
/// `variables`, `images`, `attestors` or `attestations`. Its evaluation
/// gets only those bindings too ([`Bindings::data_only`]).
pub fn compile_data_only(source: &str) -> Result<Expression, String> {
    let expr = compile(source)?;
    let refs = expr.program.references();
    let variable = known::SERVICE_VARIABLES
        .iter()
        .find(|v| refs.has_variable(v));
    let function = refs
        .functions()
        .into_iter()
        .find(|f| known::SERVICE_FUNCTIONS.contains(f));
    let used = match (variable, function) {
        (Some(v), _) => *v,
        (None, Some(f)) => f,
        (None, None) => return Ok(expr),
    };
    Err(format!(
        "expression `{source}`: {used} is not available here: an exception's matchConditions are data only (object, oldObject, request, namespaceObject and the pure libraries; no registry, verification, cluster objects or policy variables)"
    ))
}

/// [`compile`] in an environment without cel-go's
/// `HomogeneousAggregateLiterals`, as Kubernetes' and cel-go's own tests
/// run: their tables mix literal types (`[1, 2.0]`) that Kyverno refuses.
#[cfg(test)]
pub(crate) fn compile_heterogeneous(source: &str) -> Result<Expression, String> {
    compile_with(source, true)
}

/// The longest expression compiled, in characters: cel-go's default
/// `ParserExpressionSizeCodePointLimit`, which Kubernetes keeps.
pub const MAX_EXPRESSION_CHARS: usize = 100_000;
/// The deepest an expression may nest: cel-go's default
/// `ParserRecursionLimit`. Every pass over the tree (parse, check,
/// evaluation) recurses as deep as it nests, and in the component the
/// stack is a fixed part of linear memory: 2,000 chained `+` terms
/// exhausted it, trapping the whole load (and at 1,000, every request).
pub const MAX_EXPRESSION_DEPTH: usize = 250;

/// Refuses an expression too long or too deep to compile safely, before
/// the parser sees it (the tree of a too-deep one could not even be
/// dropped without recursing as deep). The depth is an upper bound read
/// off the text: nesting plus, at each level, the operators chained since
/// the last `,`.
fn within_limits(source: &str) -> Result<(), String> {
    let chars = source.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "expression is {chars} characters long, more than the {MAX_EXPRESSION_CHARS} allowed"
        ));
    }
    let depth = nesting_bound(source);
    if depth > MAX_EXPRESSION_DEPTH {
        return Err(format!(
            "expression nests about {depth} levels deep (operators chained and brackets), more than the {MAX_EXPRESSION_DEPTH} allowed: split it, for example into variables"
        ));
    }
    Ok(())
}

/// An upper bound of the parse tree's depth, from the text: each open
/// bracket is a level, and within a level every binary or ternary
/// operator since the last `,` adds one (a chain `a + b + c` nests as deep
/// as it is long), plus the longest run of `.` selections in one of its
/// terms. String literals are skipped.
fn nesting_bound(source: &str) -> usize {
    /// One open bracket: its chained operators and selection runs.
    #[derive(Default)]
    struct Level {
        operators: usize,
        selections: usize,
        longest: usize,
    }
    impl Level {
        fn depth(&self) -> usize {
            1 + self.operators + self.longest.max(self.selections)
        }
    }
    let mut levels: Vec<Level> = vec![Level::default()];
    let mut deepest = 0;
    let bytes = source.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if let Some(q) = quote {
            match b {
                b'\\' => i += 1,
                _ if b == q => quote = None,
                _ => {}
            }
            continue;
        }
        let open = levels.len();
        let Some(level) = levels.last_mut() else {
            break;
        };
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'(' | b'[' | b'{' => levels.push(Level::default()),
            b')' | b']' | b'}' if open > 1 => {
                levels.pop();
            }
            b',' => *level = Level::default(),
            // A `.` inside a number (`1.5`) selects nothing.
            b'.' if i > 1 && bytes[i - 2].is_ascii_digit() => {}
            b'.' => level.selections += 1,
            b'+' | b'-' | b'*' | b'/' | b'%' | b'?' | b'<' | b'>' | b'!' => {
                level.operators += 1;
                level.longest = level.longest.max(level.selections);
                level.selections = 0;
            }
            b'&' | b'|' | b'=' if bytes.get(i) == Some(&b) => {
                i += 1;
                level.operators += 1;
                level.longest = level.longest.max(level.selections);
                level.selections = 0;
            }
            _ => {}
        }
        deepest = deepest.max(levels.iter().map(Level::depth).sum::<usize>());
    }
    deepest
}

fn compile_with(source: &str, heterogeneous: bool) -> Result<Expression, String> {
    within_limits(source).map_err(|e| format!("expression `{}`: {e}", preview(source)))?;
    let program = env()
        .compile(source)
        .map_err(|e| format!("failed to compile expression `{source}`: {e}"))?;
    let refs = program.references();
    let mut functions = refs.functions();
    ivpol_refs::sort::sort(&mut functions);
    // An unimplemented Kyverno library is refused whatever is called on
    // it: its member names (`Get`) may be implemented for another one.
    if let Some(lib) = refs
        .variables()
        .into_iter()
        .find(|v| known::is_kyverno_library(v))
    {
        let member = known::first_member(&functions).unwrap_or("*");
        return Err(format!(
            "expression `{source}`: Kyverno library {lib} ({lib}.{member}) is not implemented by ivpol"
        ));
    }
    let called = calls::called(
        program.expression(),
        &known::is_supported,
        &known::is_variable,
    )
    .map_err(|calls::Undeclared(name)| {
        format!("expression `{source}`: undeclared reference to function {name}")
    })?;
    if let Some(first) = called.iter().find(|f| !known::is_supported(f)) {
        let why = known::unsupported_reason(first);
        return Err(format!("expression `{source}`: {why}"));
    }
    let output = match check::output_type(program.expression()) {
        Err(check::TypeError::Heterogeneous { .. }) if heterogeneous => check::Ty::Dyn,
        checked => checked.map_err(|e| format!("expression `{source}`: {e}"))?,
    };
    Ok(Expression {
        source: source.to_string(),
        program: Arc::new(program),
        output,
    })
}

/// The start of a long expression, for a message that quotes it.
fn preview(source: &str) -> String {
    const SHOWN: usize = 80;
    match source.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &source[..end]),
        None => source.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Expressions that exhausted the component's stack are refused at
    /// compile, before the parser builds their tree; ordinary ones, and
    /// wide ones (many terms side by side), still compile.
    #[test]
    fn too_deep_or_too_long_expressions_are_refused_before_parsing() {
        let chained = |n: usize| vec!["object.a"; n].join(" + ");
        let deep_path = format!("object{}", ".a".repeat(2000));
        let huge_list = format!("[{}]", vec!["1"; 100_000].join(","));
        for (source, want) in [
            (chained(2000), "nests about"),
            (chained(300), "nests about"),
            (deep_path, "nests about"),
            (
                format!("{}1{}", "(".repeat(300), ")".repeat(300)),
                "nests about",
            ),
            (huge_list, "characters long"),
        ] {
            let err = compile(&source).expect_err("refused");
            assert!(err.contains(want), "{err}");
            assert!(err.len() < 400, "the message quotes a preview only: {err}");
        }
        assert!(compile(&chained(200)).is_ok());
        let wide = format!("[{}].size() > 0", vec!["object.a.b.c + 1"; 500].join(", "));
        assert!(compile(&wide).is_ok(), "terms side by side are not deep");
        assert!(compile("'a.b.c.d.e.f.g' + \"((((((\" != ''").is_ok());
    }

    fn eval(src: &str, object: serde_json::Value) -> Result<Value, String> {
        let expr = compile(src)?;
        let bindings = Bindings::builder()
            .value("object", convert::to_cel(&object))
            .build();
        expr.eval(&bindings).map_err(|e| e.to_string())
    }

    #[test]
    fn the_cost_limit_is_its_own_error_even_inside_a_function_error() {
        // Each level makes the string 8 times longer: 12 MB by the end.
        let mut text = format!("'{}'", "x".repeat(3000));
        for _ in 0..4 {
            text = format!("[{text}].map(s, s + s + s + s + s + s + s + s)[0]");
        }
        let over = compile(&format!("size({text}) > 0"))
            .expect("compiles")
            .eval(&Bindings::builder().build());
        assert!(matches!(over, Err(EvalError::CostLimit(_))), "{over:?}");
        assert_eq!(over.unwrap_err().to_string(), COST_LIMIT_MESSAGE);
        // A function whose own evaluation ran out says so in its message.
        let nested = cel::ExecutionError::function_error("f", COST_LIMIT_MESSAGE);
        assert!(matches!(EvalError::from(nested), EvalError::CostLimit(_)));
        let other = compile("1 / 0")
            .expect("compiles")
            .eval(&Bindings::builder().build());
        assert!(matches!(other, Err(EvalError::Execution(_))), "{other:?}");
    }

    #[test]
    fn evaluates_against_object() {
        let obj = json!({"metadata": {"labels": {"prod": "true"}}});
        assert_eq!(
            eval("object.metadata.labels.prod == 'true'", obj.clone()),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("has(object.metadata.annotations)", obj),
            Ok(Value::Bool(false))
        );
    }

    #[test]
    fn string_and_list_extensions_work() {
        let obj = json!({"a": "Hello,World"});
        assert_eq!(
            eval("object.a.split(',').map(s, s.lowerAscii()).join('-')", obj),
            Ok(convert::string("hello-world"))
        );
    }

    #[test]
    fn optional_syntax_works() {
        let obj = json!({"spec": {}});
        assert_eq!(
            eval("object.spec.?containers.orValue([]).size()", obj),
            Ok(Value::Int(0))
        );
    }

    /// Type values compare as types within an expression, so a policy's
    /// `type(x) == string` means what it means in Kyverno.
    #[test]
    fn type_values_compare_as_types() {
        for src in [
            "type(1) == int",
            "type('a') == string",
            "type(object.a) == string",
            "type(object.a) != int",
            "type([1]) == list && type({}) == map && type(null) == null_type",
            "type(int) == type",
        ] {
            assert_eq!(eval(src, json!({"a": "x"})), Ok(Value::Bool(true)), "{src}");
        }
    }

    #[test]
    fn parse_errors_quote_the_expression() {
        let err = compile("object.(").unwrap_err();
        assert!(err.contains("`object.(`"), "{err}");
    }

    #[test]
    fn unknown_functions_are_rejected_at_compile_time() {
        let err = compile("frobnicate(object)").unwrap_err();
        assert!(err.contains("frobnicate"), "{err}");
        let err = compile("http.Get('https://example.com')").unwrap_err();
        assert!(err.contains("not implemented"), "{err}");
        let err = compile("resource.Post('v1', 'configmaps', 'ns', {})").unwrap_err();
        assert!(err.contains("resource.Post is not implemented"), "{err}");
    }

    /// The parser leaves `math.abs(x)` as `abs` called on `math`: the check
    /// resolves it as evaluation does, so the extensions' qualified
    /// functions load (they were refused as `abs`, `of`...), and a call on
    /// a name that is no variable and no function is refused even when its
    /// last part is a known function.
    #[test]
    fn qualified_functions_resolve_as_they_run() {
        for (src, want) in [
            ("math.abs(-2)", Value::Int(2)),
            ("math.greatest(1, 3, 2)", Value::Int(3)),
            ("optional.of(1).value()", Value::Int(1)),
            (
                "strings.quote('a')",
                Value::String(Arc::new("\"a\"".into())),
            ),
            ("lists.range(3) == [0, 1, 2]", Value::Bool(true)),
            (
                "base64.encode(b'hi')",
                Value::String(Arc::new("aGk=".into())),
            ),
            ("object.a.startsWith('x')", Value::Bool(true)),
            ("[object.a].all(s, s.startsWith('x'))", Value::Bool(true)),
        ] {
            assert_eq!(eval(src, json!({"a": "xy"})), Ok(want), "{src}");
        }
        let err = compile("bags.contains([1], [1])").unwrap_err();
        assert!(
            err.contains("undeclared reference to function bags.contains"),
            "{err}"
        );
        let err = compile("[1].all(x, nope.size(x))").unwrap_err();
        assert!(err.contains("nope.size"), "{err}");
    }
}

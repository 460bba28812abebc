//! A conservative type check, at load, of what cel-go's checker would
//! refuse: an operator on operands no overload takes (`1 + 'a'`), and the
//! output type of an expression, so that a validation that cannot be
//! `bool` or a message that cannot be a `string` is a load diagnostic.
//!
//! cel-rust has no checker. This one infers types bottom-up from literals,
//! the typed variables (`images`, `attestations`, `attestors`) and the
//! result types of known functions; everything read from `object`,
//! `oldObject`, `request`, `namespaceObject` and `variables` is `dyn`, as
//! in Kyverno. A type it does not know is `dyn`, and `dyn` is never an
//! error: it refuses only what cannot work whatever the request holds, so
//! a policy Kyverno accepts always loads. (Kyverno is stricter: it wants
//! the output to be exactly `bool`, so it refuses a validation of type
//! `dyn` that ivpol loads and judges at run time.)

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use std::fmt;

/// A CEL type, as far as this check knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// Unknown until run time.
    Dyn,
    /// `null_type` (printed `null`, as cel-go's checker prints it).
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Timestamp` (printed `timestamp`).
    Timestamp,
    /// `google.protobuf.Duration` (printed `duration`).
    Duration,
    /// `list(T)`.
    List(Box<Ty>),
    /// `map(K, V)`.
    Map(Box<Ty>, Box<Ty>),
    /// The element type of an empty literal: whatever it is joined with.
    /// Checked like `dyn`.
    Empty,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn | Ty::Empty => f.write_str("dyn"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Timestamp => f.write_str("timestamp"),
            Ty::Duration => f.write_str("duration"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
        }
    }
}

impl Ty {
    fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    /// Unknown: `dyn`, or what an empty literal holds.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Empty)
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// The type both `a` and `b` have: itself when equal, else `dyn` (in
    /// lists and maps, element by element).
    fn join(a: &Ty, b: &Ty) -> Ty {
        match (a, b) {
            _ if a == b => a.clone(),
            (Ty::Empty, t) | (t, Ty::Empty) => t.clone(),
            (Ty::List(x), Ty::List(y)) => Ty::list(Ty::join(x, y)),
            (Ty::Map(k1, v1), Ty::Map(k2, v2)) => Ty::map(Ty::join(k1, k2), Ty::join(v1, v2)),
            _ => Ty::Dyn,
        }
    }
}

/// What cel-go's checker, with Kyverno's options, refuses; in its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    /// An operator applied to operands no overload takes.
    #[error("found no matching overload for '{operator}' applied to '({})'", join_types(.operands))]
    NoOverload {
        /// The operator (`_+_`).
        operator: String,
        /// Its operands' types.
        operands: Vec<Ty>,
    },
    /// A list or map literal whose elements (or keys, or values) have two
    /// types: Kyverno enables cel-go's `HomogeneousAggregateLiterals`.
    #[error("expected type '{expected}' but found '{found}'")]
    Heterogeneous {
        /// The first element's type.
        expected: Ty,
        /// The type of the one that differs.
        found: Ty,
    },
}

fn join_types(types: &[Ty]) -> String {
    types
        .iter()
        .map(Ty::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The output type of `expr`, or the first operator no overload takes.
pub(super) fn output_type(expr: &IdedExpr) -> Result<Ty, TypeError> {
    output_type_in(expr, &Variables::new())
}

/// The types of a policy's `variables`, by name, as Kyverno declares them
/// (each its expression's output type).
pub type Variables = std::collections::BTreeMap<String, Ty>;

/// [`output_type`] with `variables.<name>` of the types in `variables`.
pub(super) fn output_type_in(expr: &IdedExpr, variables: &Variables) -> Result<Ty, TypeError> {
    Checker {
        scopes: Vec::new(),
        variables,
    }
    .infer(expr)
}

struct Checker<'a> {
    /// Comprehension variables and their types, innermost last.
    scopes: Vec<(&'a str, Ty)>,
    /// The policy's variables' types.
    variables: &'a Variables,
}

impl<'a> Checker<'a> {
    fn infer(&mut self, e: &'a IdedExpr) -> Result<Ty, TypeError> {
        Ok(match &e.expr {
            Expr::Literal(lit) => literal(lit),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) => {
                if select.test {
                    self.infer(&select.operand)?;
                    return Ok(Ty::Bool);
                }
                if self.is_request(&select.operand.expr) {
                    return Ok(request_field(&select.field));
                }
                if self.is_global(&select.operand.expr, "variables") {
                    let declared = self.variables.get(&select.field);
                    return Ok(declared.cloned().unwrap_or(Ty::Dyn));
                }
                if let Some(t) = self.namespace_field(&select.operand.expr, &select.field) {
                    return Ok(t);
                }
                match self.infer(&select.operand)? {
                    Ty::Map(_, v) => *v,
                    _ => Ty::Dyn,
                }
            }
            Expr::List(list) => {
                let mut element = Ty::Empty;
                for item in &list.elements {
                    element = homogeneous(element, self.infer(item)?)?;
                }
                Ty::list(element)
            }
            Expr::Map(map) => {
                let (mut k, mut v) = (Ty::Empty, Ty::Empty);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        k = homogeneous(k, self.infer(&entry.key)?)?;
                        v = homogeneous(v, self.infer(&entry.value)?)?;
                    }
                }
                Ty::map(k, v)
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        self.infer(&field.value)?;
                    }
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.infer(&c.iter_range)?;
                let item = match (&range, &c.iter_var2) {
                    (Ty::List(t), None) => (**t).clone(),
                    (Ty::Map(k, _), None) => (**k).clone(),
                    _ => Ty::Dyn,
                };
                let init = self.infer(&c.accu_init)?;
                let depth = self.scopes.len();
                self.scopes.push((&c.iter_var, item));
                if let Some(second) = &c.iter_var2 {
                    self.scopes.push((second, Ty::Dyn));
                }
                // The accumulator starts as its initial value and becomes
                // what each step makes of it: check the step with the
                // initial type, then the rest with what both share.
                self.scopes.push((&c.accu_var, init.clone()));
                let step = self.infer(&c.loop_step)?;
                let accu = Ty::join(&init, &step);
                if let Some(last) = self.scopes.last_mut() {
                    last.1 = accu;
                }
                self.infer(&c.loop_cond)?;
                let result = self.infer(&c.result)?;
                self.scopes.truncate(depth);
                result
            }
            Expr::Call(call) => {
                let qualified = call
                    .target
                    .as_deref()
                    .and_then(|t| self.qualified(&t.expr, &call.func_name));
                let mut args = Vec::with_capacity(call.args.len() + 1);
                let member = match (&qualified, &call.target) {
                    (None, Some(target)) => {
                        args.push(self.infer(target)?);
                        true
                    }
                    _ => false,
                };
                for arg in &call.args {
                    args.push(self.infer(arg)?);
                }
                let name = qualified.as_deref().unwrap_or(&call.func_name);
                call_type(name, member, &args)?
            }
            Expr::Unspecified => Ty::Dyn,
        })
    }

    /// The qualified function a call on `target` names, resolved as
    /// evaluation resolves it (`super::calls`): `sets.contains(a, b)` is
    /// a call of `sets.contains` on two arguments, not of `contains` on
    /// the identifier `sets`.
    fn qualified(&self, target: &Expr, function: &str) -> Option<String> {
        let segments = super::calls::segments(target)?;
        let root = segments[0];
        if self.scopes.iter().any(|(n, _)| *n == root) || super::known::is_variable(root) {
            return None;
        }
        let name = format!("{}.{function}", segments.join("."));
        super::known::is_supported(&name).then_some(name)
    }

    /// Whether `e` is the `request` variable (not a comprehension variable
    /// of that name).
    fn is_request(&self, e: &Expr) -> bool {
        self.is_global(e, "request")
    }

    /// Whether `e` is the environment's variable `name` (not a
    /// comprehension variable of that name).
    fn is_global(&self, e: &Expr, name: &str) -> bool {
        matches!(e, Expr::Ident(n) if n == name && !self.scopes.iter().any(|(s, _)| *s == name))
    }

    /// The type of `namespaceObject.<group>.<field>`, where Kyverno
    /// declares one (`NamespaceType`: the Namespace's metadata, spec and
    /// status); `None` for anything else.
    fn namespace_field(&self, operand: &Expr, field: &str) -> Option<Ty> {
        let Expr::Select(group) = operand else {
            return None;
        };
        if group.test || !self.is_global(&group.operand.expr, "namespaceObject") {
            return None;
        }
        let strings = || Ty::map(Ty::String, Ty::String);
        Some(match (group.field.as_str(), field) {
            ("metadata", "name" | "generateName" | "namespace" | "uid" | "resourceVersion") => {
                Ty::String
            }
            ("metadata", "labels" | "annotations") => strings(),
            ("metadata", "creationTimestamp" | "deletionTimestamp") => Ty::Timestamp,
            ("spec", "finalizers") => Ty::list(Ty::String),
            ("status", "phase") => Ty::String,
            _ => return None,
        })
    }

    fn ident(&self, name: &str) -> Ty {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| *n == name) {
            return t.clone();
        }
        // Kyverno's declarations (reference §3.1); the rest is `dyn`.
        match name {
            // `matchImageReferences` expressions' image reference.
            "ref" => Ty::String,
            "images" => Ty::map(Ty::String, Ty::list(Ty::String)),
            "attestations" => Ty::map(Ty::String, Ty::String),
            "attestors" => Ty::map(Ty::String, Ty::Dyn),
            _ => Ty::Dyn,
        }
    }
}

/// The element type of a literal so far, `so_far`, with one more element
/// of type `next`: they must agree where both are known (`dyn` agrees with
/// anything, and an element read from the request is `dyn`).
fn homogeneous(so_far: Ty, next: Ty) -> Result<Ty, TypeError> {
    if !compatible(&so_far, &next) {
        return Err(TypeError::Heterogeneous {
            expected: so_far,
            found: next,
        });
    }
    Ok(match so_far {
        Ty::Empty => next,
        so_far => Ty::join(&so_far, &next),
    })
}

/// Whether `a` and `b` can be the same type: equal where both are known.
fn compatible(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        _ if a.is_dyn() || b.is_dyn() => true,
        (Ty::List(x), Ty::List(y)) => compatible(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => compatible(k1, k2) && compatible(v1, v2),
        _ => a == b,
    }
}

/// The type of a field of `request`, Kubernetes' admission request type
/// as Kyverno declares it (`k8s.io/apiserver/pkg/admission/plugin/cel`):
/// its strings and `dryRun`; the nested objects and unknown fields are
/// `dyn`.
fn request_field(field: &str) -> Ty {
    match field {
        "name" | "namespace" | "operation" | "subResource" | "requestSubResource" => Ty::String,
        "dryRun" => Ty::Bool,
        _ => Ty::Dyn,
    }
}

fn literal(lit: &LiteralValue) -> Ty {
    match lit {
        LiteralValue::Boolean(_) => Ty::Bool,
        LiteralValue::Bytes(_) => Ty::Bytes,
        LiteralValue::Double(_) => Ty::Double,
        LiteralValue::Int(_) => Ty::Int,
        LiteralValue::Null => Ty::Null,
        LiteralValue::String(_) => Ty::String,
        LiteralValue::UInt(_) => Ty::Uint,
    }
}

/// The result type of calling `name` on `args` (the target first for a
/// member call); an error only for an operator whose operands are all
/// known and that no overload takes.
fn call_type(name: &str, member: bool, args: &[Ty]) -> Result<Ty, TypeError> {
    let known = !args.iter().any(Ty::is_dyn);
    let refuse = || TypeError::NoOverload {
        operator: name.to_string(),
        operands: args.to_vec(),
    };
    Ok(match (name, args) {
        ("_&&_" | "_||_", _) | ("!_", _) => {
            if args.iter().any(|t| *t != Ty::Bool && !t.is_dyn()) {
                return Err(refuse());
            }
            Ty::Bool
        }
        ("_==_" | "_!=_" | "@in" | "@not_strictly_false", _) => Ty::Bool,
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) => {
            if known && !comparable(a, b) {
                return Err(refuse());
            }
            Ty::Bool
        }
        ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", [a, b]) => match arithmetic(name, a, b) {
            Some(t) => t,
            None if known => return Err(refuse()),
            None => arithmetic_with_dyn(name, a, b).ok_or_else(refuse)?,
        },
        ("-_", [a]) => match a {
            Ty::Int | Ty::Double | Ty::Duration => a.clone(),
            t if t.is_dyn() => Ty::Dyn,
            _ => return Err(refuse()),
        },
        ("_?_:_", [cond, a, b]) => {
            if *cond != Ty::Bool && !cond.is_dyn() {
                return Err(refuse());
            }
            Ty::join(a, b)
        }
        // `size` of a string, bytes, a list or a map, called either way.
        ("size", [t]) if !sized(t) => return Err(refuse()),
        ("_[_]", [Ty::List(t), _]) | ("_[_]", [Ty::Map(_, t), _]) => match &**t {
            Ty::Empty => Ty::Dyn,
            t => t.clone(),
        },
        _ => {
            let given = args.len() - usize::from(member);
            if arities(name, member).is_some_and(|ok| !ok.contains(&given)) {
                return Err(refuse());
            }
            // A function with one signature: its count and its types.
            let mismatch = |params: Vec<Ty>| {
                params.len() != args.len()
                    || params.iter().zip(args).any(|(p, a)| !compatible(p, a))
            };
            if parameters(name, member).is_some_and(mismatch) {
                return Err(refuse());
            }
            if declared_accepts(name, member, args) == Some(false) {
                return Err(refuse());
            }
            function_type(name, member)
        }
    })
}

/// Whether one of the overloads the environment declares for `name`
/// (cel-go's and Kubernetes' libraries, cel-rust's standard functions)
/// takes arguments of these types; `None` for an operator, a name the
/// environment does not declare, or one a context function also has
/// (evaluation falls back to it).
fn declared_accepts(name: &str, member: bool, args: &[Ty]) -> Option<bool> {
    if name.starts_with(['_', '@', '!', '-']) || super::functions().contains(name) {
        return None;
    }
    let env = super::env();
    let declared = env.function(name)?;
    let accepted = declared.signatures().any(|(is_member, params)| {
        is_member == member
            && params.len() == args.len()
            && params.iter().zip(args).all(|(p, a)| accepts(p, a))
    });
    Some(accepted)
}

/// Whether a parameter declared as `param` takes an argument of type `arg`
/// (`dyn` is taken by any parameter; a parameter of an opaque type takes
/// no value this check types).
fn accepts(param: &cel::common::types::Type, arg: &Ty) -> bool {
    use cel::common::types::Kind;
    if arg.is_dyn() {
        return true;
    }
    match param.kind() {
        Kind::Dyn | Kind::Any => true,
        Kind::Boolean => *arg == Ty::Bool,
        Kind::Int => *arg == Ty::Int,
        Kind::UInt => *arg == Ty::Uint,
        Kind::Double => *arg == Ty::Double,
        Kind::String => *arg == Ty::String,
        Kind::Bytes => *arg == Ty::Bytes,
        Kind::Duration => *arg == Ty::Duration,
        Kind::Timestamp => *arg == Ty::Timestamp,
        Kind::NullType => *arg == Ty::Null,
        Kind::List => matches!(arg, Ty::List(_)),
        Kind::Map => matches!(arg, Ty::Map(..)),
        _ => false,
    }
}

/// The parameter types (the target first for a member call) of the
/// functions with a single signature; `None` for the rest. A call with
/// another count is refused, and a known argument of another type.
fn parameters(name: &str, member: bool) -> Option<Vec<Ty>> {
    use Ty::{Bytes, Duration, String as S, Timestamp};
    let list = || Ty::list(Ty::Dyn);
    Some(match (name, member) {
        ("startsWith" | "endsWith" | "contains" | "matches", true) => vec![S, S],
        ("lowerAscii" | "upperAscii" | "trim", true) => vec![S],
        ("verifyImageSignatures", false) => vec![S, list()],
        ("verifyAttestationSignatures", false) => vec![S, S, list()],
        ("extractPayload", false) => vec![S, S],
        (
            "parseImageReference"
            | "image"
            | "isImage"
            | "getImageData"
            | "sha1"
            | "sha256"
            | "md5"
            | "hash.sha1"
            | "hash.sha256"
            | "hash.md5"
            | "json.unmarshal"
            | "yaml.parse"
            | "parseServiceAccount"
            | "user.parseServiceAccount",
            false,
        ) => vec![S],
        ("gzip.decompress", false) => vec![Bytes],
        ("time.truncate", false) => vec![Timestamp, Duration],
        ("time.toCron", false) => vec![Timestamp],
        ("listObjToMap" | "transform.listObjToMap", false) => vec![list(), list(), S, S],
        ("regex.extract" | "regex.extractAll", false) => vec![S, S],
        _ => return None,
    })
}

/// How many arguments (besides the target of a member call) the functions
/// with several signatures, or untyped ones, take; `None` for the rest
/// (those of [`parameters`] included).
fn arities(name: &str, member: bool) -> Option<&'static [usize]> {
    Some(match (name, member) {
        ("size", false) => &[1],
        ("size", true) => &[0],
        ("int" | "uint" | "double" | "string" | "bytes" | "bool" | "dyn" | "type", false)
        | ("timestamp" | "duration", false) => &[1],
        ("charAt" | "find", true) => &[1],
        ("reverse", true) => &[0],
        ("replace", true) => &[2, 3],
        ("split" | "substring" | "indexOf" | "lastIndexOf" | "findAll", true) => &[1, 2],
        ("join", true) => &[0, 1],
        // Kyverno's image functions.
        ("registry" | "repository" | "identifier" | "tag" | "digest" | "containsDigest", true) => {
            &[0]
        }
        ("GetMetadata" | "getMetadata", true) => &[1],
        // Kyverno's libraries that need no cluster, untyped or several.
        ("json.marshal" | "gzip.compress", false) => &[1],
        ("random" | "random.random", false) => &[0, 1],
        ("regex.replace", false) => &[3, 4],
        ("time.now", false) => &[0],
        _ => return None,
    })
}

/// Whether `size` takes a value of type `t`.
fn sized(t: &Ty) -> bool {
    t.is_dyn() || matches!(t, Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..))
}

/// Whether `<` and friends take `a` and `b`: the same orderable type, or
/// two numbers (Kyverno enables cross-type numeric comparisons).
fn comparable(a: &Ty, b: &Ty) -> bool {
    (a.is_numeric() && b.is_numeric())
        || (a == b
            && matches!(
                a,
                Ty::Bool | Ty::String | Ty::Bytes | Ty::Timestamp | Ty::Duration
            ))
}

/// The result of an arithmetic operator on known operands, `None` when no
/// overload takes them (or one is `dyn`).
fn arithmetic(op: &str, a: &Ty, b: &Ty) -> Option<Ty> {
    use Ty::*;
    Some(match (op, a, b) {
        (_, Int, Int) | (_, Uint, Uint) => a.clone(),
        ("_%_", Double, Double) => return None,
        (_, Double, Double) => Double,
        ("_+_", String, String) | ("_+_", Bytes, Bytes) => a.clone(),
        ("_+_", List(x), List(y)) => Ty::list(Ty::join(x, y)),
        ("_+_", Timestamp, Duration) | ("_+_", Duration, Timestamp) => Timestamp,
        ("_+_" | "_-_", Duration, Duration) => Duration,
        ("_-_", Timestamp, Timestamp) => Duration,
        ("_-_", Timestamp, Duration) => Timestamp,
        _ => return None,
    })
}

/// The result of an arithmetic operator with a `dyn` operand, as cel-go's
/// checker resolves it: the overloads the known operand admits (`dyn`
/// admits any), and their result when they share one, else `dyn`. `None`
/// when the known operand admits none.
fn arithmetic_with_dyn(op: &str, a: &Ty, b: &Ty) -> Option<Ty> {
    use Ty::*;
    let list = || List(Box::new(Dyn));
    // (left, right, result) of each overload.
    let overloads: Vec<(Ty, Ty, Ty)> = match op {
        "_+_" => vec![
            (Int, Int, Int),
            (Uint, Uint, Uint),
            (Double, Double, Double),
            (String, String, String),
            (Bytes, Bytes, Bytes),
            (list(), list(), list()),
            (Timestamp, Duration, Timestamp),
            (Duration, Timestamp, Timestamp),
            (Duration, Duration, Duration),
        ],
        "_-_" => vec![
            (Int, Int, Int),
            (Uint, Uint, Uint),
            (Double, Double, Double),
            (Timestamp, Timestamp, Duration),
            (Timestamp, Duration, Timestamp),
            (Duration, Duration, Duration),
        ],
        "_%_" => vec![(Int, Int, Int), (Uint, Uint, Uint)],
        _ => vec![
            (Int, Int, Int),
            (Uint, Uint, Uint),
            (Double, Double, Double),
        ],
    };
    let admits = |param: &Ty, arg: &Ty| {
        arg.is_dyn() || param == arg || matches!((param, arg), (List(_), List(_)))
    };
    let mut results = overloads
        .into_iter()
        .filter(|(l, r, _)| admits(l, a) && admits(r, b))
        .map(|(l, _, result)| match (result, a, b) {
            // list(A) + list(A): the known side's element type.
            (List(_), List(t), _) | (List(_), _, List(t)) if matches!(l, List(_)) => {
                List(t.clone())
            }
            (result, _, _) => result,
        });
    let first = results.next()?;
    Some(match results.all(|r| r == first) {
        true => first,
        false => Dyn,
    })
}

/// The result type of the functions whose result does not depend on their
/// arguments; `dyn` for the rest.
fn function_type(name: &str, member: bool) -> Ty {
    match name {
        "size"
        | "int"
        | "indexOf"
        | "lastIndexOf"
        | "verifyImageSignatures"
        | "verifyAttestationSignatures" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "bool" | "contains" | "startsWith" | "endsWith" | "matches" | "isImage"
        | "containsDigest" => Ty::Bool,
        // The k8s libraries' predicates and numbers (names no other
        // library uses).
        "isURL"
        | "isIP"
        | "isCIDR"
        | "ip.isCanonical"
        | "isQuantity"
        | "isSemver"
        | "isSorted"
        | "isInteger"
        | "isGreaterThan"
        | "isLessThan"
        | "containsIP"
        | "containsCIDR"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "sets.contains"
        | "sets.equivalent"
        | "sets.intersects" => Ty::Bool,
        "asInteger" | "compareTo" | "major" | "minor" | "patch" | "prefixLength" | "family" => {
            Ty::Int
        }
        "asApproximateFloat" => Ty::Double,
        "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => Ty::String,
        "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt"
        | "strings.quote" | "sha1" | "sha256" | "md5" | "hash.sha1" | "hash.sha256"
        | "hash.md5" | "json.marshal" | "time.toCron" | "regex.replace" | "registry"
        | "repository" | "identifier" | "tag" | "digest" => Ty::String,
        // `join` on a list; `format` on a string.
        "join" | "format" if member => Ty::String,
        "bytes" | "gzip.compress" => Ty::Bytes,
        "timestamp" | "time.now" | "time.truncate" => Ty::Timestamp,
        "duration" => Ty::Duration,
        "split" | "regex.extractAll" => Ty::list(Ty::String),
        _ => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests;

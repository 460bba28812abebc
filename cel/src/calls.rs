//! The functions an expression calls, by the names they resolve to when it
//! runs, for the load-time check in [`super::compile`].
//!
//! The parser leaves `math.abs(x)` as a call of `abs` on the identifier
//! `math`; at run time, as in cel-go, a call whose target spells a
//! qualified name that, joined with the function's, names a function is a
//! call of that function. So the check resolves names the same way, and a
//! call on a name that is neither a variable nor a known function
//! (`sets.contains(a, b)` before `sets` existed) is refused at load, not at
//! the first request.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

/// A call that cannot resolve: its qualified name (`sets.contains`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Undeclared(pub(super) String);

/// The names of the functions `expr` calls, qualified where the call
/// resolves to a qualified function. `is_function` says whether a
/// qualified name is one; `is_variable` whether an identifier is bound
/// (comprehension variables are tracked here).
pub(super) fn called(
    expr: &IdedExpr,
    is_function: &dyn Fn(&str) -> bool,
    is_variable: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, Undeclared> {
    let mut walk = Walk {
        is_function,
        is_variable,
        scopes: Vec::new(),
        found: Vec::new(),
    };
    walk.expr(expr)?;
    ivpol_refs::sort::sort(&mut walk.found);
    walk.found.dedup();
    Ok(walk.found)
}

struct Walk<'a> {
    is_function: &'a dyn Fn(&str) -> bool,
    is_variable: &'a dyn Fn(&str) -> bool,
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<&'a str>,
    found: Vec<String>,
}

impl<'a> Walk<'a> {
    fn expr(&mut self, e: &'a IdedExpr) -> Result<(), Undeclared> {
        match &e.expr {
            Expr::Call(call) => {
                match call.target.as_deref() {
                    Some(target) => match segments(&target.expr) {
                        Some(segs) if !self.bound(segs[0]) => {
                            let name = format!("{}.{}", segs.join("."), call.func_name);
                            if !(self.is_function)(&name) {
                                return Err(Undeclared(name));
                            }
                            self.found.push(name);
                        }
                        _ => {
                            self.found.push(call.func_name.clone());
                            self.expr(target)?;
                        }
                    },
                    None => self.found.push(call.func_name.clone()),
                }
                for arg in &call.args {
                    self.expr(arg)?;
                }
            }
            Expr::Comprehension(c) => {
                self.expr(&c.iter_range)?;
                self.expr(&c.accu_init)?;
                let depth = self.scopes.len();
                self.scopes.push(&c.iter_var);
                self.scopes.extend(c.iter_var2.as_deref());
                self.scopes.push(&c.accu_var);
                for part in [&c.loop_cond, &c.loop_step, &c.result] {
                    self.expr(part)?;
                }
                self.scopes.truncate(depth);
            }
            Expr::List(list) => {
                for element in &list.elements {
                    self.expr(element)?;
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(e) = &entry.expr {
                        self.expr(&e.key)?;
                        self.expr(&e.value)?;
                    }
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.expr(&f.value)?;
                    }
                }
            }
            Expr::Select(select) => self.expr(&select.operand)?,
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
        Ok(())
    }

    /// Whether `name` is a comprehension variable in scope or a bound
    /// variable.
    fn bound(&self, name: &str) -> bool {
        self.scopes.contains(&name) || (self.is_variable)(name)
    }
}

/// `a.b.c` as `["a", "b", "c"]`, when `expr` is an identifier or field
/// selections on one (not a presence test).
pub(super) fn segments(expr: &Expr) -> Option<Vec<&str>> {
    let mut segments = Vec::new();
    let mut expr = expr;
    loop {
        match expr {
            Expr::Ident(name) => {
                segments.push(name.as_str());
                segments.reverse();
                return Some(segments);
            }
            Expr::Select(select) if !select.test => {
                segments.push(select.field.as_str());
                expr = &select.operand.expr;
            }
            _ => return None,
        }
    }
}

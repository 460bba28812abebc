//! The `images` CEL variable of one evaluation: built-in lists chosen by the
//! request's resource, plus the policy's `images[]`, each filtered by
//! `matchImageReferences`.

use crate::cel::{convert, Bindings, EvalError};
use crate::images::extract::Category;
use crate::images::glob;
use crate::policy::{CompiledPolicy, ImageMatcher};
use cel::Value;
use std::collections::BTreeMap;

/// The built-in image lists of an object by category (`containers`,
/// `initContainers`, `ephemeralContainers`), as
/// [`extract_lists`](crate::images::extract::extract_lists) finds them for the request's resource
/// ([`crate::admission::Object::image_lists`]).
pub(super) type BuiltIn<'a> = BTreeMap<&'static str, &'a [String]>;

/// Images per category, after `matchImageReferences`.
pub(super) struct PolicyImages {
    pub by_name: BTreeMap<String, Vec<String>>,
    /// Every matched image, in category order (`MatchedImages` in Kyverno).
    pub matched: Vec<String>,
}

impl PolicyImages {
    pub(super) fn to_cel(&self) -> Value {
        convert::string_map(self.by_name.iter().map(|(k, v)| {
            let list = v.iter().map(|s| convert::string(s.clone())).collect();
            (k.clone(), Value::List(std::sync::Arc::new(list)))
        }))
    }
}

ivpol_verify::debug_as_display!(ImagesError);
/// Why a policy's images could not be collected or matched.
#[derive(Clone, PartialEq, thiserror::Error)]
pub(crate) enum ImagesError {
    /// An `images` or `matchImageReferences` expression failed.
    #[error(transparent)]
    Expression(#[from] EvalError),
    /// A `matchImageReferences` expression returned another type than bool.
    #[error("matchImageReferences expression `{expression}` must return bool, got {got}")]
    MatchNotBool {
        /// Its source.
        expression: String,
        /// The CEL type it returned.
        got: String,
    },
    /// An `images` expression returned something other than a list.
    #[error("images[{name}] must return a list of strings, got {got}")]
    NotAList {
        /// The list's name.
        name: String,
        /// The CEL type it returned.
        got: String,
    },
    /// An `images` list with an item that is not a string.
    #[error("images[{name}] must return a list of strings, found {found}")]
    NotAString {
        /// The list's name.
        name: String,
        /// The item's CEL type.
        found: String,
    },
}

/// Whether `image` passes the policy's `matchImageReferences` (empty matches all).
///
/// Unlike Kyverno's plain string match, the image matches when either its
/// spelling as written or its canonical form (the host as runtimes resolve
/// it: lower case, no trailing dot or default port, Docker Hub's aliases)
/// does: `REGISTRY.EXAMPLE.COM/team/app` or `registry.example.com:443/...`
/// is pulled from `registry.example.com`, and must not escape a policy
/// that verifies `registry.example.com/*` by being spelled otherwise.
/// Matching more only verifies more.
pub(super) fn matches_image_references(
    matchers: &[ImageMatcher],
    image: &str,
    bindings: &Bindings,
) -> Result<bool, ImagesError> {
    if matchers.is_empty() {
        return Ok(true);
    }
    if matches_as_spelled(matchers, image, bindings)? {
        return Ok(true);
    }
    match crate::images::reference::parse(image).map(|r| r.canonical()) {
        Ok(canonical) if canonical != image => matches_as_spelled(matchers, &canonical, bindings),
        _ => Ok(false),
    }
}

fn matches_as_spelled(
    matchers: &[ImageMatcher],
    image: &str,
    bindings: &Bindings,
) -> Result<bool, ImagesError> {
    for m in matchers {
        let hit = match m {
            ImageMatcher::Glob(g) => glob::image_matches_glob(g, image),
            ImageMatcher::Expression(e) => {
                let scoped = bindings.with("ref", convert::string(image));
                match e.eval(&scoped)? {
                    Value::Bool(b) => b,
                    other => {
                        return Err(ImagesError::MatchNotBool {
                            expression: e.source.clone(),
                            got: convert::type_name(&other).to_string(),
                        })
                    }
                }
            }
        };
        if hit {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Collects and filters the images of the object for `policy`: the
/// `built_in` lists and the policy's own `images`.
pub(super) fn collect(
    policy: &CompiledPolicy,
    built_in: &BuiltIn<'_>,
    bindings: &Bindings,
) -> Result<PolicyImages, ImagesError> {
    // The policy's own lists, which take the place of a built-in one of
    // the same name.
    let mut own: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, expr) in &policy.images {
        let value = expr.eval(bindings)?;
        own.insert(name, string_list(&value, name)?);
    }
    let list = |name: &str| -> Option<&[String]> {
        own.get(name)
            .map(Vec::as_slice)
            .or_else(|| built_in.get(name).copied())
    };
    // Built-in categories first (in `MatchedImages` order), then the
    // policy's others by name.
    let categories = Category::ALL.map(Category::as_str);
    let names = (categories.iter().copied())
        .filter(|n| list(n).is_some())
        .chain(own.keys().copied().filter(|n| !categories.contains(n)));
    let mut by_name = BTreeMap::new();
    let mut matched: Vec<String> = Vec::new();
    for name in names {
        let mut kept = Vec::new();
        for image in list(name).unwrap_or_default() {
            if matches_image_references(&policy.image_matchers, image, bindings)? {
                if !matched.contains(image) {
                    matched.push(image.clone());
                }
                kept.push(image.clone());
            }
        }
        by_name.insert(name.to_string(), kept);
    }
    Ok(PolicyImages { by_name, matched })
}

fn string_list(value: &Value, name: &str) -> Result<Vec<String>, ImagesError> {
    let Value::List(items) = value else {
        return Err(ImagesError::NotAList {
            name: name.to_string(),
            got: convert::type_name(value).to_string(),
        });
    };
    items
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.to_string()),
            other => Err(ImagesError::NotAString {
                name: name.to_string(),
                found: convert::type_name(other).to_string(),
            }),
        })
        .collect()
}

//! Container images: reference parsing (go-containerregistry semantics as
//! Kyverno's CEL library sees them), `matchImageReferences` globs (gobwas/glob
//! semantics), and Kyverno's built-in extraction of images from pod specs.
//! Each submodule documents the Kyverno behaviour it mirrors; `parsed`
//! keeps parsed references for the instance's later requests.

pub mod extract;
pub mod parsed;

// References and globs live in the crate the host shares; the paths under
// `images` stay, so the layers above name them as before.
pub use ivpol_refs::{glob, reference};

pub use extract::{extract, extract_lists, pod_spec_path, Category, ExtractedImage};
pub use glob::{image_matches_glob, Glob, GlobError};
pub use reference::{parse, ImageRef, ImageRefError};

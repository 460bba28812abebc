//! Policy documents: the IVP/NIVP types, loading with diagnostics, and
//! compilation into [`CompiledPolicy`] (CEL compiled once per policy set).

pub mod attestor;
pub mod autogen;
mod compile;
pub mod exception;
mod load;
pub mod report_meta;
pub mod spec;
mod strict_json;
mod validate;

pub use compile::{
    CompiledPolicy, CompiledValidation, ImageMatcher, ImageVariables, PolicyKind, NAMESPACE_OBJECT,
    RESOURCE,
};
pub use load::{load, load_with, Diagnostic, LoadOptions, LoadedSet, Refused, SourceDocument};
pub use report_meta::ReportMeta;

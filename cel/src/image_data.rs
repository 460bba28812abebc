//! Kyverno's image data functions: `getImageData(image)` and, on the
//! `image` variable, `image.GetMetadata(image)` (also `getMetadata`). Both
//! return the registry's view of an image: `{image, resolvedImage, registry,
//! repository, identifier, tag, digest, imageIndex, manifest, config}`.
//!
//! The data comes from an [`ImageDataSource`] (the engine's registry client),
//! cached per request, so several expressions about one image fetch it once.

pub use super::services::{ImageDataError, ImageDataSource};
use super::Shared;
use super::{convert, services};
use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, FunctionContext, Value};
use std::sync::{Arc, OnceLock};

/// The value of the `image` variable: the handle `GetMetadata` is called on.
#[derive(Debug, PartialEq, Eq)]
pub struct ImageContext;

impl Opaque for ImageContext {
    fn runtime_type_name(&self) -> &str {
        "kyverno.imagedata"
    }
}

/// The `image` variable, converted once for every evaluation: it is the
/// same handle in all of them.
pub fn context() -> Option<&'static Shared> {
    static CONTEXT: OnceLock<Option<Shared>> = OnceLock::new();
    CONTEXT
        .get_or_init(|| Shared::new(context_value()))
        .as_ref()
}

/// The `image` variable.
pub fn context_value() -> Value {
    Value::Opaque(Arc::new(ImageContext))
}

/// Registers the functions; each fetches through the image data source
/// of the evaluation it runs in (`super::services`).
pub fn register(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function("getImageData", |ftx: &FunctionContext, image: Value| {
        let source = services::image_data(ftx, "getImageData")?;
        fetch(&*source, "getImageData", &image)
    });
    for name in ["GetMetadata", "getMetadata"] {
        let _ = ctx.add_function(
            name,
            move |ftx: &FunctionContext, This(this): This<Value>, image: Value| {
                let is_context =
                    matches!(&this, Value::Opaque(o) if o.downcast_ref::<ImageContext>().is_some());
                if !is_context {
                    return Err(ExecutionError::function_error(
                        name,
                        "must be called on the image variable",
                    ));
                }
                let source = services::image_data(ftx, name)?;
                fetch(&*source, name, &image)
            },
        );
    }
}

fn fetch(
    source: &dyn ImageDataSource,
    function: &str,
    image: &Value,
) -> Result<Value, ExecutionError> {
    let Value::String(image) = image else {
        return Err(ExecutionError::function_error(
            function,
            "argument must be a string",
        ));
    };
    let data = source
        .image_data(image)
        .map_err(|e| ExecutionError::function_error(function, e))?;
    Ok(convert::to_cel(&data))
}

//! Host bindings for the `policy-module` world (`wit/admission.wit`).

wasmtime::component::bindgen!({
    world: "policy-module",
    path: "../wit",
    imports: { default: async },
    exports: { default: async },
});

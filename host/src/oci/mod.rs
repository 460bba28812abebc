//! The component as an OCI artifact: the CNCF Wasm layout (`artifact`),
//! references (`reference`), a distribution client on the host's network
//! capability (`client`), push and pull, the cosign signatures of a pulled
//! artifact (`signatures`), and a digest-addressed cache of pulled
//! components and their signatures (`cache`).

pub(crate) mod artifact;
pub(crate) mod cache;
pub(crate) mod client;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod reference;
pub(crate) mod signatures;

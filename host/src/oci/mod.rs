//! The component as an OCI artifact: the CNCF Wasm layout (`artifact`),
//! references (`reference`), a distribution client on the host's network
//! capability (`client`), push and pull, the cosign signatures of a pulled
//! artifact (`signatures`), and a digest-addressed cache of pulled
//! components and their signatures (`cache`).

pub mod artifact;
pub mod cache;
pub mod client;
pub mod pull;
pub mod push;
pub mod reference;
pub mod signatures;

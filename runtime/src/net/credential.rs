//! A registry username and password, whichever source gave it (a docker
//! config, a Secret, a cloud provider): below both the keychain that
//! looks credentials up and the providers that make them. The type is the
//! one the webhook component reads docker configs into as well.

pub use ivpol_refs::registry_auth::Credential;

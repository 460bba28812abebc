//! Fulcio identities (reference §1.6).

//! Embedded SCTs (reference §1.6).

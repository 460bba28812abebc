//! Notary Project COSE_Sign1 envelopes (`application/cose`), through
//! `verify::notary::verify`: CBOR parse, protected and unprotected headers,
//! x5chain, signature, target, trust stores, expiry and RFC 3161
//! countersignatures.
#![no_main]

use ivpol_guest::notary::MEDIA_TYPE_COSE;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ivpol_fuzz::notary_verify(data, MEDIA_TYPE_COSE);
});

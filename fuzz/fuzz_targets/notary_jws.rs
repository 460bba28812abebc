//! Notary Project JWS envelopes (`application/jose+json`), through
//! `verify::notary::verify`: parse, protected headers, x5c chain, signature,
//! target, trust stores, expiry and RFC 3161 countersignatures.
#![no_main]

use ivpol_guest::notary::MEDIA_TYPE_JWS;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ivpol_fuzz::notary_verify(data, MEDIA_TYPE_JWS);
});

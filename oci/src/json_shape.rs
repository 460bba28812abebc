//! A bound on the shape of JSON read from a registry, checked on the bytes
//! before any parser builds a tree from them.
//!
//! A body's byte limit does not bound what parsing it costs: 4 MiB of
//! `[0,0,0,…]` is two million `serde_json::Value`s (64 MiB, twice that
//! while the vector grows), and a typed parser fills one struct per array
//! element. So every registry JSON document is first scanned, without
//! allocating, for how many values it holds, how deeply it nests and how
//! long its longest array is.

/// The most a document of one kind may hold.
#[derive(Debug, Clone, Copy)]
pub struct JsonLimits {
    /// Values (scalars and containers), counted as separators plus openings.
    pub max_values: usize,
    /// The deepest nesting of arrays and objects.
    pub max_depth: usize,
    /// The most elements of one array.
    pub max_array_len: usize,
}

/// Manifests, indexes and referrer listings (at most 4 MiB): an index
/// listing many referrers of other types is legitimate, so arrays are not
/// bounded here (the client bounds the referrers it keeps).
pub const MANIFEST: JsonLimits = JsonLimits {
    max_values: 100_000,
    max_depth: 32,
    max_array_len: usize::MAX,
};

/// Sigstore bundles, Notary JWS envelopes and cosign signature layers:
/// small documents whose arrays (certificate chains, log entries, proof
/// hashes, signatures) never legitimately hold more than a few dozen items.
pub const SIGNATURE: JsonLimits = JsonLimits {
    max_values: 20_000,
    max_depth: 32,
    max_array_len: 64,
};

/// Attestation and referrer payloads (SBOMs, provenance): large, but their
/// tree must still fit an instance next to everything else (about 100
/// bytes of memory per value).
pub const PAYLOAD: JsonLimits = JsonLimits {
    max_values: 200_000,
    max_depth: 64,
    max_array_len: usize::MAX,
};

/// How many values `bytes` holds (an upper bound), or `Err` naming the
/// first limit it goes over. Invalid JSON passes: the parser reports it
/// better.
pub fn check(bytes: &[u8], limits: &JsonLimits) -> Result<usize, String> {
    let mut values: usize = 1;
    // Per open container: whether it is an array, and its separators so far.
    let mut open: Vec<(bool, usize)> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                values += 1;
                if open.len() == limits.max_depth {
                    return Err(format!(
                        "JSON nests deeper than {} levels",
                        limits.max_depth
                    ));
                }
                open.push((b == b'[', 0));
            }
            b']' | b'}' => {
                open.pop();
            }
            b',' | b':' => {
                values += 1;
                if let Some((true, separators)) = open.last_mut() {
                    *separators += 1;
                    if *separators >= limits.max_array_len {
                        return Err(format!(
                            "JSON array has more than {} items",
                            limits.max_array_len
                        ));
                    }
                }
            }
            _ => continue,
        }
        if values > limits.max_values {
            return Err(format!("JSON holds more than {} values", limits.max_values));
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: JsonLimits = JsonLimits {
        max_values: 20,
        max_depth: 3,
        max_array_len: 4,
    };

    #[test]
    fn ordinary_documents_pass() {
        let doc = br#"{"a":[1,2,3,4],"b":{"c":"[[[[,,,,,,,,]]]]"}}"#;
        assert_eq!(check(doc, &SMALL), Ok(11));
        assert_eq!(check(b"not json", &SMALL), Ok(1));
    }

    #[test]
    fn values_depth_and_array_length_are_bounded() {
        let many = format!("{{{}}}", [r#""k":{}"#; 11].join(","));
        assert!(check(many.as_bytes(), &SMALL)
            .unwrap_err()
            .contains("more than 20 values"));
        assert!(check(b"[[[[1]]]]", &SMALL)
            .unwrap_err()
            .contains("deeper than 3"));
        assert!(check(b"[1,2,3,4,5]", &SMALL)
            .unwrap_err()
            .contains("more than 4 items"));
        // An escaped quote does not end a string.
        assert_eq!(check(br#"["\"[[[[,,,,,,"]"#, &SMALL), Ok(2));
    }

    #[test]
    fn a_flat_array_of_millions_is_refused_before_parsing() {
        let zeros = format!("[{}0]", "0,".repeat(2_000_000));
        let err = check(zeros.as_bytes(), &MANIFEST).unwrap_err();
        assert!(err.contains("more than 100000 values"), "{err}");
    }
}

//! Kubernetes object names as they may reach a URL path: read by the
//! cluster client and by the `k8s://` key source alike, below both.

/// A Kubernetes object name (a DNS-1123 subdomain): lowercase
/// alphanumerics, `-` and `.`, at most 253 characters, starting and
/// ending with an alphanumeric. It holds no `/`, `%` or `..`, so it cannot
/// leave its URL path segment.
pub fn is_object_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.'])
}

#[cfg(test)]
mod tests {
    use super::is_object_name;

    #[test]
    fn only_object_names_reach_a_url() {
        for good in ["regcred", "a.b-c", "x1", "configmaps", "v1", "apps"] {
            assert!(is_object_name(good), "{good}");
        }
        for bad in [
            "", ".", "..", "../etc", "a/b", "a?b", "A", "-a", "a.", "a%2f",
        ] {
            assert!(!is_object_name(bad), "{bad}");
        }
    }
}

//! RFC 6962 / RFC 9162 Merkle tree hashing and inclusion proofs.

use sha2::{Digest, Sha256};

use crate::Reason;

crate::debug_as_display!(MerkleError);
/// Why an RFC 6962 inclusion proof was not accepted.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum MerkleError {
    /// The leaf index is past the end of the tree.
    #[error("inclusion proof index {index} is not inside a tree of size {tree_size}")]
    IndexOutsideTree {
        /// The leaf's index.
        index: u64,
        /// The tree's size.
        tree_size: u64,
    },
    /// More hashes than a tree of this size has levels.
    #[error("inclusion proof has more hashes than the tree size allows")]
    TooManyHashes,
    /// Fewer hashes than reach the root.
    #[error("inclusion proof has fewer hashes than the tree size requires")]
    TooFewHashes,
    /// The proof leads to another root (both shown in hex).
    #[error(
        "inclusion proof does not lead to the root hash: computed {}, expected {}", hex(.computed), hex(.expected)
    )]
    RootMismatch {
        /// The root the proof leads to.
        computed: [u8; 32],
        /// The root the log signed.
        expected: [u8; 32],
    },
}

impl MerkleError {
    /// The class of this failure: [`Reason::Malformed`], which the log
    /// stage classes as a transparency-log failure.
    pub fn reason(&self) -> Reason {
        Reason::Malformed
    }
}

/// `SHA-256(0x00 || leaf)`.
pub fn leaf_hash(leaf: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    h.finalize().into()
}

/// `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Computes the root that `proof` gives for the leaf hash `leaf` at `index`
/// in a tree of `tree_size` leaves (RFC 9162 §2.1.3.2).
pub fn root_from_inclusion_proof(
    index: u64,
    tree_size: u64,
    leaf: &[u8; 32],
    proof: &[[u8; 32]],
) -> Result<[u8; 32], MerkleError> {
    if index >= tree_size {
        return Err(MerkleError::IndexOutsideTree { index, tree_size });
    }
    let mut f_n = index;
    let mut s_n = tree_size - 1;
    let mut r = *leaf;
    for p in proof {
        if s_n == 0 {
            return Err(MerkleError::TooManyHashes);
        }
        if f_n & 1 == 1 || f_n == s_n {
            r = node_hash(p, &r);
            while f_n & 1 == 0 && f_n != 0 {
                f_n >>= 1;
                s_n >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f_n >>= 1;
        s_n >>= 1;
    }
    if s_n != 0 {
        return Err(MerkleError::TooFewHashes);
    }
    Ok(r)
}

/// Checks that `leaf` (the raw entry, hashed here) is included at `index`
/// in the tree of `tree_size` leaves whose root is `root`.
pub fn verify_inclusion(
    index: u64,
    tree_size: u64,
    leaf: &[u8],
    proof: &[[u8; 32]],
    root: &[u8; 32],
) -> Result<(), MerkleError> {
    let computed = root_from_inclusion_proof(index, tree_size, &leaf_hash(leaf), proof)?;
    if &computed != root {
        return Err(MerkleError::RootMismatch {
            computed,
            expected: *root,
        });
    }
    Ok(())
}

pub(crate) use crate::encoding::hex;

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `r` is a well-formed proof that leads to a root other than
    /// `root`.
    fn leads_elsewhere(r: Result<(), MerkleError>, root: &[u8; 32]) -> bool {
        matches!(
            r,
            Err(MerkleError::RootMismatch { computed, expected })
                if expected == *root && computed != expected
        )
    }

    fn outside(index: u64, tree_size: u64) -> MerkleError {
        MerkleError::IndexOutsideTree { index, tree_size }
    }

    /// The root of `leaves` by the RFC 6962 definition (MTH), for checking.
    fn mth(leaves: &[Vec<u8>]) -> [u8; 32] {
        match leaves.len() {
            0 => Sha256::digest([]).into(),
            1 => leaf_hash(&leaves[0]),
            n => {
                let k = n.next_power_of_two() / 2;
                node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
            }
        }
    }

    /// The audit path of leaf `m` by the RFC 6962 definition (PATH).
    fn path(m: usize, leaves: &[Vec<u8>]) -> Vec<[u8; 32]> {
        let n = leaves.len();
        if n <= 1 {
            return vec![];
        }
        let k = n.next_power_of_two() / 2;
        if m < k {
            let mut p = path(m, &leaves[..k]);
            p.push(mth(&leaves[k..]));
            p
        } else {
            let mut p = path(m - k, &leaves[k..]);
            p.push(mth(&leaves[..k]));
            p
        }
    }

    fn leaves(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("leaf {i}").into_bytes()).collect()
    }

    #[test]
    fn every_leaf_of_every_small_tree_verifies() {
        for n in 1..=17usize {
            let ls = leaves(n);
            let root = mth(&ls);
            for m in 0..n {
                let p = path(m, &ls);
                verify_inclusion(m as u64, n as u64, &ls[m], &p, &root)
                    .unwrap_or_else(|e| panic!("n={n} m={m}: {e}"));
            }
        }
    }

    #[test]
    fn wrong_leaf_index_size_or_hash_fails() {
        let ls = leaves(7);
        let root = mth(&ls);
        let p = path(3, &ls);
        assert!(verify_inclusion(3, 7, &ls[3], &p, &root).is_ok());
        assert!(leads_elsewhere(
            verify_inclusion(3, 7, b"other", &p, &root),
            &root
        ));
        assert!(leads_elsewhere(
            verify_inclusion(2, 7, &ls[3], &p, &root),
            &root
        ));
        // a tree of 4 is one level shallower, one of 12 one level deeper
        assert_eq!(
            verify_inclusion(3, 4, &ls[3], &p, &root),
            Err(MerkleError::TooManyHashes)
        );
        assert_eq!(
            verify_inclusion(3, 12, &ls[3], &p, &root),
            Err(MerkleError::TooFewHashes)
        );
        let mut bad = p.clone();
        bad[1][0] ^= 1;
        assert!(leads_elsewhere(
            verify_inclusion(3, 7, &ls[3], &bad, &root),
            &root
        ));
        let mut longer = p.clone();
        longer.push([0; 32]);
        assert_eq!(
            verify_inclusion(3, 7, &ls[3], &longer, &root),
            Err(MerkleError::TooManyHashes)
        );
        assert_eq!(
            verify_inclusion(3, 7, &ls[3], &p[..p.len() - 1], &root),
            Err(MerkleError::TooFewHashes)
        );
        assert_eq!(
            verify_inclusion(7, 7, &ls[3], &p, &root),
            Err(outside(7, 7))
        );
        assert_eq!(
            verify_inclusion(0, 0, &ls[0], &[], &root),
            Err(outside(0, 0))
        );
    }

    #[test]
    fn single_leaf_tree_has_an_empty_proof() {
        let root = leaf_hash(b"x");
        assert!(verify_inclusion(0, 1, b"x", &[], &root).is_ok());
        assert_eq!(
            verify_inclusion(0, 1, b"x", &[[0; 32]], &root),
            Err(MerkleError::TooManyHashes)
        );
    }

    #[test]
    fn huge_indices_do_not_overflow() {
        // index 2^64-2 of 2^64-1 leaves: the last leaf, 63 hashes up
        assert!(
            root_from_inclusion_proof(u64::MAX - 1, u64::MAX, &[0; 32], &[[1; 32]; 63]).is_ok()
        );
        assert_eq!(
            root_from_inclusion_proof(u64::MAX - 1, u64::MAX, &[0; 32], &[[1; 32]; 64]),
            Err(MerkleError::TooManyHashes)
        );
        assert!(root_from_inclusion_proof(0, u64::MAX, &[0; 32], &[[1; 32]; 64]).is_ok());
        assert_eq!(
            root_from_inclusion_proof(u64::MAX, u64::MAX, &[0; 32], &[]),
            Err(outside(u64::MAX, u64::MAX))
        );
    }
}

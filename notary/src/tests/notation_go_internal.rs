//! Notary envelopes from `notation-go/internal/testdata`.

use super::*;

#[test]
fn internal_jws_and_cose_signatures() {
    let t = target(
        "sha256:19dbd2e48e921426ee8ace4dc892edfb2ecdc1d1a72d5416c83670c30acecef0",
        OCI_MANIFEST,
        481,
    );
    for (path, mt) in [
        (
            "notation-go/internal/testdata/jws_signature.sig",
            MEDIA_TYPE_JWS,
        ),
        (
            "notation-go/internal/testdata/cose_signature.sig",
            MEDIA_TYPE_COSE,
        ),
    ] {
        assert_eq!(media_type_of(path), mt);
        let env = read(path);
        let trust = Trust {
            roots: own_root(&env, mt),
            ..Trust::default()
        };
        ok(&env, mt, &t, &trust);
    }
}

"""Offline Sigstore bundle verification with sigstore-python (an oracle for
the fixture cross-checks).

usage: sigstore_python_verify.py TRUSTED_ROOT BUNDLE IDENTITY ISSUER (--artifact FILE | --dsse)

Prints `OK <payloadType>` (DSSE) or `OK` and exits 0 when the bundle
verifies; prints `FAIL <reason>` and exits 1 when it does not.
"""

import sys
from pathlib import Path

from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy


def main() -> int:
    root, bundle_path, identity, issuer, mode = sys.argv[1:6]
    try:
        verifier = Verifier(trusted_root=TrustedRoot.from_file(root))
        bundle = Bundle.from_json(Path(bundle_path).read_bytes())
        pol = policy.Identity(identity=identity, issuer=issuer)
        if mode == "--dsse":
            payload_type, _ = verifier.verify_dsse(bundle, pol)
            print(f"OK {payload_type}")
        else:
            verifier.verify_artifact(Path(sys.argv[6]).read_bytes(), bundle, pol)
            print("OK")
        return 0
    except Exception as e:  # every failure is a verdict here
        print(f"FAIL {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Prints the RFC 8785 canonical form of the JSON on stdin (the `rfc8785`
package sigstore-python itself uses), for SET checks with openssl."""

import json
import sys

import rfc8785

sys.stdout.buffer.write(rfc8785.dumps(json.load(sys.stdin)))

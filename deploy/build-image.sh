#!/bin/sh
# Builds the ivpol image with BuildKit, and with it the image's SBOM (SPDX,
# by BuildKit's syft scanner) and SLSA provenance (mode=max: the Dockerfile,
# the build arguments and the base images by digest), attached to the image
# as attestations in the registry.
#
#   deploy/build-image.sh REGISTRY/ivpol:TAG     builds and pushes
#   PUSH=0 deploy/build-image.sh ivpol:dev        builds into the local store
#                                                 (no attestations: the
#                                                 local store cannot hold them)
#
# The release step then signs the pushed digest and its attestations, e.g.
#   cosign sign --yes REGISTRY/ivpol@sha256:...
# and ivpol can verify its own image with an ImageValidatingPolicy.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 IMAGE:TAG" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ "${PUSH:-1}" = 1 ]; then
  exec docker buildx build -f deploy/Dockerfile -t "$1" \
    --sbom=true --provenance=mode=max --push .
else
  exec docker buildx build -f deploy/Dockerfile -t "$1" --load .
fi

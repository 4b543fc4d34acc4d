#!/usr/bin/env bash
# Recreate ./src from git clones of the three public repositories (bare or not; pass their .git directories):
#   git clone --bare https://github.com/trufflesuite/uws-js-unofficial
#   git clone --bare https://github.com/uNetworking/uWebSockets
#   git clone --bare https://github.com/uNetworking/uSockets
# usage: fetch-sources.sh <uws-js-unofficial git dir> <uWebSockets git dir> <uSockets git dir>
set -euo pipefail
HERE="${UWS_BUILD_DIR:-$(pwd)}"
T="${1:?the uws-js-unofficial git dir}"
W="${2:?the uWebSockets git dir}"
S="${3:?the uSockets git dir}"
T_REV=96ab8d7241c272734f4f3b07482bd256c5536c1a   # trufflesuite/uws-js-unofficial master = 20.30.0-unofficial.0
W_REV=7999d09286ae8748300b085a2c9be10efb169b2b   # gitlink 'uWebSockets' in T_REV
S_REV=8cd4cb66eb061b2594ca114b9ea1ead64613ad4b   # gitlink 'uSockets' in W_REV
# verify gitlinks
[ "$(git --git-dir="$T" ls-tree $T_REV uWebSockets | awk '{print $3}')" = $W_REV ]
[ "$(git --git-dir="$W" ls-tree $W_REV uSockets | awk '{print $3}')" = $S_REV ]
rm -rf "$HERE/src"; mkdir -p "$HERE/src/uws-js"
# binaries/ and the large blobs are not needed (and may be absent from a partial mirror)
TOP=$(git --git-dir="$T" ls-tree --name-only $T_REV | grep -vx -e binaries -e uWebSockets)
git --git-dir="$T" archive --prefix=uws-js/ $T_REV $TOP | tar x -C "$HERE/src"
git --git-dir="$W" archive --prefix=uws-js/uWebSockets/ $W_REV | tar x -C "$HERE/src"
git --git-dir="$S" archive --prefix=uws-js/uWebSockets/uSockets/ $S_REV | tar x -C "$HERE/src"
echo "sources in $HERE/src"

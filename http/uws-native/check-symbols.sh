#!/usr/bin/env bash
# usage: check-symbols.sh <addon.node> <node-binary> : every strong unversioned undefined symbol must be exported by node
set -euo pipefail
nm -D --defined-only "$2" | awk '{print $3}' | sed 's/@.*//' | sort -u > /tmp/nodesyms.$$
missing=$(nm -D --undefined-only "$1" | awk '$1=="U"{print $2}' | grep -v '@' | sort -u | comm -23 - /tmp/nodesyms.$$ || true)
rm -f /tmp/nodesyms.$$
if [ -n "$missing" ]; then echo "UNRESOLVED in $(basename "$1") vs $2:"; echo "$missing"; exit 1; fi
echo "ok: all node/v8/uv/zlib imports of $(basename "$1") are exported by $2"

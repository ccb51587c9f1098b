#!/usr/bin/env bash
# A/B of the spine figures (tiny add pair, 16M add) between two builds,
# interleaved in one run: OLD and NEW are build folders (e.g. a copy of
# build/release taken before a change, and build/release). Prints one line per
# run and the medians; the ratio new/old is what a change report quotes.
#   bench/ab_spine.sh /tmp/baseline build/release [runs]
set -euo pipefail
old="$1" new="$2" runs="${3:-5}"
one() {  # build folder -> "tiny_ns add16M_ms"
  local out
  out=$(TESSERA_PLUGIN_PATH="$1/lib/tessera/plugins" LD_LIBRARY_PATH="$1/lib" "$1/bin/tessera_bench_spine" \
        --benchmark_filter='tiny_add_paired|add_16M_tessera' --benchmark_min_time=0.3 2>&1)
  echo "$(echo "$out" | awk '/^tiny_add pair/ {print $3}') \
$(echo "$out" | sed 's/\x1b\[[0-9;]*m//g' | awk '/BM_add_16M_tessera/ {print $2}')"
}
declare -a ot ob nt nb
for ((i = 0; i < runs; i++)); do
  read -r a b <<<"$(one "$old")"; ot+=("$a"); ob+=("$b"); echo "old tiny ${a} ns  add16M ${b} ms"
  read -r a b <<<"$(one "$new")"; nt+=("$a"); nb+=("$b"); echo "new tiny ${a} ns  add16M ${b} ms"
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
mot=$(median "${ot[@]}") mob=$(median "${ob[@]}") mnt=$(median "${nt[@]}") mnb=$(median "${nb[@]}")
awk -v a="$mot" -v b="$mnt" -v c="$mob" -v d="$mnb" 'BEGIN {
  printf "medians: tiny add pair %.1f -> %.1f ns (new/old %.3f); 16M add %.2f -> %.2f ms (new/old %.3f)\n", a, b, b/a, c, d, d/c }'

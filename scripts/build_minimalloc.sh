#!/bin/sh
# Builds MiniMalloc (github.com/google/minimalloc, Apache-2.0) from its repository, to measure it
# beside `memfold place` in one run (`make placement-table MINIMALLOC=...`). Nothing of it is
# copied into memfold: its sources are unpacked under OUT and built there.
#
# Usage: scripts/build_minimalloc.sh MINIMALLOC_GIT ABSEIL_GIT OUT
#   MINIMALLOC_GIT  a git directory of MiniMalloc's repository (e.g. a `fetch` mirror)
#   ABSEIL_GIT      a git directory of abseil-cpp holding the commit MiniMalloc pins as its
#                   submodule (the mirror of MiniMalloc does not carry submodules)
#   OUT             where to unpack and build; prints the binary's path, OUT/build/minimalloc
# googletest, its other submodule, is only needed by its tests; Debian's sources stand in.
set -eu
minimalloc_git=$1
abseil_git=$2
out=$3
src=$out/src
rm -rf "$src"
mkdir -p "$src"
git --git-dir="$minimalloc_git" archive HEAD | tar -x -C "$src"
pinned=$(git --git-dir="$minimalloc_git" ls-tree HEAD external/abseil-cpp | awk '{print $3}')
rmdir "$src/external/abseil-cpp" 2>/dev/null || true
mkdir -p "$src/external/abseil-cpp"
git --git-dir="$abseil_git" archive "$pinned" | tar -x -C "$src/external/abseil-cpp"
rmdir "$src/external/googletest" 2>/dev/null || true
ln -sfn /usr/src/googletest "$src/external/googletest"
cmake -S "$src" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/build" --target minimalloc >/dev/null
echo "$out/build/minimalloc"

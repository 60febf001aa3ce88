#!/usr/bin/env bash
# Provides the servers of the compatibility matrix, each from Debian's
# archive, cached under build/servers/<name>/server:
#
#   valkey-8.0  bookworm-backports binary (scripts/install-valkey.sh, on PATH)
#   valkey-8.1  trixie's source tarball, built with its bundled jemalloc
#   valkey-9    sid's source package (Debian's patches, system jemalloc)
#   redis-7.0   bookworm's binary package, extracted (never installed)
#   redis-8.0   sid's source package (Debian's patches, system jemalloc)
#   valkey-8.0-io-threads  valkey-8.0's binary run with --io-threads 2 (a
#               wrapper script): Valkey 8's I/O threads read and write the
#               clients' sockets while the module's verbs run on the main
#               thread, as its commands do
#
# and, outside the matrix (named only), for `make memcheck`:
#
#   valkey-8.1-libc  valkey-8.1's tarball built with libc's malloc, whose
#                    blocks valgrind's memcheck tracks (not jemalloc's)
#
# Trixie's and sid's binary packages need a newer libc than bookworm's, so
# those servers are built from source with `make -j2`. Trixie's own
# debian/ tarballs for valkey 8.1 and redis 8.0 are listed in its index but
# not served by the archive here, so valkey 8.1 is built from its .orig
# tarball (which keeps the bundled jemalloc), and redis 8.0 comes from sid,
# which still carries the 8.0 series.
#
# Usage: scripts/servers.sh [--list] [NAME...]   (no NAME: all of them)
# Prints "NAME PATH" for each server once it is there, and keeps where it
# came from in build/servers/<name>/origin. Idempotent: a server already
# built is not built again. Adds deb-src lines only (no binary
# lines), so no installed package changes; installs build dependencies.
set -euo pipefail

NAMES=(valkey-8.0 valkey-8.1 valkey-9 redis-7.0 redis-8.0 valkey-8.0-io-threads)
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/build/servers"

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${NAMES[@]}"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# apt_ready adds the deb-src lines for trixie and sid, installs the build
# dependencies and refreshes the index, once per run.
apt_ready=""
apt_ready() {
  [ -n "$apt_ready" ] && return
  local list=/etc/apt/sources.list.d/emq-src.sources
  if [ ! -f "$list" ]; then
    $sudo tee "$list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends \
    build-essential dpkg-dev pkg-config libjemalloc-dev libssl-dev \
    liblzf-dev liblua5.1-0 lua-bitop lua-cjson >/dev/null
  apt_ready=1
}

# fetch_source SRC/SUITE DIR [--tar-only]: the source package into DIR/src.
fetch_source() {
  local spec=$1 dir=$2 only=${3:-}
  rm -rf "$dir/src" && mkdir -p "$dir/src"
  (cd "$dir/src" && apt-get source -qq $only --download-only "$spec" 2>&1 |
    grep -v 'unsandboxed' || true)
}

# unpack_one DIR GLOB: extracts the only archive matching GLOB, prints its tree.
unpack_one() {
  local dir=$1 glob=$2 tree
  case "$glob" in
    # --no-check: apt-get source has checked the files against the archive's signed index.
    *.dsc) (cd "$dir/src" && dpkg-source -q --no-check -x $glob tree >/dev/null) ;;
    *) mkdir -p "$dir/src/tree" && tar xf "$dir/src"/$glob -C "$dir/src/tree" --strip-components=1 ;;
  esac
  tree="$dir/src/tree"
  [ -f "$tree/src/Makefile" ] || { echo "servers: no source tree from $glob" >&2; exit 1; }
  echo "$tree"
}

# want_version BINARY PREFIX: fails unless the binary reports v=PREFIX...
want_version() {
  local v
  v=$("$1" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
  case "$v" in
    "$2"*) ;;
    *) echo "servers: $1 is $v, not $2.x" >&2; exit 1 ;;
  esac
}

build_server() {
  local name=$1 dir="$cache/$1" tree
  # The sources sit inside this repository: keep its commit out of theirs.
  export GIT_CEILING_DIRECTORIES="$dir/src"
  case "$name" in
    valkey-8.0 | valkey-8.0-io-threads)
      bash "$root/scripts/install-valkey.sh" >/dev/null
      mkdir -p "$dir"
      local bin origin
      bin=$(command -v valkey-server)
      origin="bookworm-backports binary package valkey-server $(dpkg-query -W -f='${Version}' valkey-server)"
      if [ "$name" = valkey-8.0 ]; then
        ln -sfn "$bin" "$dir/server"
      else
        printf '#!/bin/sh\nexec %s "$@" --io-threads 2\n' "$bin" >"$dir/server"
        chmod +x "$dir/server"
        origin+=", run with --io-threads 2"
      fi
      echo "$origin" >"$dir/origin"
      ;;
    valkey-8.1 | valkey-8.1-libc)
      local malloc=jemalloc what="bundled jemalloc"
      [ "$name" = valkey-8.1-libc ] && malloc=libc what="libc malloc"
      apt_ready
      fetch_source valkey/trixie "$dir" --tar-only
      tree=$(unpack_one "$dir" 'valkey_8.1*.orig.tar.*')
      make -C "$tree" -j2 BUILD_TLS=no MALLOC=$malloc valkey-server >"$dir/build.log" 2>&1 ||
        { tail -20 "$dir/build.log" >&2; exit 1; }
      cp "$tree/src/valkey-server" "$dir/server"
      echo "trixie source package valkey, its $(cd "$dir/src" && ls valkey_*.orig.tar.*) ($what)" >"$dir/origin"
      ;;
    valkey-9 | redis-8.0)
      apt_ready
      local pkg=${name%%-*}
      fetch_source "$pkg/sid" "$dir"
      tree=$(unpack_one "$dir" "${pkg}_*.dsc")
      make -C "$tree/src" -j2 BUILD_TLS=no USE_SYSTEM_JEMALLOC=yes USE_JEMALLOC=yes \
        "$pkg-server" >"$dir/build.log" 2>&1 || { tail -20 "$dir/build.log" >&2; exit 1; }
      cp "$tree/src/$pkg-server" "$dir/server"
      echo "sid source package $(cd "$dir/src" && ls ${pkg}_*.dsc | sed 's/_/ /; s/\.dsc$//') (Debian's patches, system jemalloc)" >"$dir/origin"
      ;;
    redis-7.0)
      apt_ready
      rm -rf "$dir" && mkdir -p "$dir/deb"
      (cd "$dir/deb" && apt-get download -qq redis-server redis-tools 2>&1 |
        grep -v unsandboxed || true)
      for deb in "$dir"/deb/*.deb; do dpkg -x "$deb" "$dir/root"; done
      cp "$dir/root/usr/bin/redis-server" "$dir/server"
      echo "bookworm binary package redis-server $(dpkg-deb -f "$dir"/deb/redis-server_*.deb Version), extracted" >"$dir/origin"
      ;;
    *)
      echo "servers: unknown server $name (one of: ${NAMES[*]} valkey-8.1-libc)" >&2
      exit 2
      ;;
  esac
  rm -rf "$dir/src" "$dir/root" "$dir/deb"
}

[ $# -gt 0 ] || set -- "${NAMES[@]}"
for name in "$@"; do
  if [ ! -x "$cache/$name/server" ] || [ ! -f "$cache/$name/origin" ]; then
    echo "servers: providing $name" >&2
    build_server "$name"
  fi
  version=${name#*-}
  want_version "$cache/$name/server" "${version%%-*}"
  echo "$name $cache/$name/server"
done

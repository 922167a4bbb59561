# Sourced by .ci/busybox.sh and .ci/gnu-suites.sh: Debian bookworm's source packages, fetched
# with `apt-get source --download-only` through a private deb-src list, so nothing of the
# system's apt configuration is read or changed.
#
#   debian_sources DIR PACKAGE=VERSION...   downloads the packages' tarballs into DIR

debian_sources() {
  local dl=$1 apt
  shift
  apt=$(mktemp -d)
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dl"
  cat >"$apt/src.sources" <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  local aptopts=(-o "Dir::Etc::SourceList=$apt/src.sources" -o Dir::Etc::SourceParts=/dev/null
                 -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
                 -o APT::Sandbox::User=root)
  apt-get -q "${aptopts[@]}" update >/dev/null
  (cd "$dl" && apt-get -q "${aptopts[@]}" source --download-only "$@" >/dev/null)
  rm -rf "$apt"
}

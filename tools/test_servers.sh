#!/bin/sh
# Unpacks the Prometheus and Pushgateway binaries of Debian's packages into a folder of the
# project (default .test-servers/: usr/bin/prometheus, promtool, prometheus-pushgateway), for
# the export tests' servers on loopback. Nothing is installed in the system, so no service is
# enabled or started (installing Debian's `prometheus` package starts one at boot and now).
# `apt-get download` needs no root; when apt has no package lists yet it runs `apt-get update`
# (SUDO: the prefix that makes apt root, '' as root). Quick when the binaries are there.
set -eu
dest=${1:-.test-servers}
packages="prometheus prometheus-pushgateway"
have=1
for b in prometheus promtool prometheus-pushgateway; do
  [ -x "$dest/usr/bin/$b" ] || have=0
done
[ "$have" = 1 ] && exit 0
sudo=${SUDO:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"   # apt's download user (_apt) writes here
echo "unpacking Debian's $packages into $dest/ (test servers; no service installed)"
if ! (cd "$work" && apt-get download -qq $packages 2>"$work/err"); then
  if grep -q -e "Unable to locate" -e "has no installation candidate" "$work/err"; then
    $sudo apt-get update -qq
    (cd "$work" && apt-get download -qq $packages)
  else
    cat "$work/err" >&2
    exit 1
  fi
fi
mkdir -p "$dest"
for deb in "$work"/*.deb; do
  dpkg-deb -x "$deb" "$dest"
done
"$dest/usr/bin/prometheus" --version >/dev/null 2>&1 || {
  echo "the unpacked prometheus does not run: $dest/usr/bin/prometheus" >&2; exit 1; }

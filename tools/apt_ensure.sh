#!/bin/sh
# Installs the Debian packages given as arguments that are missing (one dpkg query each;
# apt only when one is). When another apt/dpkg holds apt's locks (unattended upgrades, a
# second `make`), it says so and waits for them, at most APT_LOCK_WAIT seconds (default 300),
# then fails with a message saying what to do. SUDO: the prefix that makes apt root ('' as root).
set -u
wait_s=${APT_LOCK_WAIT:-300}
sudo=${SUDO:-}
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing Debian packages:$missing"
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# apt-get update waits for no lock (DPkg::Lock::Timeout covers dpkg's): retried here
waited=0
until $sudo apt-get update -qq 2>"$err"; do
  if ! grep -q -e "Could not get lock" -e "Unable to lock" "$err"; then
    cat "$err" >&2; exit 1
  fi
  if [ "$waited" -ge "$wait_s" ]; then
    echo "apt's lock is still held after ${wait_s} s (another apt/dpkg is running): wait for it to finish and run make again, or set APT_LOCK_WAIT=N (seconds)" >&2
    exit 1
  fi
  [ "$waited" -eq 0 ] && echo "another apt/dpkg holds apt's lock: waiting for it (at most ${wait_s} s; APT_LOCK_WAIT=N to change)"
  sleep 2; waited=$((waited + 2))
done
# install: apt itself waits for the dpkg lock, for the time that is left
left=$((wait_s - waited)); [ "$left" -lt 1 ] && left=1
if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout="$left" \
    install -y -qq --no-install-recommends $missing >/dev/null 2>"$err"; then
  cat "$err" >&2
  if grep -q -e "dpkg frontend lock" -e "Could not get lock" "$err"; then
    echo "the dpkg lock is still held after ${wait_s} s (another apt/dpkg is running): wait for it to finish and run make again, or set APT_LOCK_WAIT=N (seconds)" >&2
  fi
  exit 1
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The lab (docs/validation.md): boots Debian kernel packages under
# qemu-system-x86_64 (TCG, no KVM) with the topologies of topologies.txt,
# an initramfs made of our binary, its shared libraries and busybox-static,
# runs a suite of scenarios inside, gets /out back through a second serial
# port (base64 tar + sha256) and checks it on the host (check.py).
#
# Usage: tests/lab/lab.sh [--out DIR] [--update-doc]
# Env:   SHOOTDOWN            the binary (default build/src/shootdown)
#        LAB_KERNELS          package names (default: tests/lab/kernels.txt)
#        LAB_TOPOLOGIES       topology names (default: all of topologies.txt)
#        LAB_CACHE            kernel cache (default ~/.cache/shootdown-lab)
#        LAB_BOOT_TIMEOUT     seconds per boot (default 420)
#        LAB_BOOTS            attempts per (kernel, topology) (default 3)
#        LAB_JOBS             boots side by side (default 1; each is one TCG thread)
# Exit:  0 all checks pass, 1 a check failed, 77 skipped (reason on stdout).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${SHOOTDOWN_SRC:-$(cd "$here/../.." && pwd)}
bin=${SHOOTDOWN:-$src/build/src/shootdown}
out=
update_doc=0
while (($#)); do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --update-doc) update_doc=1; shift ;;
    *) echo "lab: unknown argument $1" >&2; exit 2 ;;
  esac
done
out=${out:-${SHOOTDOWN_BUILD:-$src/build}/lab}
cache=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shootdown-lab}
boot_timeout=${LAB_BOOT_TIMEOUT:-420}
max_boots=${LAB_BOOTS:-3}
t0=$(date +%s)

skip() { echo "SKIP: $*"; exit 77; }
log() { echo "lab: $*" >&2; }

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (scripts/install-deps.sh --with-integration installs qemu-system-x86)"
# Not `--list | grep -q`: under pipefail grep's early exit SIGPIPEs busybox
# and the pipeline fails at random (a lab run of 2026-12-05 skipped so).
[[ -x /bin/busybox ]] && [[ $'\n'$(/bin/busybox --list 2>/dev/null)$'\n' == *$'\n'cpio$'\n'* ]] ||
  skip "busybox-static not installed (/bin/busybox with cpio; scripts/install-deps.sh --with-integration)"
[[ -x $bin ]] || skip "no shootdown binary at $bin (build first)"
command -v python3 >/dev/null || skip "python3 not installed"
[[ $(uname -m) == x86_64 ]] || skip "the lab boots x86_64 kernels; host is $(uname -m)"

mkdir -p "$out" "$cache/kernels"
rm -rf "${out:?}"/runs
mkdir -p "$out/runs"

# --- kernels ---------------------------------------------------------------
if [[ -n ${LAB_KERNELS:-} ]]; then
  read -r -a kernels <<<"$LAB_KERNELS"
else
  mapfile -t kernels < <(grep -v '^\s*#' "$here/kernels.txt" | grep -v '^\s*$')
fi

# apt for one extra suite (e.g. trixie-backports), for the lab only: its
# own sources list, lists and cache under $cache/apt-SUITE; the system's apt
# configuration is never touched. Prints the apt options.
suite_apt() {
  local suite=$1 d=$cache/apt-$1
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  local codename=${suite%%-*}
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" >"$d/sources.list"
  local opts="-o Dir::Etc::SourceList=$d/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$d/lists -o Dir::Cache=$d/cache"
  # Backports keeps only its latest build: refresh the lists once a day.
  if [[ -z $(find "$d/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1) ]]; then
    apt-get $opts update >/dev/null 2>&1 || log "apt-get update for $suite ($codename) failed"
  fi
  echo "$opts"
}

# Resolves a metapackage to the package holding the kernel image (from
# Linux 7.x Debian splits it: linux-image-V is itself a metapackage of
# linux-binary-V, whose vmlinuz is /usr/lib/modules/V/vmlinuz); prints the
# directory it is extracted to (once, into the cache). An entry SUITE:PKG
# resolves PKG in that suite (suite_apt).
fetch_kernel() {
  local entry=$1 pkg real deb dir opts="" suite=""
  pkg=${entry#*:}
  [[ $entry == *:* ]] && suite=${entry%%:*}
  [[ -n $suite ]] && opts=$(suite_apt "$suite")
  real=$pkg
  local hop
  for hop in 1 2 3; do
    # Only packages holding an image are cached: one of them ends the walk.
    ls "$cache/kernels/${real}_"*.deb >/dev/null 2>&1 && break
    # A metapackage has no vmlinuz: follow its linux-image-* / linux-binary-* dependency.
    local dep
    # shellcheck disable=SC2086
    dep=$(apt-cache $opts depends "$real" 2>/dev/null | awk '/Depends: linux-(image|binary)-[0-9]/{print $2; exit}')
    [[ -n $dep ]] || break
    real=$dep
  done
  deb=$(ls "$cache/kernels/${real}_"*.deb 2>/dev/null | head -1)
  if [[ -z $deb ]]; then
    # shellcheck disable=SC2086
    (cd "$cache/kernels" && apt-get $opts download "$real" >/dev/null 2>&1) || return 1
    deb=$(ls "$cache/kernels/${real}_"*.deb 2>/dev/null | head -1)
    [[ -n $deb ]] || return 1
  fi
  dir=$cache/kernels/x/$real
  if [[ -z $(vmlinuz_in "$dir") ]]; then
    rm -rf "$dir" && mkdir -p "$dir" && dpkg-deb -x "$deb" "$dir" || return 1
  fi
  [[ -n $(vmlinuz_in "$dir") ]] || return 1
  echo "$dir"
}

# The kernel image of an extracted package: boot/vmlinuz-V (to 6.x) or
# usr/lib/modules/V/vmlinuz (7.x).
vmlinuz_in() {
  ls "$1"/boot/vmlinuz-* "$1"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -1
}

declare -A kdir
for k in "${kernels[@]}"; do
  d=$(fetch_kernel "$k") || { log "kernel package $k: not cached and apt-get download failed"; continue; }
  kdir[$k]=$d
  log "kernel $k -> $(basename "$d")"
done
((${#kdir[@]} > 0)) || skip "no kernel package could be fetched (${kernels[*]}): apt-get download failed and $cache/kernels has none"

# --- initramfs -------------------------------------------------------------
root=$out/initramfs-root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,out,lab/suites,usr/bin,usr/sbin}
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"  # /init is a #!/bin/sh script
cp "$bin" "$root/bin/shootdown"
# The probe library, next to the binary where `probe` looks first.
for l in "$(dirname "$bin")/libshootdown_probe.so" "$(dirname "$bin")/probe/libshootdown_probe.so"; do
  [[ -f $l ]] && { cp "$l" "$root/bin/libshootdown_probe.so"; break; }
done
# Shared libraries and the loader, at the paths the binary asks for.
while read -r lib; do
  [[ -f $lib ]] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done < <(ldd "$bin" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}')
cp "$here/guest-init.sh" "$root/init"
cp "$here"/suites/*.sh "$root/lab/suites/"
chmod +x "$root/init" "$root"/lab/suites/*.sh
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
(cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$out/initramfs.gz" ||
  { echo "lab: cannot build the initramfs" >&2; exit 1; }
log "initramfs $(du -h "$out/initramfs.gz" | cut -f1)"

# --- boots -----------------------------------------------------------------
mapfile -t topo_lines < <(grep -v '^\s*#' "$here/topologies.txt" | grep -v '^\s*$')
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

boot_one() {  # kernel-dir topo mem smp cmdline suite rundir
  local kd=$1 topo=$2 mem=$3 smp=$4 cmd=$5 suite=$6 rd=$7 n start rc vmlinuz
  vmlinuz=$(vmlinuz_in "$kd")
  for ((n = 1; n <= max_boots; n++)); do
    rm -f "$rd/console.log" "$rd/serial1.txt"
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout "$boot_timeout" qemu-system-x86_64 -nodefaults -display none -no-reboot \
      -accel "tcg,thread=${LAB_TCG_THREAD:-single}" -cpu max,-la57,-cx16 -m "$mem" $smp \
      -kernel "$vmlinuz" -initrd "$out/initramfs.gz" \
      -append "console=ttyS0 panic=-1 oops=panic loglevel=4 lab.suite=$suite lab.deadline=$((boot_timeout - 90)) $cmd" \
      -serial "file:$rd/console.log" -serial "file:$rd/serial1.txt" </dev/null >"$rd/qemu.log" 2>&1
    rc=$?
    echo "boot $n: qemu rc=$rc, $(($(date +%s) - start)) s" >>"$rd/boots.txt"
    if python3 "$here/decode.py" "$rd/serial1.txt" "$rd/guest.tgz" 2>>"$rd/boots.txt"; then
      mkdir -p "$rd/out" && tar xzf "$rd/guest.tgz" -C "$rd/out" && {
        printf '{"boots": %d, "seconds": %d, "qemu_rc": %d}\n' "$n" "$(($(date +%s) - start))" "$rc" >"$rd/boot.json"
        return 0
      }
    fi
    if grep -q LAB-BOOTED "$rd/console.log" 2>/dev/null; then
      echo "boot $n: the suite started but no valid result came back" >>"$rd/boots.txt"
    else
      echo "boot $n: kernel died before the suite: $(grep -m1 -E 'Oops|BUG|panic|general protection' "$rd/console.log" 2>/dev/null)" >>"$rd/boots.txt"
    fi
    cp "$rd/console.log" "$rd/console.boot$n.log" 2>/dev/null
  done
  printf '{"boots": %d, "seconds": 0, "failed": true}\n' "$max_boots" >"$rd/boot.json"
  return 1
}

want_topos=${LAB_TOPOLOGIES:-}
# Each boot is one single-threaded TCG process: LAB_JOBS of them may run side
# by side (default 1). Counts, choices and texts do not depend on the host's
# speed, but the boot timeout does: on this 2-vCPU machine two boots side by
# side slowed 6.12 smt-numa8 from 342 s to past its 420 s timeout (its result
# transfer is 30 MB). Largest topologies first, newest kernel first (the
# longest boots), so that shorter ones fill in behind them.
jobs_max=${LAB_JOBS:-1}
((jobs_max >= 1)) || jobs_max=1
run_boot() {  # kernel-package topology-line
  local k=$1 line=$2 name mem smp cmd suite kname rd s
  IFS='|' read -r name mem smp cmd suite <<<"$line"
  name=$(trim "$name"); mem=$(trim "$mem"); smp=$(trim "$smp"); cmd=$(trim "$cmd"); suite=$(trim "$suite")
  kname=$(basename "${kdir[$k]}")
  rd=$out/runs/$kname/$name
  mkdir -p "$rd"
  printf '{"package": "%s", "image": "%s", "topology": "%s", "smp": "%s", "cmdline": "%s", "suite": "%s", "memory_mib": %s}\n' \
    "$k" "$kname" "$name" "$smp" "$cmd" "$suite" "$mem" >"$rd/lab.json"
  log "boot $kname on $name (suite $suite)"
  s=$(date +%s)
  boot_one "${kdir[$k]}" "$name" "$mem" "$smp" "$cmd" "$suite" "$rd" || log "$kname on $name: no result after $max_boots boots (see $rd/boots.txt)"
  log "$kname on $name: $(($(date +%s) - s)) s, $(tail -1 "$rd/boots.txt")"
}
for line in "${topo_lines[@]}"; do
  IFS='|' read -r name _ <<<"$line"
  name=$(trim "$name")
  if [[ -n $want_topos && " $want_topos " != *" $name "* ]]; then continue; fi
  for ((i = ${#kernels[@]} - 1; i >= 0; i--)); do
    k=${kernels[i]}
    [[ -n ${kdir[$k]:-} ]] || continue
    while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n; done
    run_boot "$k" "$line" &
  done
done
wait

total=$(($(date +%s) - t0))
log "boots done in $total s; checking"
args=("$out" --seconds "$total")
((update_doc)) && args+=(--update-doc "$src/docs/validation.md")
python3 "$here/check.py" "${args[@]}"

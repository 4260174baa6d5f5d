#!/usr/bin/env bash
# Installs rtl-pmc into a prefix:
#   PREFIX/bin/rtl-pmc
#   PREFIX/lib/rtl-pmc/librtl_pmc.so, librtl_pmc_roctx.so   (found by rtl-pmc in ../lib/rtl-pmc/)
#   PREFIX/lib/rtl-pmc/libhsa_runtime64.so, libhsa_amd_aqlprofile64.so, librtl_sim_drm.so, rtl-demo-app
#                                                           (the simulated GPU of --sim, and its demo)
#   PREFIX/bin/rocprofv3 -> rtl-pmc                          (only with --rocprofv3-alias)
#   PREFIX/bin/rocprofv3_avail_module/                       (only with --rocprofv3-alias: the
#                                                            counter listing rocprof-compute imports)
#
# Usage: bash install.sh [--from DIR] [--rocprofv3-alias] PREFIX
#   Builds the release profile first (cargo build --release --workspace), unless --from DIR names
#   a build directory to copy from instead (e.g. target/debug).
set -euo pipefail
usage="usage: bash install.sh [--from DIR] [--rocprofv3-alias] PREFIX"
from="" prefix="" alias=0
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] || { echo "install.sh: --from needs a directory; $usage" >&2; exit 2; }
            from="$2"; shift 2 ;;
    --from=*) from="${1#--from=}"; shift ;;
    --rocprofv3-alias) alias=1; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*) echo "install.sh: unknown option '$1'; $usage" >&2; exit 2 ;;
    *) [ -z "$prefix" ] || { echo "install.sh: one PREFIX only ('$prefix', then '$1'); $usage" >&2; exit 2; }
       prefix="$1"; shift ;;
  esac
done
[ -n "$prefix" ] || { echo "install.sh: no PREFIX given; $usage" >&2; exit 2; }
cd "$(dirname "$0")"
if [ -z "$from" ]; then
  cargo build --release --workspace
  from=target/release
fi
for file in rtl-pmc librtl_pmc.so librtl_pmc_roctx.so libhsa_runtime64.so libhsa_amd_aqlprofile64.so librtl_sim_drm.so rtl-demo-app; do
  [ -f "$from/$file" ] || { echo "install.sh: $from/$file is missing; build it with cargo build --workspace" >&2; exit 2; }
done
mkdir -p "$prefix/bin" "$prefix/lib/rtl-pmc"
install -m 755 "$from/rtl-pmc" "$prefix/bin/rtl-pmc"
for file in librtl_pmc.so librtl_pmc_roctx.so libhsa_runtime64.so libhsa_amd_aqlprofile64.so librtl_sim_drm.so; do
  install -m 755 "$from/$file" "$prefix/lib/rtl-pmc/$file"
done
install -m 755 "$from/rtl-demo-app" "$prefix/lib/rtl-pmc/rtl-demo-app"
if [ "$alias" -eq 1 ]; then
  ln -sfn rtl-pmc "$prefix/bin/rocprofv3"
  mkdir -p "$prefix/bin/rocprofv3_avail_module"
  for file in __init__.py avail.py; do
    install -m 644 "cli/rocprofv3_avail_module/$file" "$prefix/bin/rocprofv3_avail_module/$file"
  done
fi
echo "installed $prefix/bin/rtl-pmc (libraries in $prefix/lib/rtl-pmc)"

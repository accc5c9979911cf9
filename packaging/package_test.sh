#!/usr/bin/env bash
# ctest `package` (label package): installs the build tree into a temporary prefix and checks the
# installed files (binary, fulcrum-gpubench when built, a gzip'd man page per command, catalog,
# rules, systemd unit, Debian copyright and changelog) and that the installed `fulcrum bench`
# finds the installed fulcrum-gpubench or says the true cause; then builds the .deb with CPack,
# checks its contents and postinst with dpkg-deb, and runs lintian on it (0 errors).
# Usage: packaging/package_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
mkdir -p "$build/Testing"
work=$(mktemp -d "$build/Testing/package.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "package_test: $*" >&2; exit 1; }

[ -f "$build/man/fulcrum.1" ] || fail "$build/man/ is missing: build the fulcrum_man target"
commands=$("$build/fulcrum" __table | python3 -c \
  'import json,sys; print(" ".join(c["name"] for c in json.load(sys.stdin)["commands"]))')
[ -n "$commands" ] || fail "fulcrum __table lists no command"

# --- cmake --install into a temporary prefix ---
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install failed"
expect=(bin/fulcrum share/man/man1/fulcrum.1.gz share/fulcrum/rules.yaml share/fulcrum/agent.yaml
        share/fulcrum/prometheus/fulcrum-rules.yml share/fulcrum/grafana/fulcrum-fleet.json
        share/fulcrum/catalog/gpus.csv share/fulcrum/catalog/offers.csv
        lib/systemd/system/fulcrum-agent.service
        share/doc/fulcrum/copyright share/doc/fulcrum/changelog.Debian.gz)
for name in $commands; do expect+=("share/man/man1/fulcrum-$name.1.gz"); done
# fulcrum-gpubench is built where a CUDA toolkit was found (src/nodecheck/gpu/CMakeLists.txt).
gpubench_built=false
[ -x "$build/fulcrum-gpubench" ] && gpubench_built=true
$gpubench_built && expect+=(libexec/fulcrum/fulcrum-gpubench)
for f in "${expect[@]}"; do [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"; done
[ -x "$prefix/bin/fulcrum" ] || fail "bin/fulcrum is not executable"
grep -q "^ExecStart=$prefix/bin/fulcrum agent " "$prefix/lib/systemd/system/fulcrum-agent.service" ||
  fail "the unit's ExecStart does not name $prefix/bin/fulcrum"
# The installed binary finds the installed catalog (core/paths.cc: ../share/fulcrum/catalog).
dir=$(env -u FULCRUM_CATALOG "$prefix/bin/fulcrum" catalog validate --no-user-offers --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["catalog"]["dir"])')
[ "$dir" = "$prefix/share/fulcrum/catalog" ] || fail "installed fulcrum reads the catalog from $dir"
[ "$(zcat "$prefix/share/man/man1/fulcrum.1.gz" | grep -c '^\.TH')" -ge 1 ] ||
  fail "share/man/man1/fulcrum.1.gz is not a gzip'd man page"

# --- the installed bench finds the installed fulcrum-gpubench, or says the true cause ---
# (issue 27: an installed fulcrum said "no CUDA toolkit at build time" for a bench it had built.)
gpu_reason() {  # the installed bench's gpu_skipped_reason ("" when the GPU part ran)
  env -u FULCRUM_GPUBENCH "$prefix/bin/fulcrum" bench --quick --skip-disk --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu_skipped_reason"] or "")'
}
installed_gpubench=$prefix/libexec/fulcrum/fulcrum-gpubench
reason=$(gpu_reason) || fail "the installed fulcrum bench --quick --skip-disk --json failed"
if $gpubench_built; then
  [ -x "$installed_gpubench" ] || fail "$installed_gpubench is not executable"
  # On a machine without a GPU the program exits 3 with {"error": ...}: the bench must pass that
  # on, which shows it ran the installed program; on a GPU machine the GPU part runs.
  own=$("$installed_gpubench" --quick --stability-seconds 1 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("error") or "")') || true
  [ "$reason" = "$own" ] ||
    fail "installed bench: GPU skip reason '$reason', the installed fulcrum-gpubench says '$own'"
  rm "$installed_gpubench"
  reason=$(gpu_reason) || fail "fulcrum bench failed without fulcrum-gpubench"
  case $reason in
    *"not installed"*"$installed_gpubench"*) ;;
    *) fail "bench without the installed fulcrum-gpubench gives a wrong cause: $reason" ;;
  esac
else
  cause="no CUDA toolkit"
  grep -q '^FULCRUM_CUDA:BOOL=OFF' "$build/CMakeCache.txt" && cause="FULCRUM_CUDA=OFF"
  case $reason in
    *"built without the CUDA GPU bench"*"$cause"*) ;;
    *) fail "bench of a build without fulcrum-gpubench gives a wrong cause: $reason" ;;
  esac
fi

# --- the .deb ---
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
debs=("$work"/deb/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "cpack made no single .deb: ${debs[*]}"
deb=${debs[0]}
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
deb_expect=(./usr/bin/fulcrum ./usr/lib/systemd/system/fulcrum-agent.service
            ./usr/share/fulcrum/rules.yaml ./usr/share/fulcrum/agent.yaml
            ./usr/share/fulcrum/catalog/gpus.csv ./usr/share/man/man1/fulcrum.1.gz
            ./usr/share/doc/fulcrum/copyright ./usr/share/doc/fulcrum/changelog.Debian.gz)
for name in $commands; do deb_expect+=("./usr/share/man/man1/fulcrum-$name.1.gz"); done
$gpubench_built && deb_expect+=(./usr/libexec/fulcrum/fulcrum-gpubench)
for f in "${deb_expect[@]}"; do
  grep -qxF "$f" "$work/contents" || fail "the .deb lacks $f"
done
if grep -q "^\./usr/local\|$build" "$work/contents"; then fail "the .deb holds a build or /usr/local path"; fi
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/fulcrum-agent.service |
  grep -q "^ExecStart=/usr/bin/fulcrum agent " || fail "the .deb's unit does not run /usr/bin/fulcrum"
dpkg-deb -e "$deb" "$work/control"
[ -x "$work/control/postinst" ] || fail "the .deb has no executable postinst"
grep -q "groupadd --system fulcrum" "$work/control/postinst" || fail "postinst creates no fulcrum group"
sh -n "$work/control/postinst" || fail "postinst is not valid sh"
[ "$(dpkg-deb -f "$deb" Package)" = fulcrum ] || fail "Package field is not fulcrum"
[ -n "$(dpkg-deb -f "$deb" Depends)" ] || fail "the .deb declares no Depends (dpkg-shlibdeps)"
# The changelog's top entry names the package's version (Debian policy 5.6.12).
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/fulcrum/changelog.Debian.gz | zcat |
  sed -n 1p | grep -qF "fulcrum ($version)" ||
  fail "changelog.Debian's top entry is not version $version (packaging/debian/changelog.Debian)"
[ -n "$(dpkg-deb -f "$deb" Description | tail -n +2)" ] || fail "the .deb has no extended description"

# --- lintian (Debian's package checker): no error ---
command -v lintian >/dev/null || fail "lintian is not installed (scripts/setup.sh installs it)"
# Exit 0: no error-level tag; 1: errors (the E: lines); 2: lintian itself failed.
rc=0
lintian --tag-display-limit 0 "$deb" >"$work/lintian.log" 2>&1 || rc=$?
errors=$(grep -c '^E: ' "$work/lintian.log" || true)
if [ "$rc" -ne 0 ] || [ "$errors" -ne 0 ]; then
  cat "$work/lintian.log" >&2
  fail "lintian exit $rc, $errors errors on $(basename "$deb")"
fi
echo "package_test: ok ($(basename "$deb"), $(wc -l <"$work/contents") entries," \
  "lintian $(grep -c '^W: ' "$work/lintian.log") warnings, fulcrum-gpubench built: $gpubench_built)"

#!/usr/bin/env bash
# ctest `package` (label package): installs the build tree into a temporary prefix and checks the
# installed files (binary, a man page per command, catalog, rules, systemd unit), then builds the
# .deb with CPack and checks its contents and postinst with dpkg-deb.
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
expect=(bin/fulcrum share/man/man1/fulcrum.1 share/fulcrum/rules.yaml share/fulcrum/agent.yaml
        share/fulcrum/prometheus/fulcrum-rules.yml share/fulcrum/grafana/fulcrum-fleet.json
        share/fulcrum/catalog/gpus.csv share/fulcrum/catalog/offers.csv
        lib/systemd/system/fulcrum-agent.service)
for name in $commands; do expect+=("share/man/man1/fulcrum-$name.1"); done
for f in "${expect[@]}"; do [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"; done
[ -x "$prefix/bin/fulcrum" ] || fail "bin/fulcrum is not executable"
grep -q "^ExecStart=$prefix/bin/fulcrum agent " "$prefix/lib/systemd/system/fulcrum-agent.service" ||
  fail "the unit's ExecStart does not name $prefix/bin/fulcrum"
# The installed binary finds the installed catalog (core/paths.cc: ../share/fulcrum/catalog).
dir=$(env -u FULCRUM_CATALOG "$prefix/bin/fulcrum" catalog validate --no-user-offers --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["catalog"]["dir"])')
[ "$dir" = "$prefix/share/fulcrum/catalog" ] || fail "installed fulcrum reads the catalog from $dir"

# --- the .deb ---
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
debs=("$work"/deb/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "cpack made no single .deb: ${debs[*]}"
deb=${debs[0]}
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents"
deb_expect=(./usr/bin/fulcrum ./usr/lib/systemd/system/fulcrum-agent.service
            ./usr/share/fulcrum/rules.yaml ./usr/share/fulcrum/agent.yaml
            ./usr/share/fulcrum/catalog/gpus.csv ./usr/share/man/man1/fulcrum.1)
for name in $commands; do deb_expect+=("./usr/share/man/man1/fulcrum-$name.1"); done
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
echo "package_test: ok ($(basename "$deb"), $(wc -l <"$work/contents") entries)"

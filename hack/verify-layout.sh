#!/usr/bin/env bash
# The house's map matches the house. Fails when
#   - a crate under crates/<tier>/ is missing from README.md's "Layout" block or from
#     docs/architecture.md's code map (what a newcomer reads first), or when
#   - a crate's normal (non-dev) dependencies point up a tier: runtime may use only runtime;
#     controllers runtime and controllers; crates/tools and cmd/ anything but crates/dev,
#     which is only ever a dev-dependency (the e2e tests and tutorial examples use
#     crates/dev/testenv) except of crates/tools: the test tools are dev code themselves
#     (chaos and sieve run their proxy on crates/dev/apiproxy).
# Cheap (cargo metadata, no build); hack/test.sh runs it before the build.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
# The fenced block right after the "## Layout" heading.
layout=$(awk '/^## Layout/ {on = 1; next} on && /^```/ {n++; if (n == 2) exit; next} on && n == 1' README.md)
for dir in crates/*/*/; do
  dir=${dir%/}
  tier=$(basename "$(dirname "$dir")")
  name=$(basename "$dir")
  # In README's block a tier is a line `  <tier>/` and its crates the lines `    <name>/ ...`.
  if ! grep -qE "^ *$tier/ *\$|^ *$tier/ " <<<"$layout" || ! grep -qE "^ +$name/( |\$)" <<<"$layout"; then
    echo "verify-layout: $dir is not in README.md's Layout block" >&2
    fail=1
  fi
  if ! grep -qF "\`$dir\`" docs/architecture.md; then
    echo "verify-layout: $dir is not named in docs/architecture.md" >&2
    fail=1
  fi
done

# Each workspace package's tier from its manifest path: runtime 0 < controllers 1 < tools,
# cmd 2 < dev 3 (a normal dependency on crates/dev is "up", but from crates/tools).
upward=$(cargo metadata --no-deps --format-version 1 --locked | jq -r '
  def tier: if test("/crates/runtime/") then 0 elif test("/crates/controllers/") then 1
    elif test("/crates/dev/") then 3 else 2 end;
  (.packages | map({key: .name, value: (.manifest_path | tier)}) | from_entries) as $tiers
  | .packages[]
  | . as $p
  | ($p.manifest_path | tier) as $t
  | $p.dependencies[]
  | ($tiers[.name] // -1) as $d
  | select(.kind == null and .path != null and $d > $t)
  | select(($d == 3 and ($p.manifest_path | test("/crates/tools/"))) | not)
  | "\($p.name) -> \(.name)"')
if [ -n "$upward" ]; then
  echo "verify-layout: dependencies that point up a tier (runtime < controllers < tools, cmd; dev only as a dev-dependency, or of a tool):" >&2
  sed 's/^/  /' <<<"$upward" >&2
  fail=1
fi

# The standalone benchmark projects (hack/bench/*/Cargo.toml, not workspace members, so no
# build of CI's reaches them) name the workspace's crates by their package names: a rename
# (cache -> kcr-cache) once broke both without a test noticing.
stale=$(python3 - hack/bench/*/Cargo.toml <<'PY'
import pathlib, sys, tomllib
for manifest in map(pathlib.Path, sys.argv[1:]):
    deps = tomllib.loads(manifest.read_text()).get("dependencies", {})
    for key, dep in deps.items():
        if isinstance(dep, dict) and "path" in dep:
            target = (manifest.parent / dep["path"] / "Cargo.toml").resolve()
            want = dep.get("package", key)
            have = tomllib.loads(target.read_text())["package"]["name"] if target.exists() else None
            if have != want:
                print(f"{manifest}: {key} = {want!r} at {dep['path']}, whose package is {have!r}")
PY
)
if [ -n "$stale" ]; then
  echo "verify-layout: benchmark projects naming a crate by a name it no longer has:" >&2
  sed 's/^/  /' <<<"$stale" >&2
  fail=1
fi

if [ "$fail" = 0 ]; then
  echo "verify-layout: README.md and docs/architecture.md name every crate; no dependency points up a tier; the benchmark projects name the crates as they are."
fi
exit "$fail"

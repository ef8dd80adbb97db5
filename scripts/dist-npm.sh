#!/bin/sh
# dist-npm.sh — the npm package: bindings/node (the client and the Flue
# adapter) with the static binary as vendor/linux-x64/fluebox, which the
# client finds after FLUEBOX_BIN and before PATH, and as the package's
# `fluebox` command. Staged in BUILD/npm, then `npm pack` (offline).
# Usage: dist-npm.sh VERSION BUILD OUTDIR
set -eu
version=$1 B=$2 out=$3
s=$B/npm
rm -rf "$s"
mkdir -p "$s/vendor/linux-x64"
(cd bindings/node && cp -r index.cjs index.mjs index.d.ts flue.cjs flue.mjs flue.d.ts lib README.md package.json "$OLDPWD/$s/")
install -m 0755 "$B/fluebox" "$s/vendor/linux-x64/fluebox"
node -e '
  const fs = require("fs"), f = process.argv[1];
  const p = JSON.parse(fs.readFileSync(f, "utf8"));
  p.version = process.argv[2];
  p.files.push("vendor/");
  p.bin = { fluebox: "vendor/linux-x64/fluebox" };
  p.cpu = ["x64"];
  fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n");
' "$s/package.json" "$version"
npm pack --offline --silent --pack-destination "$(cd "$out" && pwd)" "./$s" >/dev/null
[ -f "$out/fluebox-$version.tgz" ] || { echo "dist-npm.sh: npm pack wrote no $out/fluebox-$version.tgz" >&2; exit 1; }

#!/bin/sh
# dist-deb.sh — the Debian package, built with dpkg-deb from a staged tree
# (called by scripts/dist.sh, which has built the stripped binary and the
# man pages into BUILD). A native package: the version is VERSION itself.
#   /usr/bin/fluebox, fluebox-oci and fluebox-oci-PROFILE for each built-in
#     profile (links: the name picks the OCI runtime and its profile)
#   /usr/share/man/man1/fluebox.1.gz (and .so pages for the links),
#     /usr/share/man/man5/fluebox-profile.5.gz
#   bash, zsh and fish completions (`fluebox completion SHELL`)
#   /usr/share/doc/fluebox: copyright, changelog.gz, README and docs/
#   /usr/share/fluebox/apparmor/fluebox: the AppArmor profile granting user
#     namespaces, which postinst installs and loads only where AppArmor
#     restricts them (kernel.apparmor_restrict_unprivileged_userns, Ubuntu
#     23.10 and later), as `make install` does
# lintian then checks the package; an error fails the build.
# Usage: dist-deb.sh VERSION BUILD OUTDIR
set -eu
version=$1 B=$2 out=$3
pkg=fluebox
root=$B/deb/${pkg}_${version}_amd64
rm -rf "$B/deb"
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/man/man5" \
  "$root/usr/share/doc/$pkg/docs" "$root/usr/share/bash-completion/completions" \
  "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d" \
  "$root/usr/share/$pkg/apparmor" "$root/usr/share/lintian/overrides"

install -m 0755 "$B/fluebox" "$root/usr/bin/fluebox"
links="fluebox-oci"
for p in profiles/*.json; do links="$links fluebox-oci-$(basename "$p" .json)"; done
for l in $links; do
  ln -s fluebox "$root/usr/bin/$l"
  printf '.so man1/fluebox.1\n' | gzip -9n > "$root/usr/share/man/man1/$l.1.gz"
done
gzip -9n < "$B/man/fluebox.1" > "$root/usr/share/man/man1/fluebox.1.gz"
gzip -9n < "$B/man/fluebox-profile.5" > "$root/usr/share/man/man5/fluebox-profile.5.gz"

"$B/fluebox" completion bash > "$root/usr/share/bash-completion/completions/fluebox"
"$B/fluebox" completion zsh > "$root/usr/share/zsh/vendor-completions/_fluebox"
"$B/fluebox" completion fish > "$root/usr/share/fish/vendor_completions.d/fluebox.fish"
"$B/fluebox" doctor --apparmor-profile /usr/bin/fluebox > "$root/usr/share/$pkg/apparmor/fluebox"

doc=$root/usr/share/doc/$pkg
cp packaging/debian/copyright "$doc/copyright"
gzip -9n < packaging/debian/changelog > "$doc/changelog.gz"
# Debian policy 12.3: files over 4 kB in /usr/share/doc are compressed.
gzip -9n < README.md > "$doc/README.md.gz"
for f in docs/*.md; do
  if [ "$(wc -c < "$f")" -gt 4096 ]; then gzip -9n < "$f" > "$doc/docs/$(basename "$f").gz"
  else cp "$f" "$doc/docs/"; fi
done
cp packaging/debian/lintian-overrides "$root/usr/share/lintian/overrides/$pkg"
for s in postinst postrm; do install -m 0755 "packaging/debian/$s" "$root/DEBIAN/$s"; done

find "$root" -type d -exec chmod 0755 {} +
find "$root/usr/share" -type f -exec chmod 0644 {} +
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@SIZE@/$size/" packaging/debian/control > "$root/DEBIAN/control"
(cd "$root" && find usr -type f -exec md5sum {} + | sort -k2) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb=$out/${pkg}_${version}_amd64.deb
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)} \
  dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
# lintian: errors fail the build; warnings are printed (the ones that cannot
# be avoided are overridden in packaging/debian/lintian-overrides, with why).
lintian --tag-display-limit 0 "$deb" > "$B/lintian.txt" 2>&1 || true
if grep -q '^E:' "$B/lintian.txt"; then
  cat "$B/lintian.txt" >&2
  echo "dist-deb.sh: lintian found errors in $deb" >&2
  rm -f "$deb"
  exit 1
fi
grep '^W:' "$B/lintian.txt" >&2 || true

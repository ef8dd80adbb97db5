#!/bin/bash
# tests/suites/layers.sh — `make layers` (scripts/layers.py) keeps the
# subsystem folders of src/ in the order scripts/layers.txt declares: the real tree
# passes, and each way of breaking it is caught by name. The breaking calls
# are compiled into a copy of the objects and a copy of src/ (the checkout
# is never touched): a call from src/base up into src/server, a call across
# between two folders that may not call each other (cow into egress), a weak
# definition in src/sandbox replaced by the server's, and layers files
# that do not describe the tree.
cd "$(dirname "$0")/../.." || exit 1
: "${FB:=$(pwd)/fluebox}"
. tests/lib.sh
command -v nm >/dev/null 2>&1 || skip_all "missing: binutils"
[ -n "$(ls build/obj/*.o 2>/dev/null)" ] || bail "no objects in build/obj (make first)"
work=$(mktemp -d /tmp/fblayers.XXXXXX)
at_exit 'rm -rf "$work"'
CFLAGS_L="-D_GNU_SOURCE -c"

# fresh NAME — a copy of src/ and of the objects to break one way.
fresh() {
  rm -rf "$work/$1"; mkdir -p "$work/$1/obj"
  cp -r src "$work/$1/src"
  cp -l build/obj/*.o "$work/$1/obj/" 2>/dev/null || cp build/obj/*.o "$work/$1/obj/"
}
# inject NAME FOLDER FILE CODE — FILE.c with CODE in FOLDER of copy NAME, built.
inject() {
  printf '%s\n' "$4" > "$work/$1/src/$2/$3.c"
  cc $CFLAGS_L -o "$work/$1/obj/$3.o" "$work/$1/src/$2/$3.c" 2>"$work/$1/cc.err" ||
    bail "cannot compile the injected $3.c: $(head -c 300 "$work/$1/cc.err")"
}
layers() { python3 scripts/layers.py "$@" > "$work/out" 2>&1; echo $? > "$work/rc"; }
said() { grep -q -- "$1" "$work/out"; }

# check NAME RC PATTERN... — the last check exited RC and said every PATTERN.
check() {
  local name=$1 want=$2 pat; shift 2
  for pat in "$@"; do
    said "$pat" || { fail "$name" "rc $(cat "$work/rc"), no '$pat': $(head -c 600 "$work/out")"; return; }
  done
  if [ "$(cat "$work/rc")" = "$want" ]; then ok "$name"
  else fail "$name" "rc $(cat "$work/rc") (want $want): $(head -c 600 "$work/out")"; fi
}

layers --src src --obj build/obj
check "the tree as built keeps its layers" 0 "no reference breaks them"

fresh up
inject up base zz_upcall 'void srv_log(void *, const char *, const char *, unsigned, void *);
void zz_upcall(void) { srv_log(0, "x", 0, 0, 0); }'
layers --src "$work/up/src" --obj "$work/up/obj"
check "a call from src/base into src/server fails, named file -> file: symbol" 1 \
  "base/zz_upcall.c -> .*server/server_log.c: srv_log" "up the order"

fresh across
inject across cow zz_across 'struct fb_egress; void egress_free(struct fb_egress *);
void zz_across(void) { egress_free(0); }'
layers --src "$work/across/src" --obj "$work/across/obj"
check "a call across, from src/cow into src/egress (not declared), fails" 1 \
  "cow/zz_across.c -> .*egress/egress.c: egress_free" "across, not declared"

fresh weak
inject weak sandbox zz_weak '__attribute__((weak)) void sess_init_main(const void *p, int ctl) { (void)p; (void)ctl; }'
layers --src "$work/weak/src" --obj "$work/weak/obj"
check "a weak definition in src/sandbox that the server replaces is a call up" 1 \
  "sandbox/zz_weak.c -> .*server/sess_init.c: sess_init_main"

fresh folder
mkdir -p "$work/folder/src/newthing"
printf 'int zz_new(void) { return 0; }\n' > "$work/folder/src/newthing/zz_new.c"
layers --src "$work/folder/src" --obj "$work/folder/obj"
check "a folder that the layers file does not list is refused (exit 2)" 2 "src/newthing/ is not listed"

fresh cycle
sed 's/^base:.*/base: server/' scripts/layers.txt > "$work/cycle/layers.txt"
layers --src "$work/cycle/src" --obj "$work/cycle/obj" --layers "$work/cycle/layers.txt"
check "a layers file whose order has a cycle is refused (exit 2)" 2 \
  "base may call server, which is not listed before it"

layers --src src --obj "$work/none"
check "no objects: says to build first (exit 2)" 2 "build first"

# tests/tests.mk — C unit tests of pure code (parsers, pattern matching),
# linked against the project's objects minus main.o.
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_OBJ := $(filter-out build/obj/main.o,$(OBJ)) $(addprefix build/obj/,$(EMBED))

build/unit-tests: $(UNIT_SRC) $(UNIT_OBJ) tests/unit/unit.h
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -iquote tests/unit -o $@ $(UNIT_SRC) $(UNIT_OBJ) $(LIBS)

# The same under ASan/UBSan (tests/run.sh runs both).
UNIT_ASAN_OBJ := $(filter-out build/asan/main.o,$(ASAN_OBJ)) $(addprefix build/asan/,$(EMBED))

build/unit-tests-asan: $(UNIT_SRC) $(UNIT_ASAN_OBJ) tests/unit/unit.h
	$(CC) $(CPPFLAGS) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined $(WARN) -iquote tests/unit -o $@ $(UNIT_SRC) $(UNIT_ASAN_OBJ) $(LIBS)

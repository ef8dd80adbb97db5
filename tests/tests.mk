# tests/tests.mk — C unit tests of pure code (parsers, pattern matching),
# linked against the project's objects minus main.o.
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_OBJ := $(filter-out build/obj/main.o,$(OBJ)) $(addprefix build/obj/,$(EMBED))

build/unit-tests: $(UNIT_SRC) $(UNIT_OBJ) tests/unit/unit.h
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -iquote tests/unit -o $@ $(UNIT_SRC) $(UNIT_OBJ) $(LIBS)

# tiercache: one non-recursive build.
#
#   make              build everything into build/default/
#   make check        every test: unit (cmocka), integration (real daemon,
#                     real Ceph, real Redis), fuzz corpora
#   make demo         the main job on a local cold directory
#   make bench        benchmarks, printed as ratios to a same-run baseline
#   make SANITIZER=address|undefined check   the same suite, instrumented
#   make fuzz         every libFuzzer target for FUZZ_TIME seconds each (300)
#   make check-long   what is too long for check: the kill -9 loop
#                     (KILL_LOOP_CYCLES, 30)
#
# Sources are found by directory, so adding a file needs no Makefile edit:
#   common/*.c        protocol codec etc., linked into everything
#   policy/*.c        pure policies -> libpolicy.a; policy/sim/*.c -> tiercache-sim
#   cached/*.c cached/*/*.c   the daemon in layers (cached/main.c holds main) -> tiercached
#   client/lib/*.c    libtiercache.so / .a
#   client/tierctl/*.c   tierctl
#   client/mount/*.c  tiercache-mount
#   client/python/    the Python package (make install-python; part of install)
#   tests/unit/test_*.c  one cmocka binary each, linked with all the above
#   bench/*.c         one benchmark binary each (bench/lib_*.c linked into all)

.DEFAULT_GOAL := all
# keep objects that pattern rules build on the way
.SECONDARY:
SHELL := /bin/bash

SANITIZER ?=
O := build/$(if $(SANITIZER),$(SANITIZER),default)
PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/tiercache
UNITS := tiercached.service tiercache-lifecycle.service tiercache-lifecycle.timer
VERSION := 0.1.0

CC ?= cc
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror
OPT := -O2 -g
ifeq ($(SANITIZER),address)
OPT := -O1 -g -fsanitize=address -fno-omit-frame-pointer
else ifeq ($(SANITIZER),undefined)
OPT := -O1 -g -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifneq ($(SANITIZER),)
$(error SANITIZER must be address or undefined)
endif

PKGS := libevent libevent_pthreads rocksdb inih libxxhash hiredis fuse3 libsystemd libcrypto libzstd
# evaluated once, on first use (after install-deps has run)
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) cmocka))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKGS)))$(PKG_LIBS)

CPPFLAGS := -D_GNU_SOURCE -DTIERCACHE_VERSION='"$(VERSION)"' -Iinclude -Icommon
CFLAGS_ALL = -std=c11 -fPIC $(OPT) $(WARN) -MMD -MP $(PKG_CFLAGS) $(CPPFLAGS) $(DIR_INC) $(CFLAGS)

# Include paths by folder: the daemon's layers (DESIGN.md, docs/architecture.md).
# A folder sees its own headers and those of the folders below it, nothing
# else, so an include that goes up a layer does not compile. Top to bottom:
#   cached/ (root) > api > admin > cluster > plan > cache > store > cold, and beneath
#   them conf, net, util; policy/ and common/ are below everything.
# A quoted include also finds the including file's own folder; t_layers
# fails on "../" includes and on the root's header outside the root.
layer_inc = $(foreach l,$(1),-Icached/$(l)) -Ipolicy
LAYERS_util := util
LAYERS_conf := conf util
LAYERS_net := net conf util
LAYERS_cold := cold conf util
LAYERS_store := store cold conf util
LAYERS_cache := cache store cold conf util
LAYERS_plan := plan cache store cold conf util
LAYERS_cluster := cluster plan cache store cold conf net util
LAYERS_admin := admin cluster plan cache store cold conf net util
LAYERS_api := api admin cluster plan cache store cold conf net util
LAYER_NAMES := util conf net cold store cache plan cluster admin api
$(foreach l,$(LAYER_NAMES),$(eval $$(O)/obj/cached/$(l)/%.o: DIR_INC = $$(call layer_inc,$$(LAYERS_$(l)))))
# the root composes every layer
$(O)/obj/cached/%.o: DIR_INC = -Icached $(call layer_inc,$(LAYERS_api))
$(O)/obj/policy/%.o: DIR_INC = -Ipolicy
$(O)/obj/client/%.o: DIR_INC = -Iclient/lib
$(O)/obj/bench/%.o: DIR_INC = -Iclient/lib
$(O)/obj/tests/integration/%.o: DIR_INC = -Iclient/lib
# unit tests reach into any module they test (never the root's header)
$(O)/obj/tests/unit/%.o: DIR_INC = $(call layer_inc,$(LAYERS_api)) -Iclient/lib
LDFLAGS_ALL = $(OPT) $(LDFLAGS)
DAEMON_LIBS = $(PKG_LIBS) -lrados -lradosstriper -lpthread -lm
CLIENT_LIBS := -lpthread

DEPS_STAMP := build/.deps-ok
$(DEPS_STAMP): scripts/install-deps
	@mkdir -p $(@D)
	scripts/install-deps
	@touch $@
.PHONY: deps
deps: $(DEPS_STAMP)

objs = $(patsubst %.c,$(O)/obj/%.o,$(1))

COMMON_SRCS := $(wildcard common/*.c)
POLICY_SRCS := $(wildcard policy/*.c)
SIM_SRCS := $(wildcard policy/sim/*.c)
CACHED_SRCS := $(filter-out cached/main.c,$(wildcard cached/*.c cached/*/*.c))
LIB_SRCS := $(wildcard client/lib/*.c)
TIERCTL_SRCS := $(wildcard client/tierctl/*.c)
MOUNT_SRCS := $(wildcard client/mount/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_HELPERS := $(filter-out tests/unit/test_%,$(wildcard tests/unit/*.c))
BENCH_SRCS := $(filter-out bench/lib_%,$(wildcard bench/*.c))
BENCH_LIB_SRCS := $(wildcard bench/lib_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
ITEST_C_SRCS := $(wildcard tests/integration/*.c)

LIBCOMMON := $(O)/lib/libtccommon.a
LIBPOLICY := $(O)/lib/libtcpolicy.a
LIBCACHED := $(O)/lib/libtccached.a
LIBTC_A := $(O)/lib/libtiercache.a
LIBTC_SO := $(O)/lib/libtiercache.so.0
BIN := $(O)/bin

TIERCACHED := $(BIN)/tiercached
TIERCTL := $(BIN)/tierctl
SIM := $(BIN)/tiercache-sim
MOUNT := $(BIN)/tiercache-mount
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRCS))
BENCH_BINS := $(patsubst bench/%.c,$(BIN)/%,$(BENCH_SRCS))
ITEST_BINS := $(patsubst tests/integration/%.c,$(O)/tests/%,$(ITEST_C_SRCS))

PROGRAMS := $(TIERCACHED) $(TIERCTL) $(LIBTC_SO) $(LIBTC_A) \
	$(if $(SIM_SRCS),$(SIM)) $(if $(MOUNT_SRCS),$(MOUNT))

.PHONY: all
all: $(PROGRAMS) $(UNIT_BINS) $(BENCH_BINS) $(ITEST_BINS)

$(O)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(LIBCOMMON): $(call objs,$(COMMON_SRCS))
$(LIBPOLICY): $(call objs,$(POLICY_SRCS))
$(LIBCACHED): $(call objs,$(CACHED_SRCS))
# the peer protocol (common/peer_*.c) is the daemons' own: kept out of the
# client library, which must not need libcrypto
CLIENT_COMMON_SRCS := $(filter-out common/peer_%,$(COMMON_SRCS))
$(LIBTC_A): $(call objs,$(LIB_SRCS) $(CLIENT_COMMON_SRCS))
$(O)/lib/%.a:
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(LIBTC_SO): $(call objs,$(LIB_SRCS) $(CLIENT_COMMON_SRCS))
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libtiercache.so.0 -Wl,--version-script=client/lib/libtiercache.map \
		$(LDFLAGS_ALL) -o $@ $^ $(CLIENT_LIBS)
	ln -sf libtiercache.so.0 $(O)/lib/libtiercache.so

$(TIERCACHED): $(O)/obj/cached/main.o $(LIBCACHED) $(LIBPOLICY) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(DAEMON_LIBS)

$(TIERCTL): $(call objs,$(TIERCTL_SRCS)) $(LIBTC_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(DAEMON_LIBS)

$(SIM): $(call objs,$(SIM_SRCS)) $(LIBPOLICY) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lm

$(MOUNT): $(call objs,$(MOUNT_SRCS)) $(LIBTC_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS) -lpthread

# unit tests: each links against every internal library (static: only what
# it uses is pulled in)
UNIT_LINK = $(call objs,$(UNIT_HELPERS) $(filter-out policy/sim/main.c,$(SIM_SRCS))) \
	$(LIBCACHED) $(LIBPOLICY) $(LIBTC_A) $(LIBCOMMON)
$(O)/tests/test_%: $(O)/obj/tests/unit/test_%.o $(UNIT_LINK)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(shell pkg-config --libs cmocka) $(DAEMON_LIBS)

$(O)/tests/%: $(O)/obj/tests/integration/%.o $(LIBTC_A) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(DAEMON_LIBS)

$(BIN)/%: $(O)/obj/bench/%.o $(call objs,$(BENCH_LIB_SRCS)) $(LIBTC_A) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(DAEMON_LIBS)

# ---- tests ----
export O
.PHONY: check unit integration
check: all
	@tests/run-all "$(O)"

unit: all
	@tests/run-all "$(O)" unit

integration: all
	@tests/run-all "$(O)" integration

# longer runs than `make check` gives them (tests/fuzz/build.sh; clang)
FUZZ_TIME ?= 300
.PHONY: fuzz
fuzz:
	FUZZ_TIME=$(FUZZ_TIME) bash tests/fuzz/build.sh

# tests too long for every check (tests/long/t_*.sh BUILD): kill -9 loops
KILL_LOOP_CYCLES ?= 30
.PHONY: check-long
check-long: all
	@set -e; for t in tests/long/t_*.sh; do \
		echo "=== $$t"; bash $$t "$(O)" $(KILL_LOOP_CYCLES); \
	done

# ---- demo and benchmarks ----
.PHONY: demo bench
demo: all
	@scripts/demo "$(O)"

bench: all
	@bench/run "$(O)"

# ---- install ----
.PHONY: install install-python
install: all install-python
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/tiercache \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(SYSCONFDIR)/tiercache $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(DOCDIR)
	install -m 755 $(filter $(BIN)/%,$(PROGRAMS)) $(DESTDIR)$(PREFIX)/bin/
	# tiercache-sim --plot runs it (found beside tiercache-sim)
	install -m 755 scripts/plot-curve $(DESTDIR)$(PREFIX)/bin/tiercache-plot-curve
	install -m 644 $(LIBTC_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBTC_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libtiercache.so.0 $(DESTDIR)$(PREFIX)/lib/libtiercache.so
	install -m 644 include/tiercache.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/tiercache/protocol.h $(DESTDIR)$(PREFIX)/include/tiercache/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' client/lib/tiercache.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/tiercache.pc
	for u in $(UNITS); do \
		sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' systemd/$$u \
			> $(DESTDIR)$(UNITDIR)/$$u && chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	install -m 644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	# an existing config is the admin's: never overwritten
	[ -e $(DESTDIR)$(SYSCONFDIR)/tiercache/tiercache.conf ] || \
		install -m 644 conf/tiercache.conf $(DESTDIR)$(SYSCONFDIR)/tiercache/

# the Python package (client/python/tiercache) into the site-packages of
# PREFIX for Debian's python3; _install.py records where libtiercache went
PYTHON ?= /usr/bin/python3
PYTHON_SITEDIR ?= $(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages
install-python:
	install -d $(DESTDIR)$(PYTHON_SITEDIR)/tiercache
	install -m 644 $(filter-out %/_install.py,$(wildcard client/python/tiercache/*.py)) $(DESTDIR)$(PYTHON_SITEDIR)/tiercache/
	printf '# written by make install\nLIBDIR = "%s"\n' '$(PREFIX)/lib' >$(DESTDIR)$(PYTHON_SITEDIR)/tiercache/_install.py

.PHONY: clean
clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)

# Ringmaster build. `make help` lists the targets; `make V=1` shows commands.
# Limits from include/ringmaster/rm_common.h can be overridden for both the
# BPF program and userspace at once: make EXTRA_DEFS=-DRM_MAX_NODES=8192

# SANITIZE=1: userspace with AddressSanitizer and UndefinedBehaviorSanitizer
# in its own build dir (the BPF objects are the same); `test` then runs the
# static and unit suites, which is what the sanitizers can see.
SANITIZE ?=
ifeq ($(SANITIZE),1)
BUILD    ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
SAN_ENV  := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
endif
BUILD    ?= build
CLANG    ?= clang
CC       ?= gcc
BPFTOOL  ?= bpftool
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)
EXTRA_DEFS ?=

# Installation. Units go to $(PREFIX)/lib/systemd/system: systemd reads
# /usr/local/lib/systemd/system as well as /usr/lib/systemd/system (which
# is /lib/systemd/system on Debian's merged /usr), so one rule serves
# PREFIX=/usr/local and PREFIX=/usr. Nothing is written outside DESTDIR.
PREFIX   ?= /usr/local
SBINDIR  ?= $(PREFIX)/sbin
MAN8DIR  ?= $(PREFIX)/share/man/man8
COMPDIR  ?= $(PREFIX)/share/bash-completion/completions
UNITDIR  ?= $(PREFIX)/lib/systemd/system
# where the units keep each interface's saved configuration
CONFDIR  ?= /etc/ringmaster

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

PKGS     := libbpf libxdp
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lelf -lz

BPF_CFLAGS := -O2 -g -target bpf -Wall -Werror -Iinclude -I$(ARCH_INC) \
	$(EXTRA_DEFS)
CFLAGS   ?= -O2 -g
# The version every program prints (--version) and ringmaster_build_info
# reports: the package's, from the top entry of debian/changelog, the one
# place it is written (dch -v or a new entry by hand changes it).
RM_VERSION ?= $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
CFLAGS   += $(SAN_FLAGS) -std=gnu11 -Wall -Wextra -Werror -Iinclude -Iuser/lib -I$(BUILD) \
	$(PKG_CFLAGS) $(EXTRA_DEFS)
LDLIBS   := $(PKG_LIBS) -lm -lnettle
# etcd's HTTP/JSON gateway (user/lib/etcd.c): ringctl publish, ringsync.
# libcurl is dlopen()ed there on first use (its dependencies cost every
# command ~20 ms to load), so only json-c is linked; the build still needs
# curl's headers (libcurl4-openssl-dev) and the runtime libcurl.so.4.
ETCD_LIBS := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
# ringctl is what operators and scripts run most, a process a command:
# its libraries other than libc are linked in, since loading each shared
# one costs ~0.25 ms on the VMs of docs/control-plane-performance.md
# (1.9 ms of a 5 ms read). libc stays shared (NSS, dlopen of libcurl).
# debian/control's Built-Using names what is linked in, for
# rebuilds on those libraries' security updates. RM_CTL_STATIC=0: shared.
RM_CTL_STATIC ?= 1
ifeq ($(RM_CTL_STATIC),1)
CTL_LIBS := -Wl,-Bstatic $(shell pkg-config --static --libs libbpf json-c \
	nettle 2>/dev/null || echo -lbpf -lelf -lz -ljson-c -lnettle) -lm \
	-Wl,-Bdynamic
else
CTL_LIBS := $(LDLIBS) $(ETCD_LIBS)
endif

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
# The director again with encrypted QUIC-LB CIDs (bpf/quic_crypt.h): it
# calls the kernel's BPF crypto kfuncs, so the loader takes it only where
# the kernel has them (user/lib/director_obj.c)
CRYPT_OBJ := $(BUILD)/ringmaster_crypt.bpf.o
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS)) $(CRYPT_OBJ)
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS)) \
	$(BUILD)/ringmaster_crypt.skel.h
# BPF programs only the tests load (as ELF objects, no skeleton)
TEST_BPF_OBJS := $(patsubst tests/bpf/%.bpf.c,$(BUILD)/tests/%.bpf.o,\
	$(wildcard tests/bpf/*.bpf.c))
BPF_HDRS  := $(wildcard bpf/*.h) $(wildcard include/ringmaster/*.h)
HDRS      := $(wildcard include/ringmaster/*.h) $(wildcard user/*/*.h) \
	$(wildcard tests/*/*.h)

LIB_SRCS  := $(wildcard user/lib/*.c)
LIB_OBJS  := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS))
LIB       := $(BUILD)/libringmaster.a

CTL_OBJS  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard user/ringctl/*.c))
LOAD_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard user/ringload/*.c))
SYNC_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard user/ringsync/*.c))
EXPORT_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard user/ringexport/*.c))
# the exporter's HTTP server
MHD_LIBS  := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || \
	echo -lmicrohttpd)
# Programs `make install` puts in $(SBINDIR): a new daemon appends itself
# here (its unit template goes in systemd/, its page in man/).
SBINS     := $(BUILD)/ringctl $(BUILD)/ringload $(BUILD)/ringhealth $(BUILD)/ringsync \
	$(BUILD)/ringexport
MAN8      := $(patsubst man/%.8.in,$(BUILD)/man/%.8,$(wildcard man/*.8.in))
COMPLETIONS := $(wildcard completion/*)
# names completed by a script of another name (ringload: completion/ringctl)
COMPLETION_LINKS := ringload:ringctl ringexport:ringctl ringsync:ringctl \
	ringhealth:ringctl
UNIT_TMPLS := $(wildcard systemd/*.in)
HEALTH_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard user/ringhealth/*.c))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRCS))
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BIN := $(BUILD)/ringbench
# The data plane as it was before the connection tables' presence index
# (bpf/conntrack.h): ringbench kernel measures it beside the director in
# the same rounds, the reference of the new-flow target.
BENCH_REF_OBJ := $(BUILD)/ringmaster-noidx.bpf.o

.PHONY: all help deps test unit e2e bench demo demo-fleet demo-keys clean \
	format print-bpf-cflags install uninstall fuzz fuzz-build analyze \
	progs deb
.DEFAULT_GOAL := all

all: $(BPF_OBJS) $(SKELS) $(TEST_BPF_OBJS) $(SBINS) $(MAN8) $(UNIT_BINS) $(TOOL_BINS) \
	$(if $(BENCH_SRCS),$(BENCH_BIN) $(BENCH_REF_OBJ))

help:
	@echo 'Targets:'
	@echo '  make            build BPF objects, skeletons, ringctl, ringload, tests'
	@echo '  make deps       install missing Debian packages (scripts/install-deps.sh)'
	@echo '  make test       run every test suite (unit, data plane, end-to-end); root'
	@echo '  make unit       run only the cmocka suites'
	@echo '  make SANITIZE=1 test   userspace under ASan+UBSan in build-san/, unit suites'
	@echo '  make e2e        run only the namespace end-to-end tests; root'
	@echo '  make bench      benchmarks, markdown table + build/bench/results.json; root'
	@echo '  make demo       one-command demo on a namespace testbed; root'
	@echo '  make install    ringctl, ringload, the daemons, man pages, completion, systemd units'
	@echo '                  into PREFIX (/usr/local); DESTDIR=... stages them'
	@echo '  make uninstall  remove what make install wrote (same PREFIX, DESTDIR)'
	@echo '  make deb        the Debian package (dpkg-buildpackage), lintian; into build/deb'
	@echo '  make demo-fleet 3 directors behind BGP/ECMP, one dies under traffic; root'
	@echo '  make demo-keys  sharding by key: memcached keys on their owners; root'
	@echo '  make fuzz       every libFuzzer target for FUZZ_SECONDS (60) each'
	@echo '  make analyze    scan-build (clang analyzer) and cppcheck over userspace'
	@echo '  make format     clang-format the tree'
	@echo '  make clean      remove build/'
	@echo 'Variables: V=1 (show commands), EXTRA_DEFS=-DRM_MAX_NODES=...,'
	@echo '  SANITIZE=1 (ASan+UBSan, BUILD=build-san), RM_ALLOW_SKIP=1 (a skip passes)'

deps:
	$(Q)scripts/install-deps.sh

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/tests/%.bpf.o: tests/bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# Every userspace object may include any skeleton: build those first.
$(BUILD)/%.o: %.c $(HDRS) $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Man pages: the prose in man/NAME.8.in, the commands and options generated
# from the program's own tables (NAME __options), so they cannot drift.
$(BUILD)/man/%.8: man/%.8.in $(BUILD)/% scripts/gen-man.sh
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)scripts/gen-man.sh $(BUILD)/$* $< > $@.tmp && mv $@.tmp $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/ringctl: $(CTL_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CTL_LIBS)

$(BUILD)/ringsync: $(SYNC_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(ETCD_LIBS)

$(BUILD)/ringload: $(LOAD_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/ringhealth: $(HEALTH_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/ringexport: $(EXPORT_OBJS) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka $(ETCD_LIBS)

# libmemcached's own ketama, the reference --ring ketama must agree with
$(BUILD)/tests/test_ketama: LDLIBS += -lmemcached -lhashkit

$(BUILD)/tools/%: $(BUILD)/tests/tools/%.o $(LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the QUIC test server (tests/e2e/test_quic_ngtcp2.sh): ngtcp2, nghttp3, GnuTLS
QUIC_PKGS := libngtcp2 libngtcp2_crypto_gnutls libnghttp3 gnutls
$(BUILD)/tests/tools/rm_quic_server.o: CFLAGS += $(shell pkg-config --cflags $(QUIC_PKGS) 2>/dev/null)
$(BUILD)/tools/rm_quic_server: LDLIBS += $(shell pkg-config --libs $(QUIC_PKGS) 2>/dev/null || \
	echo -lngtcp2_crypto_gnutls -lngtcp2 -lnghttp3 -lgnutls)

$(BENCH_BIN): $(patsubst %.c,$(BUILD)/%.o,$(BENCH_SRCS)) $(LIB)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(CRYPT_OBJ): bpf/ringmaster.bpf.c $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DRM_QUIC_CRYPT -c $< -o $@

$(BENCH_REF_OBJ): bpf/ringmaster.bpf.c $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DRM_CONN_IDX_OFF -c $< -o $@

$(BUILD):
	$(Q)mkdir -p $(BUILD)

# Unit and data-plane suites (cmocka), then the namespace end-to-end suite.
test: all
	$(Q)$(SAN_ENV) scripts/run-tests.sh $(if $(SAN_FLAGS),--unit-only) $(BUILD)

unit: all
	$(Q)$(SAN_ENV) scripts/run-tests.sh --unit-only $(BUILD)

e2e: all
	$(Q)scripts/run-tests.sh --e2e-only $(BUILD)

# ---- fuzzing ------------------------------------------------------------
# libFuzzer targets in tests/fuzz (clang, -fsanitize=fuzzer,address,undefined)
# over the library and ringctl's objects built again with coverage in
# FUZZ_BUILD. `make fuzz` runs each for FUZZ_SECONDS from the seed corpus in
# tests/fuzz/corpus/<target> (new inputs go to FUZZ_BUILD/corpus, not the
# tree); scripts/fuzz.sh reports executions.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -Wall -Wextra -Werror -Iinclude -Iuser/lib \
	-Iuser/ringctl -I$(BUILD) $(PKG_CFLAGS) $(EXTRA_DEFS) \
	-fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRCS))
FUZZ_LIB     := $(FUZZ_BUILD)/libringmaster.a
FUZZ_CTL     := $(FUZZ_BUILD)/libringctl.a

$(FUZZ_BUILD)/%.o: %.c $(HDRS) $(SKELS)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIB): $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(LIB_SRCS))
	$(Q)rm -f $@ && ar rcs $@ $^

# ringctl without main(): a target includes main.c or brings its own
$(FUZZ_CTL): $(patsubst %.c,$(FUZZ_BUILD)/%.o,$(filter-out \
		user/ringctl/main.c,$(wildcard user/ringctl/*.c)))
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(HDRS) \
		$(wildcard user/ringctl/*.c) $(FUZZ_CTL) $(FUZZ_LIB)
	$(call msg,FUZZLD,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CTL) \
		$(FUZZ_LIB) $(LDLIBS) $(ETCD_LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh $(FUZZ_BUILD)

# ---- static analysis: cppcheck and scan-build over userspace ----------------
ANALYZE_BUILD ?= build-analyze
analyze:
	$(Q)scripts/analyze.sh $(ANALYZE_BUILD)

# The BPF flags, for tests that must see what the build sees.
print-bpf-cflags:
	@echo $(BPF_CFLAGS)

bench: all
	$(Q)scripts/bench.sh $(BUILD)

demo:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh $(BUILD)

# What install needs and nothing else (the package's build: debian/rules)
progs: $(SBINS) $(MAN8)

# The Debian package, built by Debian's tools (debian/rules calls this
# Makefile with PREFIX=/usr). dpkg-buildpackage writes its files in the
# parent directory: they are moved to $(BUILD)/deb.
DEB_VERSION = $(RM_VERSION)
deb:
	$(Q)DEB_BUILD_OPTIONS="parallel=2 $$DEB_BUILD_OPTIONS" dpkg-buildpackage -b -us -uc
	$(Q)mkdir -p $(BUILD)/deb
	$(Q)mv ../ringmaster_$(DEB_VERSION)_*.deb ../ringmaster_$(DEB_VERSION)_*.buildinfo \
		../ringmaster_$(DEB_VERSION)_*.changes $(BUILD)/deb/
	$(Q)mv ../ringmaster-dbgsym_$(DEB_VERSION)_*.deb $(BUILD)/deb/ 2>/dev/null || true
	$(Q)lintian --fail-on error $(BUILD)/deb/ringmaster_$(DEB_VERSION)_*.changes
	@ls $(BUILD)/deb/*.deb

install: $(SBINS) $(MAN8)
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MAN8DIR) \
		$(DESTDIR)$(COMPDIR) $(DESTDIR)$(UNITDIR)
	$(Q)install -m 0755 $(SBINS) $(DESTDIR)$(SBINDIR)/
	$(Q)$(if $(MAN8),install -m 0644 $(MAN8) $(DESTDIR)$(MAN8DIR)/)
	$(Q)$(if $(COMPLETIONS),install -m 0644 $(COMPLETIONS) $(DESTDIR)$(COMPDIR)/)
	$(Q)$(foreach l,$(COMPLETION_LINKS),ln -sfn $(word 2,$(subst :, ,$(l))) \
		$(DESTDIR)$(COMPDIR)/$(word 1,$(subst :, ,$(l))) &&) true
	$(Q)for t in $(UNIT_TMPLS); do \
		u=$$(basename "$$t" .in); \
		sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' \
			"$$t" > $(DESTDIR)$(UNITDIR)/"$$u" && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/"$$u" || exit 1; \
	done
	@echo "installed into $(DESTDIR)$(PREFIX)"

uninstall:
	$(Q)rm -f $(addprefix $(DESTDIR)$(SBINDIR)/,$(notdir $(SBINS))) \
		$(addprefix $(DESTDIR)$(MAN8DIR)/,$(notdir $(MAN8))) \
		$(addprefix $(DESTDIR)$(COMPDIR)/,$(notdir $(COMPLETIONS))) \
		$(foreach l,$(COMPLETION_LINKS),$(DESTDIR)$(COMPDIR)/$(word 1,$(subst :, ,$(l)))) \
		$(addprefix $(DESTDIR)$(UNITDIR)/,$(notdir $(UNIT_TMPLS:.in=)))
	@echo "removed from $(DESTDIR)$(PREFIX)"

demo-fleet:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo-fleet.sh $(BUILD)

demo-keys:
	$(Q)scripts/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo-keys.sh $(BUILD)

format:
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	$(Q)rm -rf $(BUILD)

.SECONDARY:

$(BUILD)/user/lib/version.o: CFLAGS += -DRM_VERSION='"$(RM_VERSION)"'
$(BUILD)/user/lib/version.o: debian/changelog

# rhi — see README.md. `make test` is what CI runs.
# `sudo make demo` runs with sudo's PATH (secure_path), which lacks a Go
# installed for the user only (/usr/local/go/bin on the user's PATH): take
# go from PATH if it is there, else from where Go is usually installed.
# `make GO=/path/to/go` overrides it.
SUDO_HOME := $(if $(SUDO_USER),$(shell getent passwd '$(SUDO_USER)' | cut -d: -f6))
GO      ?= $(or $(shell command -v go 2>/dev/null),$(firstword $(wildcard /usr/local/go/bin/go /usr/lib/go/bin/go /snap/bin/go $(if $(SUDO_HOME),$(SUDO_HOME)/go/bin/go $(SUDO_HOME)/.local/go/bin/go $(SUDO_HOME)/sdk/go*/bin/go))),go)
# The release in VERSION, and +git<N>.<sha> between releases
# (packaging/version.sh): what `rhi version`, the .deb and its changelog say.
VERSION ?= $(shell packaging/version.sh 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN     := bin/rhi
STATICCHECK_VERSION := v0.8.2
# Packages that hold root-only tests (build tag `integration`).
INTEGRATION_PKGS = $(shell grep -rl --include='*_test.go' '^//go:build integration' . | xargs -r -n1 dirname | sort -u)

.PHONY: build test unit integration integration-bird3 lint check-deploy check-monitoring bench fuzz demo bench-lab clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/rhi

# Unit tests always (the docs-drift tests among them); the alert rules and the
# dashboard when promtool is there (CI installs it); the root-only lab tests
# (and with them the check that docs/monitoring.md's scrape job selects the
# shipped rules) whenever we are root, then those with real BIRD again with BIRD 3
# (integration-bird3), then the README's walk when mmdebstrap is there too.
# BIRD3 says what to do where no BIRD 3 root can be had
# (no mmdebstrap, no route to the Debian mirror): auto prints SKIPPED and why,
# require fails (CI), no skips the BIRD 3 pass altogether.
BIRD3 ?= auto
test: unit
	@if command -v promtool >/dev/null; then \
		$(MAKE) --no-print-directory check-monitoring; \
	else \
		echo "SKIPPED: alert-rule tests and dashboard check (make check-monitoring): no promtool"; \
		echo "  Debian: apt-get install --no-install-recommends prometheus, then systemctl disable --now prometheus"; \
	fi
	@if [ "$$(id -u)" = 0 ]; then \
		$(MAKE) --no-print-directory integration && \
		if [ "$(BIRD3)" = no ]; then \
			echo "SKIPPED: the BIRD 3 pass (make integration-bird3): BIRD3=no"; \
		else \
			$(MAKE) --no-print-directory integration-bird3 BIRD3_MISSING=$(if $(filter require,$(BIRD3)),fail,skip); \
		fi; \
	else \
		echo "SKIPPED: root-only integration tests (netns, real BIRD, real netlink) in:"; \
		echo "  $(INTEGRATION_PKGS)"; \
		echo "  run them with: sudo make integration (and with BIRD 3: sudo make integration-bird3)"; \
	fi
	@if [ "$$(id -u)" = 0 ] && command -v mmdebstrap >/dev/null; then \
		$(MAKE) --no-print-directory check-readme; \
	else \
		echo "SKIPPED: the README's getting-started walk on a fresh Debian 13 root (make check-readme): needs root and mmdebstrap"; \
	fi

unit:
	$(GO) test -race -count=1 ./...

integration:
	@[ "$$(id -u)" = 0 ] || { echo "integration tests need root (network namespaces, netlink, BIRD)"; exit 1; }
	$(GO) test -race -count=1 -p 1 -tags integration -timeout 15m $(INTEGRATION_PKGS)

# The root-only tests that run real BIRD, again with BIRD 3: bird's
# TestRealBird, BIRD's parser over the shipped and the labs' configurations,
# verify's tier check against a real export, and the netns labs (anycast,
# tiers and the fail-open guard). BIRD 3 comes from a Debian 13 root built
# from the Debian mirror and cached in /var/cache/rhi-ci
# (integration/bird3/root.sh); its wrappers go first on PATH, so every `bird`
# and `birdc` the tests start, in the labs' namespaces too, is BIRD 3, and
# the stock bird.conf the deploy/bird tests extend is bird3's
# (RHI_BIRD_STOCK_CONF). BIRD3_MISSING=skip turns "no root can be had here"
# into a SKIPPED line; a root that was built but does not run BIRD 3 always
# fails.
BIRD3_PKGS    = ./bird ./deploy/bird ./internal/verify ./integration/lab ./integration/anycast ./integration/tiers
BIRD3_MISSING ?= fail
integration-bird3:
	@[ "$$(id -u)" = 0 ] || { echo "integration-bird3 needs root (network namespaces, netlink, BIRD)"; exit 1; }
	@bin=$$(integration/bird3/root.sh); rc=$$?; \
	if [ $$rc = 3 ] && [ "$(BIRD3_MISSING)" = skip ]; then \
		echo "SKIPPED: the BIRD 3 pass of the root-only tests (make integration-bird3): no Debian 13 root with bird3 (above)"; \
		echo "  it needs mmdebstrap and the Debian mirror: apt-get install mmdebstrap; make integration-bird3"; \
		exit 0; \
	fi; \
	[ $$rc = 0 ] || exit 1; \
	echo "BIRD 3 pass with $$(PATH="$$bin:$$PATH" bird --version 2>&1) ($$bin)"; \
	PATH="$$bin:$$PATH" RHI_BIRD_STOCK_CONF="$$bin/../root/usr/share/bird3/bird.conf" \
		$(GO) test -race -count=1 -p 1 -tags integration -timeout 15m $(BIRD3_PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	@sc=$$(GOBIN=$(CURDIR)/bin/tools $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) 2>&1) || { \
		echo "SKIPPED staticcheck: could not fetch honnef.co/go/tools@$(STATICCHECK_VERSION) from the module proxy:"; echo "$$sc"; exit 0; }; \
		echo "staticcheck ./..."; bin/tools/staticcheck ./... && bin/tools/staticcheck -tags integration ./...

# Static checks of what we ship besides the binary.
check-deploy: build
	@t=$$(mktemp -d); sed "s#/usr/bin/rhi#$(CURDIR)/$(BIN)#g" deploy/systemd/rhi.service > $$t/rhi.service; \
		systemd-analyze verify $$t/rhi.service && echo "systemd-analyze verify: rhi.service ok"; rc=$$?; rm -rf $$t; exit $$rc
	@# The example drop-in: systemd-analyze only warns of an unknown key in it.
	@t=$$(mktemp -d); sed "s#/usr/bin/rhi#$(CURDIR)/$(BIN)#g" deploy/systemd/rhi.service > $$t/rhi.service; \
		mkdir $$t/rhi.service.d && cp deploy/systemd/status-listen.conf $$t/rhi.service.d/; \
		out=$$(systemd-analyze verify $$t/rhi.service 2>&1); rc=$$?; rm -rf $$t; \
		if [ $$rc != 0 ] || printf '%s\n' "$$out" | grep -q 'status-listen.conf'; then echo "$$out"; exit 1; fi; \
		echo "systemd-analyze verify: rhi.service with status-listen.conf ok"
	./$(BIN) check-config --config deploy/rhi.yaml >/dev/null && echo "deploy/rhi.yaml ok"
	./$(BIN) check-config --config deploy/rhi.minimal.yaml | grep -qx 'vips: \[\]' && echo "deploy/rhi.minimal.yaml ok (no VIPs)"

# What ships for Prometheus and Grafana (deploy/prometheus, deploy/grafana):
# the rules load, every alert fires on its synthetic fault and stays silent
# on a healthy host (promtool test rules), every dashboard query parses, and
# every rhi_* metric either names is in docs/metrics.md. The last line shows
# that the dashboard check does reject a query that does not parse.
check-monitoring:
	@command -v promtool >/dev/null || { echo "check-monitoring needs promtool (Debian: apt-get install --no-install-recommends prometheus)"; exit 1; }
	promtool check rules deploy/prometheus/rhi-alerts.yml
	cd deploy/prometheus && promtool test rules rhi-alerts_test.yml
	deploy/grafana/check-dashboard.py deploy/grafana/rhi.json --doc docs/metrics.md --rules deploy/prometheus/rhi-alerts.yml
	@t=$$(mktemp); sed 's/rhi_vip_desired{/rhi_vip_desired{{/' deploy/grafana/rhi.json >$$t; \
		if deploy/grafana/check-dashboard.py $$t >/dev/null 2>&1; then rm -f $$t; echo "check-dashboard.py accepted a broken query"; exit 1; fi; \
		rm -f $$t; echo "check-dashboard.py rejects a broken query: ok"

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Short fuzz runs of every parser (CI runs these too). FUZZTIME is a count
# of executions ("Nx"), not a duration: with a duration, Go 1.26's fuzz
# coordinator can fail a clean run with "context deadline exceeded" as the
# time runs out (golang/go#75804, fixed in Go 1.27). Durations still work for
# a long local run (FUZZTIME=10m), with that risk at the very end.
FUZZTIME ?= 100000x
fuzz:
	@grep -rl --include='*_test.go' '^func Fuzz' . | while read f; do \
		d=$$(dirname $$f); for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/func //'); do \
			echo "fuzz $$d $$fn"; $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$d || exit 1; \
		done; done

# The newcomer's first command: the design note's failover, narrated.
# It needs Go (go.mod's version) and installs bird2 and iproute2 if missing.
demo:
	@[ "$$(id -u)" = 0 ] || { echo "make demo builds network namespaces: run it as root (sudo make demo)"; exit 1; }
	@command -v $(GO) >/dev/null || { \
		echo "make demo: no Go found (sudo resets PATH to secure_path, and go is not in /usr/local/go/bin either)."; \
		echo "  Install Go $$(sed -n 's/^go //p' go.mod) or later (https://go.dev/dl/), then run one of:"; \
		echo "    sudo make demo GO=\$$(command -v go)"; \
		echo "    sudo env PATH=\"\$$PATH\" make demo"; exit 1; }
	@echo "make demo: using $(GO) ($$($(GO) env GOVERSION))"
	@if ! command -v bird >/dev/null || ! command -v ip >/dev/null; then \
		echo "installing bird2 and iproute2"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bird2 iproute2; fi
	$(if $(findstring /,$(GO)),PATH='$(dir $(GO))':"$$PATH") $(GO) run ./integration/demo

clean:
	rm -rf bin dist

# The Vagrant lab (integration/vagrant/README.md): FRR router, two ADCs with
# BIRD, rhi and APISIX or its fake control API. RHI_LAB_APISIX=fake (the
# default) needs no network; the libvirt provider's networks are isolated
# (integration/vagrant/libvirt.sh). `make vagrant-test` runs it all, timed.
VAGRANT          ?= vagrant
VAGRANT_GOARCH   ?= amd64
VAGRANT_PROVIDER ?= libvirt
RHI_LAB_APISIX   ?= fake
# The Debian suite of the VMs: bookworm (BIRD 2) or trixie (BIRD 3).
RHI_LAB_SUITE    ?= bookworm
export RHI_LAB_APISIX RHI_LAB_SUITE
.PHONY: vagrant-box vagrant-up vagrant-failover vagrant-verify vagrant-down vagrant-test check-vagrant
vagrant-box:
	VAGRANT=$(VAGRANT) integration/vagrant/box/box.sh
vagrant-up:
	GOOS=linux GOARCH=$(VAGRANT_GOARCH) CGO_ENABLED=0 $(MAKE) --no-print-directory build BIN=bin/vagrant/rhi
	GOOS=linux GOARCH=$(VAGRANT_GOARCH) CGO_ENABLED=0 $(GO) build -trimpath -o bin/vagrant/fake-apisix ./integration/fakeapi/cmd/fake-apisix
	if [ "$(VAGRANT_PROVIDER)" = libvirt ]; then integration/vagrant/libvirt.sh up; fi
	$(VAGRANT) up --provision --provider=$(VAGRANT_PROVIDER)
vagrant-failover:
	VAGRANT=$(VAGRANT) integration/vagrant/failover.sh
vagrant-verify:
	VAGRANT=$(VAGRANT) integration/vagrant/verify.sh
vagrant-down:
	rc=0; $(VAGRANT) destroy -f || rc=$$?; \
	if [ "$(VAGRANT_PROVIDER)" = libvirt ]; then integration/vagrant/libvirt.sh down && integration/vagrant/libvirt.sh check || rc=1; fi; \
	exit $$rc
vagrant-test:
	VAGRANT=$(VAGRANT) MAKE=$(MAKE) integration/vagrant/test.sh
check-vagrant:
	integration/vagrant/check.sh

# The Debian package (packaging/): nfpm runs through `go run`, pinned in
# packaging/build-deb.sh, so it stays out of go.mod and in Go's build cache.
.PHONY: deb check-deb check-readme
deb:
	@GO=$(GO) MAKE=$(MAKE) packaging/build-deb.sh
check-deb:
	@deb=$$(GO=$(GO) MAKE=$(MAKE) packaging/build-deb.sh) && GO=$(GO) packaging/check-deb.sh "$$deb"
# The README's getting-started steps on a fresh Debian 13 root (mmdebstrap,
# from the Debian mirror, cached in /var/cache/rhi-ci for a week) with the
# package, and its daemon steps with the packaged rhi in the netns lab.
# Root; about a minute with the cached root.
check-readme:
	@[ "$$(id -u)" = 0 ] || { echo "make check-readme builds a Debian root and the netns lab: run it as root"; exit 1; }
	@deb=$$(GO=$(GO) MAKE=$(MAKE) packaging/build-deb.sh) && GO=$(GO) packaging/check-readme.sh "$$deb"

# Lab figures of SPEC §8 (BENCHMARKS.md): reaction to 1 and 1,000 flips at
# the interface and the peer router, idle RSS/CPU, polls of 1,000 and 10,000
# upstreams. Root; a few minutes. `make soak` runs 1,000 flapping VIPs for
# SOAK_DURATION and checks that every VIP ends as its last health says; not CI.
SOAK_DURATION ?= 10m
.PHONY: soak
bench-lab:
	@[ "$$(id -u)" = 0 ] || { echo "make bench-lab builds network namespaces: run it as root"; exit 1; }
	$(GO) run ./integration/benchlab $(BENCHLAB_FLAGS)
soak:
	@[ "$$(id -u)" = 0 ] || { echo "make soak builds network namespaces: run it as root"; exit 1; }
	$(GO) run ./integration/soak -duration $(SOAK_DURATION)

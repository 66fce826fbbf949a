# kubeup: everything CI runs is `make test`.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO ?= go
VERSION := $(or $(shell git describe --always --dirty 2>/dev/null),dev)
LDFLAGS := -X kubeup.dev/kubeup/internal/version.Version=$(VERSION)

TOOLS := $(CURDIR)/.tools
STATICCHECK_VERSION := v0.7.0
STATICCHECK := $(TOOLS)/staticcheck

# make bench BENCH=Execute BENCHTIME=100x
BENCH ?= .
BENCHTIME ?= 1s
BENCH_OUT := bench.out

GOLDEN_PKG := kubeup.dev/kubeup/internal/golden

.PHONY: build test e2e-flannel fuzz soak lint bench update-golden demo demo-status demo-clean clean e2e-deps e2e-packages rootfs kube-binaries runtime-binaries images kubectl npm-deps conformance-deps conformance

# What the e2e tests need: Debian packages, and a Debian 12 root filesystem with systemd that they boot in
# systemd-nspawn. The tests find the root filesystem through KUBEUP_E2E_ROOTFS (they copy it; the cache stays
# clean).
# libseccomp-dev and gcc: runc's build (make runtime-binaries) links libseccomp statically.
E2E_PACKAGES := bind9 dnsutils etcd-server etcd-client iproute2 iputils-ping systemd-container debootstrap awscli e2fsprogs dbus libseccomp-dev gcc libc6-dev
E2E_MIRROR ?= http://deb.debian.org/debian
KUBEUP_E2E_ROOTFS ?= /var/cache/kubeup/rootfs-bookworm
export KUBEUP_E2E_ROOTFS

# The real kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy, built from the
# k8s.io/kubernetes Go module of hack/kube-binaries (a Go module of its own: the main go.mod stays lean) into a
# cache keyed by its version, which is model.DefaultKubernetesVersion (a test holds them together). They are static
# (CGO_ENABLED=0): the images of `make images` hold them with no base. The tests and the demo find them through
# KUBEUP_KUBE_BIN.
KUBE_BINARIES_MOD := hack/kube-binaries
KUBE_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" && $$2 ~ /^v/ { print $$2; exit }' $(KUBE_BINARIES_MOD)/go.mod)
KUBE_COMPONENTS := kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
KUBEUP_KUBE_BIN ?= /var/cache/kubeup/bin/$(KUBE_VERSION)
export KUBEUP_KUBE_BIN
# What `--version`, `kubectl version` and /version report: a plain `go build` would say v0.0.0-master. (The
# module holds no commit id: gitCommit is left empty.)
KUBE_VERSION_PARTS := $(subst ., ,$(KUBE_VERSION:v%=%))
KUBE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=$(word 1,$(KUBE_VERSION_PARTS)) \
	-X $(p).gitMinor=$(word 2,$(KUBE_VERSION_PARTS)) -X $(p).gitTreeState=clean -X $(p).gitCommit=)

# kubectl is Debian's kubernetes-client, unpacked from its package into a cache rather than installed: on a
# machine where another package holds /usr/bin/kubectl (Google Cloud's kubectl), dpkg refuses to install it.
# The tests and the demo find it through KUBEUP_KUBECTL.
KUBECTL_CACHE ?= /var/cache/kubeup/kubernetes-client
KUBEUP_KUBECTL ?= $(KUBECTL_CACHE)/usr/bin/kubectl
export KUBEUP_KUBECTL

## build: bin/kubeup, and each node binary: bin/nodeup and bin/protokube (the local provider's, linking no cloud SDK), bin/nodeup-<cloud> and bin/protokube-<cloud> (one cloud's each), stamped with `git describe`; bin/nodeup-<cloud>-linux-amd64 and their sha256s stamped into kubeup
# The nodeup that aws and gce machines fetch at boot (spec.nodeup's default, docs/cluster-spec.md): each cloud's
# built for linux/amd64 first, then kubeup is stamped with "cloud=url@sha256" for each (internal/version.Nodeup),
# url being RELEASE_URL/nodeup-<cloud>-linux-amd64, where it is to be published.
NODE_CLOUDS := aws gce
# grpcnotrace: gRPC (linked through Google's REST clients' options, never used for a call) leaves out its
# golang.org/x/net/trace pages, whose html/template makes the linker keep every exported method of every type
# (reflection by method name): nodeup-gce is 14.9 MB stripped with the tag, 21 MB without it.
BUILD_TAGS := grpcnotrace
NODE_BINARIES := nodeup protokube $(foreach c,$(NODE_CLOUDS),nodeup-$(c) protokube-$(c))
RELEASE_URL ?= https://github.com/kubeup-dev/kubeup/releases/download/$(VERSION)
build:
	$(GO) build -tags '$(BUILD_TAGS)' -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(NODE_BINARIES))
	nodeup=; for c in $(NODE_CLOUDS); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -tags '$(BUILD_TAGS)' -trimpath -ldflags '$(LDFLAGS)' -o bin/nodeup-$$c-linux-amd64 ./cmd/nodeup-$$c; \
	  nodeup="$${nodeup:+$$nodeup,}$$c=$(RELEASE_URL)/nodeup-$$c-linux-amd64@$$(sha256sum bin/nodeup-$$c-linux-amd64 | cut -d' ' -f1)"; \
	done; \
	$(GO) build -tags '$(BUILD_TAGS)' -ldflags "$(LDFLAGS) -X kubeup.dev/kubeup/internal/version.Nodeup=$$nodeup" -o bin/ ./cmd/kubeup

## test: lint and the e2e prerequisites side by side, then every test with the race detector, including the ones behind the e2e build tag (they need root) and the bounded reliability suite (fault matrix, SIGKILLs, protokube chaos), and those of hack/images and hack/conformance (Go modules of their own; not the conformance run: make conformance), then every fuzz target for FUZZTIME (10s) each
# lint and the e2e prerequisites run side by side (make -j): on a fresh machine apt, debootstrap, npm and the
# module downloads wait on the network and the disk while the builds use the cores. Their output is not synced:
# make syncs a whole recipe, and each of these is one shell command, so its progress lines would wait for its
# end (twenty minutes for kube-binaries); each line they print names its target. The two longest test packages
# are named first, so that each starts at once in a slot of its own (go test runs GOMAXPROCS packages at a time,
# in the order given) and the short ones fill the other slot around them.
SLOW_TEST_PKGS := ./test/e2e ./protokube
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=none lint e2e-deps
	$(GO) test -count=1 -race -tags e2e -timeout 30m -skip '^TestFlannel$$' $(SLOW_TEST_PKGS) ./...
	cd $(IMAGES_MOD) && $(GO) test -count=1 ./...
	cd $(CONFORMANCE_MOD) && $(GO) test -count=1 -skip '^TestAgnhostImage$$' ./...
	@$(MAKE) --no-print-directory fuzz

## e2e-flannel: the flannel pod network end to end (test/e2e TestFlannel: three machines on podNetwork flannel, a pod on one reaching pods on the others through VXLAN; root; not part of make test: it boots three machines of its own)
e2e-flannel: e2e-deps
	$(GO) test -count=1 -tags e2e -timeout 30m -run '^TestFlannel$$' -v ./test/e2e

## fuzz: every fuzz target (hack/fuzz.sh) for FUZZTIME each (default 10s; make fuzz FUZZTIME=5m); a crasher fails it, named
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash hack/fuzz.sh

## soak: the long reliability suite (KUBEUP_SOAK=1: the whole fault matrix, 200 protokube chaos events, more SIGKILLs) and every fuzz target for 5 minutes (root; hours)
soak: e2e-deps
	KUBEUP_SOAK=1 $(GO) test -count=1 -race -tags e2e -timeout 12h -run 'FaultMatrix|Killed|Chaos|SIGKILL' ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5m

## lint: go.mod and go.sum tidy, gofmt, go vet and staticcheck (with the e2e build tag: every file)
# One pass each, with the e2e tag: no file is built only without it (no `//go:build !e2e`; the first check
# below keeps it so), so the tagged build holds every file, and a pass without the tag would check a subset.
lint: $(STATICCHECK)
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit the result"; exit 1; }
	@untagged=$$(grep -rlE '^//go:build .*!e2e' --include='*.go' . || true); \
	if [ -n "$$untagged" ]; then echo "built only without the e2e tag, which lint and make test set:"; echo "$$untagged"; exit 1; fi
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change these files:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags e2e ./...
	$(STATICCHECK) -tags e2e ./...

$(STATICCHECK):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## e2e-deps: install the e2e tests' Debian packages and kubectl, debootstrap their root filesystem, build the Kubernetes components, the container runtime and the images, once (root only)
e2e-deps: e2e-packages rootfs kube-binaries runtime-binaries images kubectl npm-deps

## rootfs: debootstrap the Debian 12 root filesystem with systemd that the e2e tests and the demo boot as machines in systemd-nspawn, once (root only)
rootfs: e2e-packages
	@if [ "$$(id -u)" != 0 ]; then exit 0; fi; \
	if [ -d '$(KUBEUP_E2E_ROOTFS)' ]; then exit 0; fi; \
	tmp='$(KUBEUP_E2E_ROOTFS).tmp'; \
	umount -R "$$tmp/proc" "$$tmp/sys" 2>/dev/null || true; \
	rm -rf --one-file-system "$$tmp"; \
	mkdir -p "$$(dirname '$(KUBEUP_E2E_ROOTFS)')"; \
	echo "debootstrap: Debian 12 with systemd into $(KUBEUP_E2E_ROOTFS) (once; a few minutes)"; \
	debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,ca-certificates \
		bookworm "$$tmp" '$(E2E_MIRROR)' >"$$tmp.log" 2>&1 || { tail -n 30 "$$tmp.log"; exit 1; }; \
	rm -rf --one-file-system "$$tmp/var/cache/apt/archives/"*.deb; \
	: >"$$tmp/etc/machine-id"; \
	mv "$$tmp" '$(KUBEUP_E2E_ROOTFS)'; rm -f "$$tmp.log"

# e2e-packages installs the missing packages only: a second run costs one dpkg-query. policy-rc.d keeps the
# daemons of the packages (named, etcd) from starting on this machine; the tests start their own.
e2e-packages:
	@if [ "$$(id -u)" != 0 ]; then echo "e2e-deps: not root: the e2e tests will skip"; exit 0; fi; \
	if ! command -v dpkg-query >/dev/null; then echo "e2e-deps: not a Debian system: install $(E2E_PACKAGES) yourself"; exit 0; fi; \
	missing=$$(for p in $(E2E_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -qx 'install ok installed' || echo "$$p"; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "e2e-deps: installing" $$missing; \
	policy=; if [ ! -e /usr/sbin/policy-rc.d ]; then policy=/usr/sbin/policy-rc.d; \
		printf '#!/bin/sh\nexit 101\n' >"$$policy"; chmod 755 "$$policy"; trap 'rm -f "$$policy"' EXIT; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null

## kube-binaries: build kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy (static) into $(KUBEUP_KUBE_BIN), once (root only)
# One `go build` of the five shares the compile. It builds into a temporary directory renamed into place, so that
# an interrupted build leaves no half cache (the next run removes what it left); with the cache there it costs
# nothing.
kube-binaries:
	@if [ "$$(id -u)" != 0 ]; then exit 0; fi; \
	dir='$(KUBEUP_KUBE_BIN)'; \
	if [ -z '$(KUBE_VERSION)' ]; then echo "kube-binaries: no k8s.io/kubernetes in $(KUBE_BINARIES_MOD)/go.mod"; exit 1; fi; \
	missing=; for c in $(KUBE_COMPONENTS); do [ -x "$$dir/$$c" ] || missing=1; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	tmp="$$dir.tmp"; rm -rf "$$tmp"; mkdir -p "$$tmp"; trap 'rm -rf "$$tmp"' EXIT; \
	echo "kube-binaries: building Kubernetes $(KUBE_VERSION) ($(KUBE_COMPONENTS)) into $$dir (once; about 20 minutes on 2 cores)"; \
	(cd $(KUBE_BINARIES_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(KUBE_LDFLAGS)' -o "$$tmp/" \
		$(addprefix k8s.io/kubernetes/cmd/,$(KUBE_COMPONENTS))); \
	rm -rf "$$dir.old"; [ ! -e "$$dir" ] || mv -T "$$dir" "$$dir.old"; mv -T "$$tmp" "$$dir"; rm -rf "$$dir.old"

## runtime-binaries: build containerd (with containerd-shim-runc-v2 and ctr), runc, crictl and the CNI plugins into $(KUBEUP_RUNTIME_BIN), once (root only)
# From the Go modules pinned in hack/runtime-binaries/go.mod (a Go module of its own: the main go.mod stays lean),
# through the module proxy. All static: runc with cgo (libnsenter) and Debian's libseccomp-dev, linked statically;
# the rest with CGO_ENABLED=0. The cache is keyed by that go.mod, its go.sum and the build flags, so a new
# version or flag builds afresh and an unchanged one costs nothing. Layout: $(KUBEUP_RUNTIME_BIN)/{containerd,
# containerd-shim-runc-v2,ctr,runc,crictl}, $(KUBEUP_RUNTIME_BIN)/cni/{bridge,host-local,loopback,portmap} and
# VERSIONS (one "name version" a line). Built into a temporary directory renamed into place: an interrupted
# build leaves no half cache. The tests find them through KUBEUP_RUNTIME_BIN.
RUNTIME_MOD := hack/runtime-binaries
mod_version = $(shell awk '$$1 == "$(1)" && $$2 ~ /^v/ { print $$2; exit }' $(2)/go.mod)
CONTAINERD_VERSION := $(call mod_version,github.com/containerd/containerd/v2,$(RUNTIME_MOD))
RUNC_VERSION := $(call mod_version,github.com/opencontainers/runc,$(RUNTIME_MOD))
CNI_PLUGINS_VERSION := $(call mod_version,github.com/containernetworking/plugins,$(RUNTIME_MOD))
CRICTL_VERSION := $(call mod_version,sigs.k8s.io/cri-tools,$(RUNTIME_MOD))
CNI_PLUGINS := bridge host-local loopback portmap
RUNTIME_BUILD_FLAGS := -trimpath -buildvcs=false
RUNTIME_FLAGS := containerd: CGO_ENABLED=0 -tags no_btrfs -ldflags '-s -w -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)' \
	runc: CGO_ENABLED=1 -tags 'seccomp urfave_cli_no_docs netgo osusergo' -ldflags '-s -w -extldflags -static' \
	cni: CGO_ENABLED=0 -ldflags '-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_PLUGINS_VERSION)' \
	crictl: CGO_ENABLED=0 -ldflags '-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)' $(RUNTIME_BUILD_FLAGS)
KUBEUP_RUNTIME_BIN ?= /var/cache/kubeup/runtime/$(shell { cat $(RUNTIME_MOD)/go.mod $(RUNTIME_MOD)/go.sum; echo "$(RUNTIME_FLAGS)"; } 2>/dev/null | sha256sum | cut -c1-16)
export KUBEUP_RUNTIME_BIN
runtime-binaries: e2e-packages
	@if [ "$$(id -u)" != 0 ] || [ -f '$(KUBEUP_RUNTIME_BIN)/VERSIONS' ]; then exit 0; fi; \
	dir='$(KUBEUP_RUNTIME_BIN)'; tmp="$$dir.tmp"; rm -rf "$$tmp"; mkdir -p "$$tmp/cni"; trap 'rm -rf "$$tmp"' EXIT; \
	echo "runtime-binaries: building containerd $(CONTAINERD_VERSION), runc $(RUNC_VERSION), CNI plugins $(CNI_PLUGINS_VERSION) and crictl $(CRICTL_VERSION) into $$dir (once; about 8 minutes on 2 cores)"; \
	cd $(RUNTIME_MOD); \
	CGO_ENABLED=0 $(GO) build $(RUNTIME_BUILD_FLAGS) -tags no_btrfs \
		-ldflags '-s -w -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)' -o "$$tmp/" \
		$(addprefix github.com/containerd/containerd/v2/cmd/,containerd containerd-shim-runc-v2 ctr); \
	CGO_ENABLED=1 $(GO) build $(RUNTIME_BUILD_FLAGS) -tags 'seccomp urfave_cli_no_docs netgo osusergo' \
		-ldflags '-s -w -extldflags -static' -o "$$tmp/runc" github.com/opencontainers/runc; \
	CGO_ENABLED=0 $(GO) build $(RUNTIME_BUILD_FLAGS) \
		-ldflags '-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(CNI_PLUGINS_VERSION)' \
		-o "$$tmp/cni/" $(foreach p,$(CNI_PLUGINS),github.com/containernetworking/plugins/plugins/$(if $(filter host-local,$(p)),ipam,$(if $(filter portmap,$(p)),meta,main))/$(p)); \
	CGO_ENABLED=0 $(GO) build $(RUNTIME_BUILD_FLAGS) -ldflags '-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)' \
		-o "$$tmp/" sigs.k8s.io/cri-tools/cmd/crictl; \
	printf '%s %s\n' containerd $(CONTAINERD_VERSION) runc $(RUNC_VERSION) cni-plugins $(CNI_PLUGINS_VERSION) crictl $(CRICTL_VERSION) >"$$tmp/VERSIONS"; \
	mkdir -p "$$(dirname "$$dir")"; rm -rf "$$dir"; mv -T "$$tmp" "$$dir"

## images: write the OCI image archives the nodes preload (etcd, the Kubernetes components, CoreDNS, flannel, pause, the e2e workload) into $(KUBEUP_IMAGES), once (root only) (gcc and libc6-dev from e2e-packages: flanneld links with cgo)
# hack/images (a Go module of its own, with go-containerregistry) writes one archive per image, named as kubeup's
# manifests name it, that `ctr images import` accepts: the static binaries of `make kube-binaries` at
# /usr/local/bin/<name>; etcd built static (CGO_ENABLED=0) from go.etcd.io/etcd/server/v3 pinned in hack/etcd/go.mod
# (its version is model.DefaultEtcdVersion: a test holds them together) at /usr/local/bin/etcd; CoreDNS built
# static from github.com/coredns/coredns pinned in hack/coredns/go.mod (a module of its own: its cloud plugins'
# SDKs stay out of hack/images) at /coredns, its entrypoint, named as kubeadm names it; flanneld built static from
# github.com/flannel-io/flannel pinned in hack/flannel/go.mod (a module of its own too) at /opt/bin/flanneld, its
# entrypoint, named as flannel publishes it (cgo, linked statically: its udp backend needs cgo on amd64; no
# iptables or nft in the image: the DaemonSet runs it without rules, docs/networking.md); the sandbox image
# $(PAUSE_IMAGE) (containerd's default) holding /pause, our own (hack/images/pause); and the e2e workload
# $(HELLO_IMAGE) holding /hello (hack/images/hello). kube-proxy runs iptables: its image has a base layer, Debian
# 12's iptables and nftables with the libraries they link, unpacked (not installed) from the packages pinned by
# version and sha256 in $(PROXY_DEBS), which hack/images/debs.sh downloads once into $(KUBEUP_DEBS) (keyed by
# the list; a second run asks no mirror) and unpacks with iptables linked to its nf_tables backend. The cache is
# keyed by hack/images (the list too), hack/etcd, hack/coredns, hack/flannel and hack/kube-binaries; $(KUBEUP_IMAGES)/IMAGES
# lists "archive reference" a line, bin/ holds etcd, coredns, flanneld, pause and hello. Built into a temporary directory renamed into place. The
# tests find them through KUBEUP_IMAGES.
IMAGES_MOD := hack/images
ETCD_MOD := hack/etcd
ETCD_VERSION := $(call mod_version,go.etcd.io/etcd/server/v3,$(ETCD_MOD))
COREDNS_MOD := hack/coredns
COREDNS_VERSION := $(call mod_version,github.com/coredns/coredns,$(COREDNS_MOD))
FLANNEL_MOD := hack/flannel
FLANNEL_VERSION := $(call mod_version,github.com/flannel-io/flannel,$(FLANNEL_MOD))
PAUSE_IMAGE := registry.k8s.io/pause:3.10.2
HELLO_IMAGE := kubeup.dev/e2e/hello:v1
KUBE_IMAGES := kube-apiserver kube-controller-manager kube-scheduler kube-proxy
PROXY_DEBS := $(IMAGES_MOD)/kube-proxy-debs
KUBEUP_DEBS ?= /var/cache/kubeup/debs/$(shell sha256sum $(PROXY_DEBS) 2>/dev/null | cut -c1-16)
IMAGES_KEY_FILES = $(sort $(shell find $(IMAGES_MOD) $(ETCD_MOD) $(COREDNS_MOD) $(FLANNEL_MOD) -type f 2>/dev/null)) $(KUBE_BINARIES_MOD)/go.mod $(KUBE_BINARIES_MOD)/go.sum
KUBEUP_IMAGES ?= /var/cache/kubeup/images/$(shell { cat $(IMAGES_KEY_FILES); echo "$(PAUSE_IMAGE) $(HELLO_IMAGE) $(KUBE_IMAGES) $(KUBEUP_KUBE_BIN)"; } 2>/dev/null | sha256sum | cut -c1-16)
export KUBEUP_IMAGES
images: kube-binaries e2e-packages
	@if [ "$$(id -u)" != 0 ] || [ -f '$(KUBEUP_IMAGES)/IMAGES' ]; then exit 0; fi; \
	dir='$(KUBEUP_IMAGES)'; tmp="$$dir.tmp"; rm -rf "$$tmp"; mkdir -p "$$tmp/bin"; trap 'rm -rf "$$tmp"' EXIT; \
	echo "images: building etcd $(ETCD_VERSION), CoreDNS $(COREDNS_VERSION), flannel $(FLANNEL_VERSION), pause and hello, and writing the image archives into $$dir (once; about 15 minutes on 2 cores)"; \
	$(IMAGES_MOD)/debs.sh fetch $(PROXY_DEBS) '$(KUBEUP_DEBS)'; \
	$(IMAGES_MOD)/debs.sh root '$(KUBEUP_DEBS)' "$$tmp/kube-proxy-base"; \
	(cd $(ETCD_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '-s -w' -o "$$tmp/bin/etcd" go.etcd.io/etcd/server/v3); \
	(cd $(COREDNS_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '-s -w' -o "$$tmp/bin/coredns" github.com/coredns/coredns); \
	(cd $(FLANNEL_MOD) && CGO_ENABLED=1 $(GO) build -trimpath -buildvcs=false -tags 'netgo osusergo' \
		-ldflags '-s -w -extldflags -static -X github.com/flannel-io/flannel/pkg/version.Version=$(FLANNEL_VERSION)' \
		-o "$$tmp/bin/flanneld" github.com/flannel-io/flannel); \
	(cd $(IMAGES_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '-s -w' -o "$$tmp/bin/" . ./pause ./hello); \
	"$$tmp/bin/images" -out "$$tmp" \
		-image 'registry.k8s.io/etcd:$(ETCD_VERSION:v%=%)-0='"$$tmp/bin/etcd:/usr/local/bin/etcd" \
		$(foreach c,$(KUBE_IMAGES),-image 'registry.k8s.io/$(c):$(KUBE_VERSION)=$(KUBEUP_KUBE_BIN)/$(c):/usr/local/bin/$(c)') \
		-image 'registry.k8s.io/coredns/coredns:$(COREDNS_VERSION)='"$$tmp/bin/coredns:/coredns" \
		-image 'ghcr.io/flannel-io/flannel:$(FLANNEL_VERSION)='"$$tmp/bin/flanneld:/opt/bin/flanneld" \
		-image '$(PAUSE_IMAGE)='"$$tmp/bin/pause:/pause" \
		-image '$(HELLO_IMAGE)='"$$tmp/bin/hello:/hello" \
		-base 'registry.k8s.io/kube-proxy:$(KUBE_VERSION)='"$$tmp/kube-proxy-base"; \
	rm -r "$$tmp/bin/images" "$$tmp/kube-proxy-base"; \
	mkdir -p "$$(dirname "$$dir")"; rm -rf "$$dir"; mv -T "$$tmp" "$$dir"

## conformance-deps: build the upstream e2e test binary (e2e.test) into $(KUBEUP_E2E_TEST) and the test images make conformance's focus needs into $(KUBEUP_CONFORMANCE_IMAGES), once (root only; not part of make test or make demo; about 20 minutes on 2 cores)
# e2e.test is `go test -c k8s.io/kubernetes/test/e2e`, as upstream's build (hack/lib/golang.sh) makes it, from the
# k8s.io/kubernetes module pinned in hack/conformance/go.mod (a module of its own: ginkgo, gomega and the test
# packages stay out of hack/kube-binaries; its version is hack/kube-binaries', a test holds them together),
# static, stamped with the version as the components are. Its cache is keyed by that go.mod, go.sum and the
# flags. The images are written by hack/images' tool, named as e2e.test asks for them once
# hack/conformance/repo-list.yaml (KUBE_TEST_REPO_LIST) maps its registries to $(E2E_REGISTRY): agnhost from
# k8s.io/kubernetes/test/images/agnhost (the same module); busybox, jessie-dnsutils and agnhost on a base of
# Debian's busybox-static, dig, curl and netcat-openbsd (nc: the link Debian's alternatives would make, over
# busybox's) (the packages pinned in $(CONFORMANCE_DEBS), fetched as kube-proxy's are); httpd and nginx stand-ins (busybox's httpd on port 80); pause 3.10.1 (hack/images/pause). Their cache
# is keyed by hack/images, hack/conformance's go.mod, go.sum, package list and repo list, and the image list;
# IMAGES lists "archive reference" a line, as $(KUBEUP_IMAGES) does, and repo-list.yaml is beside them. Each is
# built into a temporary directory renamed into place.
CONFORMANCE_MOD := hack/conformance
CONFORMANCE_DEBS := $(CONFORMANCE_MOD)/debs
E2E_REGISTRY := kubeup.dev/e2e-test-images
# NAME:TAG of each image, as test/utils/image/manifest.go of the module names it (a test holds them together).
CONFORMANCE_IMAGES := agnhost:2.56 busybox:1.37.0-1 jessie-dnsutils:1.7 httpd:2.4.38-4 nginx:1.14-4 pause:3.10.1
E2E_TEST_FLAGS := CGO_ENABLED=0 -vet=off -trimpath -buildvcs=false -ldflags '$(KUBE_LDFLAGS)'
KUBEUP_E2E_TEST ?= /var/cache/kubeup/e2e-test/$(shell { cat $(CONFORMANCE_MOD)/go.mod $(CONFORMANCE_MOD)/go.sum; echo "$(E2E_TEST_FLAGS)"; } 2>/dev/null | sha256sum | cut -c1-16)
KUBEUP_CONFORMANCE_DEBS ?= /var/cache/kubeup/debs/$(shell sha256sum $(CONFORMANCE_DEBS) 2>/dev/null | cut -c1-16)
CONFORMANCE_KEY_FILES = $(sort $(shell find $(IMAGES_MOD) -type f 2>/dev/null)) $(addprefix $(CONFORMANCE_MOD)/,go.mod go.sum debs repo-list.yaml)
# CONFORMANCE_LAYOUT is in the key too: raise it when conformance-deps' recipe changes what goes into the images
# (2: agnhost's localhost.crt and .key, /uploads, /agnhost-2, as upstream's Dockerfile adds them).
CONFORMANCE_LAYOUT := 2
KUBEUP_CONFORMANCE_IMAGES ?= /var/cache/kubeup/conformance-images/$(shell { cat $(CONFORMANCE_KEY_FILES); echo "$(E2E_REGISTRY) $(CONFORMANCE_IMAGES) $(CONFORMANCE_LAYOUT)"; } 2>/dev/null | sha256sum | cut -c1-16)
export KUBEUP_E2E_TEST KUBEUP_CONFORMANCE_IMAGES
e2e_image = $(E2E_REGISTRY)/$(filter $(1):%,$(CONFORMANCE_IMAGES))
conformance-deps: e2e-packages
	@if [ "$$(id -u)" != 0 ]; then echo "conformance-deps: run as root (the caches are under /var/cache/kubeup)"; exit 1; fi; \
	dir='$(KUBEUP_E2E_TEST)'; \
	if [ ! -x "$$dir/e2e.test" ]; then \
		tmp="$$dir.tmp"; rm -rf "$$tmp"; mkdir -p "$$tmp"; trap 'rm -rf "$$tmp"' EXIT; start=$$(date +%s); \
		echo "conformance-deps: building e2e.test of Kubernetes $(KUBE_VERSION) into $$dir (once; about 20 minutes on 2 cores)"; \
		(cd $(CONFORMANCE_MOD) && CGO_ENABLED=0 $(GO) test -c -vet=off -trimpath -buildvcs=false -ldflags '$(KUBE_LDFLAGS)' \
			-o "$$tmp/e2e.test" k8s.io/kubernetes/test/e2e); \
		mkdir -p "$$(dirname "$$dir")"; rm -rf "$$dir"; mv -T "$$tmp" "$$dir"; trap - EXIT; \
		echo "conformance-deps: e2e.test built in $$(( $$(date +%s) - start )) s"; \
	fi; \
	dir='$(KUBEUP_CONFORMANCE_IMAGES)'; \
	if [ ! -f "$$dir/IMAGES" ]; then \
		tmp="$$dir.tmp"; rm -rf "$$tmp"; mkdir -p "$$tmp/bin"; trap 'rm -rf "$$tmp"' EXIT; start=$$(date +%s); \
		echo "conformance-deps: building agnhost and pause, and writing the test images into $$dir (once; a few minutes)"; \
		$(IMAGES_MOD)/debs.sh fetch $(CONFORMANCE_DEBS) '$(KUBEUP_CONFORMANCE_DEBS)'; \
		$(IMAGES_MOD)/debs.sh unpack '$(KUBEUP_CONFORMANCE_DEBS)' "$$tmp/base"; \
		rm -f "$$tmp/base/usr/bin/nc"; ln -sfn nc.openbsd "$$tmp/base/bin/nc"; ln -sfn bash "$$tmp/base/bin/sh"; \
		(cd $(CONFORMANCE_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '-s -w' -o "$$tmp/bin/agnhost" \
			k8s.io/kubernetes/test/images/agnhost); \
		porter="$$(cd $(CONFORMANCE_MOD) && $(GO) list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/images/agnhost/porter"; \
		cp "$$porter/localhost.crt" "$$porter/localhost.key" "$$tmp/base/"; chmod 0644 "$$tmp/base/localhost.crt" "$$tmp/base/localhost.key"; \
		mkdir -p "$$tmp/base/uploads"; ln -sfn agnhost "$$tmp/base/agnhost-2"; \
		(cd $(IMAGES_MOD) && CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '-s -w' -o "$$tmp/bin/" . ./pause); \
		"$$tmp/bin/images" -out "$$tmp" \
			-image '$(call e2e_image,agnhost)='"$$tmp/bin/agnhost:/agnhost" -base '$(call e2e_image,agnhost)='"$$tmp/base" \
			-cmd '$(call e2e_image,agnhost)=pause' \
			$(foreach i,busybox jessie-dnsutils,-image '$(call e2e_image,$(i))='"$$tmp/base/bin/busybox:/bin/busybox" \
				-base '$(call e2e_image,$(i))='"$$tmp/base" -cmd '$(call e2e_image,$(i))=sh') \
			$(foreach i,httpd nginx,-image '$(call e2e_image,$(i))='"$$tmp/base/bin/busybox:/bin/busybox" \
				-cmd '$(call e2e_image,$(i))=httpd,-f,-p,80') \
			-image '$(call e2e_image,pause)='"$$tmp/bin/pause:/pause"; \
		cp $(CONFORMANCE_MOD)/repo-list.yaml "$$tmp/"; \
		rm -r "$$tmp/bin" "$$tmp/base"; \
		mkdir -p "$$(dirname "$$dir")"; rm -rf "$$dir"; mv -T "$$tmp" "$$dir"; trap - EXIT; \
		echo "conformance-deps: test images written in $$(( $$(date +%s) - start )) s"; \
	fi; \
	cd $(CONFORMANCE_MOD) && $(GO) test -count=1 -run '^TestAgnhostImage$$' .

## conformance: after make demo, run the upstream conformance tests of the focus (hack/conformance/focus) against the demo's cluster, write the JUnit report into $(CONFORMANCE_REPORT) and print the passed / failed / skipped counts (root only; DRY_RUN=1: list the specs the focus selects, no cluster needed)
# The demo is checked first (a clear error when it does not run), then conformance-deps (nothing when cached).
CONFORMANCE_REPORT ?= /tmp/kubeup-conformance
export CONFORMANCE_REPORT
conformance:
	@bash hack/conformance.sh preflight
	@$(MAKE) --no-print-directory conformance-deps
	@GO=$(GO) bash hack/conformance.sh run

## kubectl: unpack Debian's kubernetes-client into $(KUBECTL_CACHE), once (root only)
kubectl: e2e-packages
	@if [ "$$(id -u)" != 0 ] || [ -x '$(KUBEUP_KUBECTL)' ]; then exit 0; fi; \
	if ! command -v dpkg-deb >/dev/null; then echo "kubectl: not a Debian system: set KUBEUP_KUBECTL to a kubectl"; exit 0; fi; \
	tmp='$(KUBECTL_CACHE).tmp'; rm -rf "$$tmp"; mkdir -p "$$tmp"; trap 'rm -rf "$$tmp"' EXIT; \
	cd "$$tmp"; \
	apt-get download -qq kubernetes-client 2>/dev/null || { apt-get update -qq && apt-get download -qq kubernetes-client; }; \
	dpkg-deb -x kubernetes-client_*.deb root; \
	rm -rf '$(KUBECTL_CACHE)'; mv -T root '$(KUBECTL_CACHE)'; \
	echo "kubectl: Debian's kubernetes-client $$(dpkg-deb -f kubernetes-client_*.deb Version) unpacked into $(KUBECTL_CACHE)"

## npm-deps: install the Node.js referee of internal/fakegce (Google's @google-cloud/compute and @google-cloud/dns, pinned by its package-lock.json) into $(KUBEUP_NPM_CACHE), once (root only)
# The cache is keyed by the lock's sha256, so a new lock installs afresh and an unchanged one costs nothing (no
# registry is asked: offline once cached). npm ci runs in a temporary directory renamed into place; install
# scripts are not run (the packages need none). nodejs_test.go finds the packages through KUBEUP_NPM_CACHE.
NPM_REFEREE := internal/fakegce/testdata/nodejs
KUBEUP_NPM_CACHE ?= /var/cache/kubeup/npm/$(shell sha256sum $(NPM_REFEREE)/package-lock.json 2>/dev/null | cut -c1-16)
export KUBEUP_NPM_CACHE
npm-deps:
	@if [ "$$(id -u)" != 0 ] || [ -d '$(KUBEUP_NPM_CACHE)/node_modules' ]; then exit 0; fi; \
	if ! command -v npm >/dev/null; then echo "npm-deps: no npm: the Node.js referee test will skip"; exit 0; fi; \
	tmp='$(KUBEUP_NPM_CACHE).tmp'; rm -rf "$$tmp"; mkdir -p "$$tmp"; trap 'rm -rf "$$tmp"' EXIT; \
	cp $(NPM_REFEREE)/package.json $(NPM_REFEREE)/package-lock.json "$$tmp/"; \
	echo "npm-deps: npm ci of $(NPM_REFEREE) into $(KUBEUP_NPM_CACHE) (once)"; \
	(cd "$$tmp" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error); \
	rm -rf '$(KUBEUP_NPM_CACHE)'; mv -T "$$tmp" '$(KUBEUP_NPM_CACHE)'

## bench: every benchmark (the engine with its kops/Terraform anchors, nodeup, protokube (e2e: root), the cloud pipelines on the fakes) into bench.out, then docs/performance.md from it; the table is printed (about 10 minutes)
# hack/perftable runs even when a benchmark failed (its row says so); the target fails then.
bench: e2e-packages
	@fail=0; { \
	  $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime=$(BENCHTIME) ./engine/ ./nodeup/ || fail=1; \
	  $(GO) test -tags e2e -run '^$$' -bench '$(BENCH)' -benchmem -benchtime=20x ./protokube/ || fail=1; \
	  $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime=1x ./test/bench/ || fail=1; \
	  exit $$fail; } 2>&1 | tee $(BENCH_OUT) || fail=1; \
	$(GO) run ./hack/perftable -o docs/performance.md <$(BENCH_OUT); exit $$fail

## update-golden: rewrite the golden files of every package whose tests use internal/golden
update-golden:
	@pkgs=$$($(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... \
		| awk '{ for (i = 2; i <= NF; i++) if ($$i == "$(GOLDEN_PKG)") { print $$1; break } }'); \
	if [ -z "$$pkgs" ]; then echo "no tests use $(GOLDEN_PKG)"; exit 0; fi; \
	echo "$(GO) test -count=1" $$pkgs "-update"; \
	$(GO) test -count=1 $$pkgs -update; \
	git status --short -- $$(for p in $$pkgs; do echo "./$${p#kubeup.dev/kubeup/}"; done) || true

## demo: as root, a 3-control-plane cluster on the local provider in /tmp/kubeup-demo: create, dry run, apply, nodeup and protokube on each node (network namespaces, a BIND it starts), ending with a healthy 3-member etcd
demo: build e2e-packages rootfs kube-binaries runtime-binaries images kubectl
	@bash hack/demo.sh

## demo-status: etcdctl endpoint health against every member of the demo's etcd through its DNS name; /readyz at every address api.<cluster> holds; no device mounted twice
demo-status:
	@bash hack/demo-status.sh

## demo-clean: remove everything make demo made (processes, mounts, loop devices, network namespaces, BIND, /tmp/kubeup-demo)
demo-clean:
	@bash hack/demo-clean.sh

## clean: remove what the build and the benchmarks wrote (not .tools/)
clean:
	rm -rf bin/ $(BENCH_OUT)

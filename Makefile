# The project's two tasks besides `go run ./cmd/gpucluster plan`: `make test` runs every test, as
# CI does (.ci/run). It first builds the test harness, the programs the tests run that are not
# gpucluster's own code (etcd, the Kubernetes control plane and operators, the Pulumi CLI, the
# pulumi-kubernetes provider, pulumi-eks from npm), into a cache, once: minutes on a fresh machine,
# seconds after. No test builds them inside its timeout; without them, the tests that need them
# fail at once and name `make harness`.
.PHONY: test harness lint quick stack

# The packages `make quick` tests: all but the harness, the control plane and the real-engine tier
# (test/README.md).
QUICK = $$(go list ./... | grep -v -e '/test/harness' -e '/test/kubeapi' -e '/test/realengine')

test: harness lint
	go test ./...

harness:
	go run ./test/harness/cmd/harness

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	go vet ./...

# The inner loop: every test but the real-engine tier and the control-plane tests, which skip
# under -short; no harness build. `make test` runs everything.
quick:
	go test -short $(QUICK)

# One stack through the real-engine tier: make stack STACK=p4d-efa (the group packages that hold
# it, only its tests).
stack: harness
	@test -n "$(STACK)" || { echo "make stack: set STACK=<name of a stack in stacks/>" >&2; exit 2; }
	go run ./test/realengine/cmd/stack $(STACK)

# The project's two tasks besides `go run ./cmd/gpucluster plan`: `make test` runs every test, as
# CI does (.ci/run). It first builds the test harness, the programs the tests run that are not
# gpucluster's own code (etcd, the Kubernetes control plane and operators, the Pulumi CLI, the
# pulumi-kubernetes provider, pulumi-eks from npm), into a cache, once: minutes on a fresh machine,
# seconds after. No test builds them inside its timeout; without them, the tests that need them
# fail at once and name `make harness`.
.PHONY: test harness lint

test: harness lint
	go test ./...

harness:
	go run ./internal/harness/cmd/harness

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	go vet ./...

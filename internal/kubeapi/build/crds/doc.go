// Package crds pins the Karpenter modules whose CRDs the test API server installs; the harness
// reads them from the module cache with `go list -m` in this directory.
package crds

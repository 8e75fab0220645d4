// Package crds pins the modules whose CRDs the test API server installs (Karpenter's, the MPI
// operator's, the NVIDIA DRA driver's ComputeDomains) and whose charts the real-engine tests'
// registry stand-in serves (LeaderWorkerSet's: a subchart Kubeflow Trainer's chart carries); the
// harness reads them from the module cache with `go list -m` in this directory.
package crds

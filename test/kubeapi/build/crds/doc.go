// Package crds pins the modules whose CRDs the test API server installs (the MPI operator's, the
// NVIDIA DRA driver's ComputeDomains; Karpenter's is fetched apart: kubeapi.Karpenter) and whose
// charts the real-engine tests' registry stand-in serves (LeaderWorkerSet's: a subchart Kubeflow Trainer's chart carries); the
// harness reads them from the module cache with `go list -m` in this directory.
package crds

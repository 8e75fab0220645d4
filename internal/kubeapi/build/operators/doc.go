// Package operators pins the controllers the harness builds from one module, so that the
// Kubernetes libraries they share (client-go, controller-runtime, k8s.io/api at one version)
// compile once: Kubeflow Trainer's controller manager, JobSet's and Kueue's.
package operators

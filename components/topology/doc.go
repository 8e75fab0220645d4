// Package topology is gpucluster's topology core, pure Go with no Pulumi: over the instance catalog
// (package catalog: GPUs, interconnect, EFA, network cards, bandwidth, prices), the built-in
// profiles, the stack-file and engine-configuration readers with their validation (every error
// with file, line, key and fix), and the derivation of each pool's spec: interfaces, placement,
// storage, capacity, node metadata, in-cluster pieces, the training pod and the NCCL transports
// it should use. Every topology decision is made here; the components only translate the spec
// into resources, and the doctor and the plan read it.
package topology

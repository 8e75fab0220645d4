// Package catalog holds the facts gpucluster derives topologies from, apart from the derivation
// itself (as Karpenter keeps providers/instancetype apart from its API): the GPU instance types
// with every figure's public source, their on-demand prices, and published nccl-tests results.
// Its tests hold the figures to the generated data of the Go modules in the build (Karpenter's
// instance-type and price tables, the EC2 API enum, vpc-cni's limits). It knows nothing of
// profiles or stacks; components/topology reads it and decides.
package catalog

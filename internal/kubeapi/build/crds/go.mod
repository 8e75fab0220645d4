module gpucluster.test/crds

go 1.26.6

require (
	github.com/aws/karpenter-provider-aws v1.14.1
	github.com/kubeflow/mpi-operator v0.8.2
)

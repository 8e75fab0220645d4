module gpucluster.test/crds

go 1.26.6

require (
	github.com/kubeflow/mpi-operator v0.8.2
	sigs.k8s.io/dra-driver-nvidia-gpu v0.4.1
	sigs.k8s.io/lws v0.8.0
)

module gpucluster.test/operators

go 1.26.0

require (
	github.com/kubeflow/trainer/v2 v2.3.0
	sigs.k8s.io/jobset v0.12.0
	sigs.k8s.io/kueue v0.19.2
)

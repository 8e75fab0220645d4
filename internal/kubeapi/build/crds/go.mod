module gpucluster.test/crds

go 1.24.0

require github.com/aws/karpenter-provider-aws v1.14.1

module github.com/gpucluster/gpucluster

go 1.26.6

require (
	github.com/aws/amazon-vpc-cni-k8s v1.23.2
	go.yaml.in/yaml/v3 v3.0.5
	k8s.io/apimachinery v0.37.0
)

require (
	github.com/aws/aws-sdk-go-v2/service/ec2 v1.329.0 // indirect
	github.com/aws/smithy-go v1.28.1 // indirect
	github.com/fxamacker/cbor/v2 v2.9.1 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/zapr v1.3.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
)

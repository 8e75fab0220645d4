module github.com/gpucluster/gpucluster

go 1.24.6

require (
	github.com/aws/amazon-vpc-cni-k8s v1.20.4
	go.yaml.in/yaml/v3 v3.0.4
	k8s.io/apimachinery v0.34.1
)

require (
	github.com/aws/aws-sdk-go-v2/service/ec2 v1.254.0 // indirect
	github.com/aws/smithy-go v1.23.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	github.com/go-logr/zapr v1.3.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/utils v0.0.0-20250604170112-4c0f3b243397 // indirect
	sigs.k8s.io/json v0.0.0-20241014173422-cfa47c3a1cc8 // indirect
)

package nodepool

import (
	"encoding/base64"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
)

// nodeConfig mirrors the part of nodeadm's NodeConfig (apiVersion node.eks.aws/v1alpha1,
// github.com/awslabs/amazon-eks-ami/nodeadm/api/v1alpha1) that gpucluster writes. The upstream
// module is not imported: it pulls containerd, aws-sdk-go v1 and controller-runtime.
type nodeConfig struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Spec       nodeConfigSpec `yaml:"spec"`
}

type nodeConfigSpec struct {
	Cluster  *clusterDetails `yaml:"cluster,omitempty"`
	Kubelet  *kubeletOptions `yaml:"kubelet,omitempty"`
	Instance instanceOptions `yaml:"instance"`
}

type clusterDetails struct {
	Name                 string `yaml:"name"`
	APIServerEndpoint    string `yaml:"apiServerEndpoint"`
	CertificateAuthority string `yaml:"certificateAuthority"` // base64, as nodeadm's []byte field reads it
	CIDR                 string `yaml:"cidr"`
}

type kubeletOptions struct {
	Flags []string `yaml:"flags"`
}

type instanceOptions struct {
	LocalStorage localStorage `yaml:"localStorage"`
}

type localStorage struct {
	// RAID0 stripes the instance-store NVMe disks and mounts them for containerd and the kubelet:
	// multi-GB training images and checkpoints land on fast local disk, not on EBS.
	Strategy string `yaml:"strategy"`
}

// Cluster is what a custom image needs to join the cluster; managed EKS images get it from EKS.
type Cluster struct {
	Name, Endpoint, CertificateAuthority, ServiceCIDR string
}

const mimeBoundary = "//gpucluster//"

// userData returns the launch template's base64 user data for the pool's image family.
// cluster is only read for custom images.
func userData(spec topology.PoolSpec, cluster Cluster) (string, error) {
	switch spec.AMI.Family {
	case topology.AMIBottlerocketNVIDIA:
		if spec.Storage.InstanceStore != "RAID0" {
			return "", fmt.Errorf("pool %s: Bottlerocket user data has no instance-store layout %q", spec.Name, spec.Storage.InstanceStore)
		}
		return base64.StdEncoding.EncodeToString([]byte(bottlerocketSettings)), nil
	case topology.AMIAL2023NVIDIA, topology.AMICustom:
		cfg := nodeConfig{APIVersion: "node.eks.aws/v1alpha1", Kind: "NodeConfig",
			Spec: nodeConfigSpec{Instance: instanceOptions{LocalStorage: localStorage{Strategy: spec.Storage.InstanceStore}}}}
		if spec.AMI.Family == topology.AMICustom {
			// A managed node group passes labels and taints only to EKS images' bootstrap; a custom
			// image must register them itself, with the cluster details EKS would have merged in.
			cfg.Spec.Cluster = &clusterDetails{Name: cluster.Name, APIServerEndpoint: cluster.Endpoint,
				CertificateAuthority: cluster.CertificateAuthority, CIDR: cluster.ServiceCIDR}
			cfg.Spec.Kubelet = &kubeletOptions{Flags: []string{"--node-labels=" + labelFlag(spec.Labels), "--register-with-taints=" + taintFlag(spec.Taints)}}
		}
		doc, err := yaml.Marshal(cfg)
		if err != nil {
			return "", err
		}
		// EKS merges a NodeConfig part of a MIME multi-part document with its own (AL2023 user data).
		mime := fmt.Sprintf("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n--%s\nContent-Type: application/node.eks.aws\n\n---\n%s\n",
			mimeBoundary, mimeBoundary, doc)
		if opts := spec.AMI.NVIDIAModuleOptions; len(opts) > 0 {
			mime += "--" + mimeBoundary + "\nContent-Type: text/cloud-config\n\n" + moduleOptionsConfig(opts) + "\n"
		}
		mime += "--" + mimeBoundary + "--\n"
		return base64.StdEncoding.EncodeToString([]byte(mime)), nil
	}
	return "", fmt.Errorf("no user data for image family %q", spec.AMI.Family)
}

// moduleOptionsConfig is a cloud-config that writes the nvidia module's options before the driver
// loads. On the EKS AL2023 NVIDIA image the driver is not in the module tree until
// nvidia-kmod-load.service installs and loads it, after network-online.target
// (amazon-eks-ami templates/al2023/runtime/gpu/nvidia-kmod-load.sh), and cloud-init's write_files
// runs in cloud-init.service, before network-online.target; a shell-script part would run in
// cloud-final, unordered against the driver's load.
func moduleOptionsConfig(opts []string) string {
	return "#cloud-config\nwrite_files:\n  - path: " + topology.NVIDIAModuleOptionsFile + "\n    permissions: \"0644\"\n    content: |\n      options nvidia " + strings.Join(opts, " ") + "\n"
}

// bottlerocketSettings stripes the instance-store NVMe disks for containerd and the kubelet, as
// Karpenter's RAID0 instance-store policy does (karpenter-provider-aws amifamily/bootstrap/
// bottlerocket.go); EKS merges the cluster settings into it.
const bottlerocketSettings = `[settings.bootstrap-commands.000-mount-instance-storage]
commands = [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]]
essential = true
mode = "always"
`

func labelFlag(labels map[string]string) string {
	keys := topology.SortedKeys(labels)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

func taintFlag(taints []topology.Taint) string {
	parts := make([]string, len(taints))
	for i, t := range taints {
		parts[i] = t.Key + "=" + t.Value + ":" + t.Effect
	}
	return strings.Join(parts, ",")
}

package topology

import (
	"fmt"
	"sort"
	"strings"
)

// Where a region's EKS images live and which ARN partition it is in: one table, from the EKS
// user guide's "View Amazon container image registries for Amazon EKS add-ons"
// (docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html; page source
// awsdocs/amazon-eks-user-guide latest/ug/workloads/add-ons-images.adoc). The add-on images,
// the EFA device plugin's among them, are copied to the registry of every EKS region; the account
// differs in the regions that opened later, and China's registries end in amazonaws.com.cn.

// RegionInfo is what the program needs to know about a region besides its name.
type RegionInfo struct {
	Partition string // ARN partition: aws, aws-us-gov, aws-cn, aws-eusc
	DNSSuffix string // of its endpoints and registries
	// EKSRegistryAccount is the AWS account of the region's EKS image registry.
	EKSRegistryAccount string
}

const eksMainRegistry = "602401143452" // the commercial regions that opened before 2019

var (
	commercial = func(account string) RegionInfo { return RegionInfo{"aws", "amazonaws.com", account} }
	eksRegions = map[string]RegionInfo{
		"af-south-1": commercial("877085696533"), "ap-east-1": commercial("800184023465"), "ap-east-2": commercial("533267051163"),
		"ap-northeast-1": commercial(eksMainRegistry), "ap-northeast-2": commercial(eksMainRegistry), "ap-northeast-3": commercial(eksMainRegistry),
		"ap-south-1": commercial(eksMainRegistry), "ap-south-2": commercial("900889452093"),
		"ap-southeast-1": commercial(eksMainRegistry), "ap-southeast-2": commercial(eksMainRegistry), "ap-southeast-3": commercial("296578399912"),
		"ap-southeast-4": commercial("491585149902"), "ap-southeast-5": commercial("151610086707"), "ap-southeast-6": commercial("333609536671"),
		"ap-southeast-7": commercial("121268973566"),
		"ca-central-1":   commercial(eksMainRegistry), "ca-west-1": commercial("761377655185"),
		"eu-central-1": commercial(eksMainRegistry), "eu-central-2": commercial("900612956339"),
		"eu-north-1": commercial(eksMainRegistry), "eu-south-1": commercial("590381155156"), "eu-south-2": commercial("455263428931"),
		"eu-west-1": commercial(eksMainRegistry), "eu-west-2": commercial(eksMainRegistry), "eu-west-3": commercial(eksMainRegistry),
		"il-central-1": commercial("066635153087"), "me-central-1": commercial("759879836304"), "me-south-1": commercial("558608220178"),
		"mx-central-1": commercial("730335286997"), "sa-east-1": commercial(eksMainRegistry),
		"us-east-1": commercial(eksMainRegistry), "us-east-2": commercial(eksMainRegistry),
		"us-west-1": commercial(eksMainRegistry), "us-west-2": commercial(eksMainRegistry),
		"us-gov-east-1":  {"aws-us-gov", "amazonaws.com", "151742754352"},
		"us-gov-west-1":  {"aws-us-gov", "amazonaws.com", "013241004608"},
		"cn-north-1":     {"aws-cn", "amazonaws.com.cn", "918309763551"},
		"cn-northwest-1": {"aws-cn", "amazonaws.com.cn", "961992271922"},
		"eusc-de-east-1": {"aws-eusc", "amazonaws.eu", "877088126301"},
	}
)

// unsupportedPartitions are partitions gpucluster refuses, with why.
var unsupportedPartitions = map[string]string{
	// IAM service principals differ per service in China (EC2's is ec2.amazonaws.com.cn, most
	// others keep amazonaws.com), and gpucluster's trust policies are not verified there.
	"aws-cn":   "the China partition's service principals differ per service and gpucluster's IAM trust policies are not verified there",
	"aws-eusc": "the European Sovereign Cloud partition is not verified (its services, principals and pulumi-aws support)",
}

// Region is a region's entry in the table.
func Region(name string) (RegionInfo, bool) {
	r, ok := eksRegions[name]
	return r, ok
}

// Partition is a region's ARN partition ("aws" for a region outside the table; validation
// refuses those before anything reads it).
func Partition(region string) string {
	if r, ok := eksRegions[region]; ok {
		return r.Partition
	}
	return "aws"
}

// EKSImageRegistry is the region's EKS image registry host.
func EKSImageRegistry(region string) string {
	r, _ := Region(region)
	return r.EKSRegistryAccount + ".dkr.ecr." + region + "." + r.DNSSuffix
}

// deployableRegions are the regions a stack may name: those pulumi-aws knows that regionProblem
// accepts.
func deployableRegions() []string {
	var out []string
	for _, r := range awsRegions {
		if regionProblem(r) == "" {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// regionProblem says why a region pulumi-aws knows cannot be deployed to ("" when it can).
func regionProblem(region string) string {
	info, ok := eksRegions[region]
	switch {
	case !ok:
		return fmt.Sprintf("%q has no EKS image registry in the EKS user guide's table (add-ons-images.html), so the EFA device plugin's image cannot be named", region)
	case unsupportedPartitions[info.Partition] != "":
		return fmt.Sprintf("%q is in the %s partition: %s", region, info.Partition, unsupportedPartitions[info.Partition])
	}
	return ""
}

// regionList is the deployable regions as a fix names them.
func regionList() string { return strings.Join(deployableRegions(), ", ") }

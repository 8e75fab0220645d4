package awsdouble

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/gpucluster/gpucluster/internal/fakecloud"
)

// answers are the values only AWS computes that pulumi-eks v2.8.1 reads from the resources it
// creates (node_modules/@pulumi/eks/cluster.js: the kubeconfig from the cluster's endpoint and
// certificateAuthority.data), beyond the ids and ARNs of fakecloud.
func (p *Provider) answers(typ string, state resource.PropertyMap, id string) resource.PropertyMap {
	switch typ {
	case "aws:eks/cluster:Cluster":
		answer := p.cluster
		if own, ok := p.clusters[nameOf(state)]; ok {
			answer = own
		}
		return resource.NewPropertyMapFromMap(map[string]any{
			"endpoint":             answer.endpoint,
			"certificateAuthority": map[string]any{"data": answer.ca},
			"arn":                  fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", p.currentRegion(), accountOf(), nameOf(state)),
			"status":               "ACTIVE",
		})
	}
	return nil
}

func (p *Provider) currentRegion() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.region
}

func nameOf(state resource.PropertyMap) string {
	if v, ok := state["name"]; ok && v.IsString() {
		return v.StringValue()
	}
	return ""
}

// invoke answers a data source, or fails naming it: a data source nobody taught the double
// would make the test pass on a value nobody chose.
func invoke(tok string, args resource.PropertyMap, region string) (resource.PropertyMap, error) {
	switch tok {
	case "aws:index/getPartition:getPartition": // pulumi-eks: the service principal and policy ARNs
		name, dns := partition(region)
		return resource.NewPropertyMapFromMap(map[string]any{"id": name, "partition": name, "dnsSuffix": dns, "reverseDnsPrefix": "com.amazonaws"}), nil
	case "aws:index/getRegion:getRegion":
		return resource.NewPropertyMapFromMap(map[string]any{"id": region, "name": region, "region": region}), nil
	case "aws:index/getCallerIdentity:getCallerIdentity":
		return resource.NewPropertyMapFromMap(map[string]any{"id": accountOf(), "accountId": accountOf(),
			"arn": "arn:aws:iam::" + accountOf() + ":user/gpucluster-test", "userId": "AIDAMOCKGPUCLUSTER"}), nil
	}
	return nil, fmt.Errorf("aws double: unknown invoke %s: teach test/realengine/awsdouble/answers.go the fields its caller reads", tok)
}

func accountOf() string { return fakecloud.Account }

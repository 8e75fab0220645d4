// Package fakecloud makes up the values only AWS computes (ids, ARNs, the names Pulumi gives
// resources the program leaves unnamed), for the two places gpucluster runs its program without
// AWS: the offline engine (Pulumi's mocks) and the real engine's aws provider double. One
// definition, so both answer alike; every made-up value is recognisable (account 123456789012,
// "mock" regions and hosts).
package fakecloud

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Account is the account id in made-up ARNs.
const Account = "123456789012"

// idPrefixes give made-up ids the shape of real ones, so id-shaped checks behave as in the cloud.
var idPrefixes = map[string]string{
	"aws:ec2/vpc:Vpc": "vpc-", "aws:ec2/subnet:Subnet": "subnet-", "aws:ec2/securityGroup:SecurityGroup": "sg-",
	"aws:ec2/launchTemplate:LaunchTemplate": "lt-", "aws:ec2/internetGateway:InternetGateway": "igw-",
	"aws:ec2/natGateway:NatGateway": "nat-", "aws:ec2/eip:Eip": "eipalloc-", "aws:ec2/routeTable:RouteTable": "rtb-",
	"aws:ec2/placementGroup:PlacementGroup": "pg-",
}

// ID is a resource's made-up id: stable for its URN, shaped like the real one.
func ID(typ, urn string) string {
	h := fnv.New64a()
	h.Write([]byte(urn))
	hex := fmt.Sprintf("%017x", h.Sum64())[:17]
	if p, ok := idPrefixes[typ]; ok {
		return p + hex
	}
	return "mock-" + hex
}

// Outputs are an AWS resource's inputs plus what the program reads that only the cloud
// computes. name is the logical name, which stands for an auto-name when the inputs have none.
func Outputs(typ, name string, inputs resource.PropertyMap, id string) resource.PropertyMap {
	out := inputs.Copy()
	set := func(k string, v any) { out[resource.PropertyKey(k)] = resource.NewPropertyValue(v) }
	input := func(k string) string {
		if v, ok := out[resource.PropertyKey(k)]; ok && v.IsString() {
			return v.StringValue()
		}
		return ""
	}
	if _, named := out["name"]; !named && strings.HasPrefix(typ, "aws:") {
		set("name", name)
	}
	switch typ {
	case "aws:sqs/queue:Queue":
		set("arn", "arn:aws:sqs:mock:"+Account+":"+input("name"))
		set("url", "https://sqs.mock.amazonaws.com/"+Account+"/"+input("name"))
	case "aws:iam/role:Role":
		set("arn", "arn:aws:iam::"+Account+":role/"+input("name"))
	case "aws:iam/policy:Policy":
		set("arn", "arn:aws:iam::"+Account+":policy/"+input("name"))
	case "aws:cloudwatch/logGroup:LogGroup":
		set("arn", "arn:aws:logs:mock:"+Account+":log-group:"+input("name"))
	case "aws:kms/key:Key":
		set("arn", "arn:aws:kms:mock:"+Account+":key/"+id)
		set("keyId", id)
	case "aws:ec2/launchTemplate:LaunchTemplate":
		set("latestVersion", 1.0)
	case "aws:scheduler/scheduleGroup:ScheduleGroup":
		set("arn", "arn:aws:scheduler:mock:"+Account+":schedule-group/"+input("name"))
	case "aws:ec2/vpc:Vpc":
		set("arn", "arn:aws:ec2:mock:"+Account+":vpc/"+id)
	case "aws:eks/nodeGroup:NodeGroup":
		set("arn", "arn:aws:eks:mock:"+Account+":nodegroup/"+input("clusterName")+"/"+input("nodeGroupName"))
	}
	return out
}

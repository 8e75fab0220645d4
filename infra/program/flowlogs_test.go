package program

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
)

func ofType(res []offline.Resource, typ string) []offline.Resource {
	var out []offline.Resource
	for _, r := range res {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Every stack that creates its VPC records its flow logs, delivered by a role that may write to
// the stack's own log group only.
func TestFlowLogsOfEveryCreatedVPC(t *testing.T) {
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		name := filepath.Base(file)
		if !ev.spec.VPC.Create {
			continue
		}
		logs := ev.ofType("aws:ec2/flowLog:FlowLog")
		var groups []offline.Resource // the flow logs' groups (the control plane has its own)
		for _, g := range ev.ofType("aws:cloudwatch/logGroup:LogGroup") {
			if g.Input("name") != topology.ControlPlaneLogGroup(ev.spec.Cluster.Name) {
				groups = append(groups, g)
			}
		}
		roles, policies := ev.ofType("aws:iam/role:Role"), ev.ofType("aws:iam/rolePolicy:RolePolicy")
		if len(logs) != 1 || len(groups) != 1 {
			t.Fatalf("%s: %d flow logs, %d log groups", name, len(logs), len(groups))
		}
		fl, group := logs[0], groups[0]
		// The group's name written out, as docs/architecture.md gives it to a reader of CloudWatch.
		groupName := "/gpucluster/" + ev.spec.Cluster.Name + "/vpc-flow-logs"
		groupARN := "arn:aws:logs:mock:" + offline.MockAccount + ":log-group:" + groupName
		vpc := ev.ofType("aws:ec2/vpc:Vpc")[0]
		if fl.Input("vpcId") != vpc.ID || fl.Input("trafficType") != "ALL" || fl.Input("logDestinationType") != "cloud-watch-logs" ||
			fl.Input("logDestination") != groupARN {
			t.Errorf("%s: flow log %v", name, fl.Inputs.Mappable())
		}
		if group.Input("retentionInDays") != 90.0 || group.Input("name") != groupName {
			t.Errorf("%s: log group %v", name, group.Inputs.Mappable())
		}
		var role *offline.Resource
		for i, r := range roles {
			if r.Input("name") == ev.spec.Cluster.Name+"-vpc-flow-logs" {
				role = &roles[i]
			}
		}
		if role == nil || fl.Input("iamRoleArn") != "arn:aws:iam::"+offline.MockAccount+":role/"+ev.spec.Cluster.Name+"-vpc-flow-logs" {
			t.Fatalf("%s: flow-log role %v, flow log role %v", name, role, fl.Input("iamRoleArn"))
		}
		var trust struct {
			Statement []struct {
				Principal struct{ Service string }
				Action    []string
				Condition map[string]map[string]string
			}
		}
		json.Unmarshal([]byte(role.Input("assumeRolePolicy").(string)), &trust)
		// Only for flow logs of the stack's own account (the confused-deputy conditions).
		if len(trust.Statement) != 1 || trust.Statement[0].Principal.Service != "vpc-flow-logs.amazonaws.com" ||
			trust.Statement[0].Condition["StringEquals"]["aws:SourceAccount"] != offline.MockAccount ||
			trust.Statement[0].Condition["ArnLike"]["aws:SourceArn"] != "arn:aws:ec2:mock:"+offline.MockAccount+":vpc-flow-log/*" {
			t.Errorf("%s: trust %s", name, role.Input("assumeRolePolicy"))
		}
		var granted bool
		for _, p := range policies {
			var doc struct {
				Statement []struct {
					Action   []string
					Resource []string
				}
			}
			if json.Unmarshal([]byte(p.Input("policy").(string)), &doc) != nil || p.Input("role") != role.Input("name") {
				continue
			}
			granted = true
			for _, s := range doc.Statement {
				if str(s.Resource) != str([]string{groupARN, groupARN + ":*"}) {
					t.Errorf("%s: flow-log grant reaches %v, not only its group", name, s.Resource)
				}
			}
			deps := map[string]bool{}
			for _, d := range fl.Dependencies {
				deps[d] = true
			}
			if !deps[p.URN] {
				t.Errorf("%s: the flow log does not wait for its role's grant", name)
			}
		}
		if !granted {
			t.Errorf("%s: no policy on the flow-log role", name)
		}
	}
}

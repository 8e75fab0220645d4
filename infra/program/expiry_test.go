package program

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/infra/offline"
)

const expiringStack = `config:
  aws:region: us-east-1
  gpucluster:expiresAt: "2026-12-01T18:00:00Z"
  gpucluster:owner: ml-platform
  gpucluster:pools:
    - {name: train, profile: p5-efa, nodes: 2}
    - {name: burst, profile: karpenter-p5}
`

func TestExpiryStopsEveryPool(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.exp.yaml")
	os.WriteFile(file, []byte(expiringStack), 0o644)
	ev := evaluate(t, file)

	// The managed node group: a one-time schedule at the expiry, scaling it to zero through EKS.
	schedule := one(t, ev.ofType("aws:scheduler/schedule:Schedule"), "schedules")
	target := schedule.Input("target").(map[string]any)
	var input struct {
		ClusterName, NodegroupName string
		ScalingConfig              map[string]int
	}
	json.Unmarshal([]byte(target["input"].(string)), &input)
	ng := one(t, ev.poolChildren("train", "aws:eks/nodeGroup:NodeGroup"), "node groups")
	group := one(t, ev.ofType("aws:scheduler/scheduleGroup:ScheduleGroup"), "schedule groups")
	if schedule.Input("name") != "train-expiry" || group.Input("name") != "gpucluster-exp" || schedule.Input("groupName") != "gpucluster-exp" {
		t.Errorf("schedule %v in group %v, want train-expiry in gpucluster-exp", schedule.Input("name"), schedule.Input("groupName"))
	}
	if schedule.Input("scheduleExpression") != "at(2026-12-01T18:00:00)" || schedule.Input("scheduleExpressionTimezone") != "UTC" ||
		target["arn"] != "arn:aws:scheduler:::aws-sdk:eks:updateNodegroupConfig" || input.ClusterName != "exp" || input.NodegroupName != ng.Input("nodeGroupName") ||
		input.ScalingConfig["DesiredSize"] != 0 || input.ScalingConfig["MinSize"] != 0 || input.ScalingConfig["MaxSize"] != 2 || !dependsOn(schedule, ng) {
		t.Errorf("schedule %v, input %+v", schedule.Inputs.Mappable(), input)
	}
	// Its role may update the stack's node groups and nothing else.
	var policy struct {
		Statement []struct {
			Action   []string
			Resource []string
		}
	}
	var trust string
	for _, r := range ev.ofType("aws:iam/role:Role") {
		if r.Input("name") == "exp-expiry" {
			trust = r.Input("assumeRolePolicy").(string)
		}
	}
	for _, p := range ev.ofType("aws:iam/rolePolicy:RolePolicy") {
		if p.Input("role") == "exp-expiry" {
			json.Unmarshal([]byte(p.Input("policy").(string)), &policy)
		}
	}
	if len(policy.Statement) != 1 || str(policy.Statement[0].Action) != "[eks:UpdateNodegroupConfig]" ||
		str(policy.Statement[0].Resource) != "[arn:aws:eks:us-east-1:*:nodegroup/exp/exp-train/*]" || !strings.Contains(trust, `"scheduler.amazonaws.com"`) ||
		// Assumed for the stack's schedule group only, in its account (confused-deputy guidance).
		!strings.Contains(trust, `"aws:SourceAccount":"`+offline.MockAccount+`"`) ||
		!strings.Contains(trust, `"aws:SourceArn":"arn:aws:scheduler:mock:`+offline.MockAccount+`:schedule-group/gpucluster-exp"`) {
		t.Errorf("scheduler policy %+v, trust %s", policy, trust)
	}

	// The Karpenter pool: an in-cluster job at the expiry minute, allowed to patch that NodePool.
	cron := one(t, ev.ofType("kubernetes:batch/v1:CronJob"), "CronJobs").Inputs.Mappable()
	spec := cron["spec"].(map[string]any)
	podSpec := spec["jobTemplate"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if spec["schedule"] != "0 18 1 12 *" || spec["timeZone"] != "Etc/UTC" || !strings.Contains(str(podSpec["initContainers"]), "exp-burst") ||
		!strings.Contains(str(podSpec["containers"]), "karpenter.sh/nodepool in (exp-burst)") {
		t.Errorf("cronjob %v", spec)
	}
	if sc, _ := podSpec["securityContext"].(map[string]any); str(sc["seccompProfile"]) != str(map[string]any{"type": "RuntimeDefault"}) {
		t.Errorf("the expiry job's pod has no RuntimeDefault seccomp profile: %v", podSpec["securityContext"])
	}
	var roles []offline.Resource // the expiry's (fabric manager's gate has its own)
	for _, r := range ev.ofType("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole") {
		if r.Input("metadata").(map[string]any)["name"] == "gpucluster-expiry" {
			roles = append(roles, r)
		}
	}
	role := one(t, roles, "expiry ClusterRoles").Inputs.Mappable()
	if rules := str(role["rules"]); !strings.Contains(rules, "resourceNames:[exp-burst]") || strings.Contains(rules, "*") {
		t.Errorf("cluster role rules %s", rules)
	}

	// Every AWS resource with tags carries the owner, every object the labels; the expiry is on
	// the expiry's own resources and nowhere else (setting it must not update the rest).
	for _, r := range ev.res {
		own := strings.Contains(r.URN, "gpucluster:index:Expiry$")
		if tags, ok := r.Input("tags").(map[string]any); ok && strings.HasPrefix(r.Type, "aws:") {
			if tags["gpucluster.io/owner"] != "ml-platform" || own != (tags["gpucluster.io/expires-at"] == "2026-12-01T18:00:00Z") {
				t.Errorf("%s %s tags %v", r.Type, r.Name, tags)
			}
		}
		if strings.HasPrefix(r.Type, "kubernetes:") && r.Type != "kubernetes:helm.sh/v4:Chart" && r.Type != "pulumi:providers:kubernetes" {
			md, _ := r.Input("metadata").(map[string]any)
			labels, _ := md["labels"].(map[string]any)
			if labels["gpucluster.io/owner"] != "ml-platform" || own != (labels["gpucluster.io/expires-at"] == "20261201T1800Z") {
				t.Errorf("%s %s labels %v", r.Type, r.Name, labels)
			}
		}
	}

	// The in-cluster pieces are accepted by the real API server.
	s := apiServer(t)
	for _, obj := range kubeObjects(ev) {
		if err := s.Create(obj); err != nil {
			t.Errorf("%v", err)
		}
	}
	for _, obj := range kubeObjects(ev) {
		s.Delete(obj)
	}
}

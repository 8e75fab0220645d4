package topology

import (
	"reflect"
	"strings"
	"testing"
)

// engineOf is what Pulumi passes for a plain stack file: every key, objects as JSON.
func engineOf(values map[string]string, secrets ...string) EngineConfig {
	return EngineConfig{Values: values, Secrets: secrets}
}

const engineFile = `environment:
  - team/aws-creds
config:
  gpucluster:clusterName: train
  gpucluster:pools:
    - name: gpu
      profile: p5-efa
      nodes: 2
`

func TestEngineConfigIsWhatTheProgramUses(t *testing.T) {
	ec := engineOf(map[string]string{
		"aws:region":                       "us-east-2", // from the ESC environment: not in the file
		"gpucluster:clusterName":           "train",
		"gpucluster:pools":                 `[{"name":"gpu","nodes":2,"profile":"p5-efa"}]`,
		"gpucluster:systemNodes":           `{"count":3}`, // from ESC too
		"gpucluster:benchmarks":            `{"enabled":true,"trainingCommand":["train.py","--epochs","1"]}`,
		"aws:defaultTags":                  `{"tags":{"team":"ml"}}`,
		"pulumi:disable-default-providers": `["kubernetes"]`,
	})
	st, err := ParseEngineConfig("stacks/Pulumi.x.yaml", []byte(engineFile), ec)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Benchmarks.Enabled || !reflect.DeepEqual(st.Benchmarks.TrainingCommand, []string{"train.py", "--epochs", "1"}) {
		t.Errorf("benchmarks from engine config (JSON object): %+v", st.Benchmarks)
	}
	if st.Region != "us-east-2" || st.Cluster.SystemNodes.Count != 3 || st.Cluster.Name != "train" || len(st.Pools) != 1 || st.Pools[0].Profile.MaxNodes != 2 {
		t.Errorf("stack from engine config: region %q, system %d, cluster %q, pools %+v", st.Region, st.Cluster.SystemNodes.Count, st.Cluster.Name, st.Pools)
	}
	if !reflect.DeepEqual(st.Environments, []string{"team/aws-creds"}) {
		t.Errorf("environments %v", st.Environments)
	}
	// The same values as the file, with the region the file lacks, give the same stack as the file.
	withRegion := strings.Replace(engineFile, "config:\n", "config:\n  aws:region: us-east-2\n  gpucluster:systemNodes: {count: 3}\n"+
		"  gpucluster:benchmarks: {enabled: true, trainingCommand: [train.py, --epochs, \"1\"]}\n", 1)
	fromFile, err := ParseStack("stacks/Pulumi.x.yaml", []byte(withRegion))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := DeriveStack(st, planDay)
	b, _ := DeriveStack(fromFile, planDay)
	if !reflect.DeepEqual(a.Pools, b.Pools) || !reflect.DeepEqual(a.Cluster, b.Cluster) {
		t.Error("engine config and the same file derive different stacks")
	}
}

func TestEngineConfigErrorsSayWhereTheValueCameFrom(t *testing.T) {
	ec := engineOf(map[string]string{
		"aws:region":             "us-east-2",
		"gpucluster:clusterName": "train",
		// The engine's pools differ from the file's: nodes is 0 (e.g. an ESC override).
		"gpucluster:pools":   `[{"name":"gpu","nodes":0,"profile":"p5-efa"}]`,
		"gpucluster:vpcCidr": "10.0.0.0/8", // only in ESC
	})
	_, err := ParseEngineConfig("stacks/Pulumi.x.yaml", []byte(engineFile), ec)
	ces, ok := err.(ConfigErrors)
	if !ok || len(ces) != 2 {
		t.Fatalf("%v", err)
	}
	byKey := map[string]ConfigError{}
	for _, e := range ces {
		byKey[e.Key] = e
	}
	nodes, cidr := byKey["gpucluster:pools[0].nodes"], byKey[KeyVPCCIDR]
	// The key is in the file (line 8); its value is not: the error says so.
	if nodes.Line != 8 || !strings.Contains(nodes.Message, "the value Pulumi passed for gpucluster:pools differs from stacks/Pulumi.x.yaml") ||
		!strings.Contains(nodes.Message, "team/aws-creds") {
		t.Errorf("nodes: %s", nodes.Error())
	}
	if cidr.Line != 0 || !strings.Contains(cidr.Message, "gpucluster:vpcCidr is not in stacks/Pulumi.x.yaml: its value comes from the ESC environment(s) the stack imports (team/aws-creds)") {
		t.Errorf("vpcCidr: %s", cidr.Error())
	}
	if !strings.Contains(cidr.Error(), "stacks/Pulumi.x.yaml: gpucluster:vpcCidr:") {
		t.Errorf("an error without a line still names the file and key: %s", cidr.Error())
	}
}

func TestEngineSecretsNeverReachAMessage(t *testing.T) {
	file := "config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: dev}]\n  gpucluster:adminRoleArns:\n    secure: v1:Zm9vYmFy\n  gpucluster:clusterName:\n    secure: v1:YmF6\n"
	ec := engineOf(map[string]string{
		"aws:region":               "us-east-1",
		"gpucluster:pools":         `[{"name":"gpu","profile":"dev"}]`,
		"gpucluster:adminRoleArns": `["arn:aws:iam::123456789012:rolle/hidden-admin"]`,
		"gpucluster:clusterName":   "Q",
	}, "gpucluster:adminRoleArns", "gpucluster:clusterName")
	st, err := ParseEngineConfig("stacks/Pulumi.x.yaml", []byte(file), ec)
	ces, ok := err.(ConfigErrors)
	if !ok || len(ces) != 2 {
		t.Fatalf("%v", err)
	}
	for _, e := range ces {
		text := e.Error()
		if strings.Contains(text, "hidden-admin") || strings.Contains(text, "123456789012:rolle") || strings.Contains(text, `"Q"`) {
			t.Errorf("a secret reached the message: %s", text)
		}
		if !strings.Contains(text, "is a secret: Pulumi decrypted it; its value is not shown") {
			t.Errorf("no secret note: %s", text)
		}
	}
	if ces[0].Key != KeyAdminRoleARNs+"[0]" || ces[0].Line != 5 || ces[1].Key != KeyClusterName || ces[1].Line != 6 {
		t.Errorf("secret errors not at the secrets' lines: %v", ces)
	}
	if !reflect.DeepEqual(st.Secrets, []string{KeyAdminRoleARNs, KeyClusterName}) {
		t.Errorf("secrets %v", st.Secrets)
	}
}

// Offline, a secret is ciphertext: one clear error, nothing that follows from the unknown value.
func TestOfflineRefusesSecretsAndNamesUnseenEnvironments(t *testing.T) {
	file := "environment: [team/aws]\nconfig:\n  gpucluster:pools:\n    - name: gpu\n      profile: dev\n      capacityReservationId:\n        secure: v1:abc\n"
	_, err := ParseStack("stacks/Pulumi.x.yaml", []byte(file))
	ces, ok := err.(ConfigErrors)
	if !ok || len(ces) != 2 {
		t.Fatalf("%v", err)
	}
	if ces[0].Key != KeyRegion || !strings.Contains(ces[0].Message, "imports ESC environment(s) team/aws, which may set it, but the offline commands read only the file") {
		t.Errorf("region: %s", ces[0].Error())
	}
	if ces[1].Key != KeyPools+"[0].capacityReservationId" || ces[1].Line != 7 || !strings.Contains(ces[1].Message, "Pulumi secret, and gpucluster's offline commands cannot decrypt it") {
		t.Errorf("secret: %s", ces[1].Error())
	}
}

func TestProviderSecretsAreRedactedButDoNotMakeTheStackSecret(t *testing.T) {
	ec := engineOf(map[string]string{
		"aws:region":       "us-east-1",
		"aws:secretKey":    "wJalrXUtnFEMIexampleKEY",
		"gpucluster:pools": `[{"name":"gpu","profile":"dev","labels":{"example.com/k":"wJalrXUtnFEMIexampleKEY!"}}]`,
	}, "aws:secretKey")
	st, err := ParseEngineConfig("stacks/Pulumi.x.yaml", nil, ec)
	if len(st.Secrets) != 0 {
		t.Errorf("secrets %v: only gpucluster's own keys make the outputs secret", st.Secrets)
	}
	if err == nil || strings.Contains(err.Error(), "wJalrXUtnFEMIexampleKEY") {
		t.Errorf("a provider secret reached a message: %v", err)
	}
}

// Offline, a secret gpucluster never reads (another namespace's: the AWS provider's key) does not
// stop the plan; only secrets of keys it reads are refused.
func TestOfflineIgnoresSecretsItNeverReads(t *testing.T) {
	file := "config:\n  aws:region: us-east-1\n  aws:secretKey:\n    secure: v1:abc\n  gpucluster:pools:\n    - {name: gpu, profile: dev}\n"
	if _, err := ParseStack("stacks/Pulumi.x.yaml", []byte(file)); err != nil {
		t.Errorf("a provider secret stopped the offline read: %v", err)
	}
}

// Package iampolicy writes the IAM policy documents the components attach, typed, so that a
// grant reads as Go and not as a JSON string, and holds the ARN partition of a region. It is the
// small shared piece the components need from IAM; they do not import each other for it.
package iampolicy

import (
	"encoding/json"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Document is an IAM policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a Document.
type Statement struct {
	Sid       string                    `json:"Sid,omitempty"`
	Effect    string                    `json:"Effect"`
	Principal any                       `json:"Principal,omitempty"`
	Action    []string                  `json:"Action"`
	Resource  any                       `json:"Resource,omitempty"` // absent in trust policies
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// New is a document of the current policy language version.
func New(statements ...Statement) Document {
	return Document{Version: "2012-10-17", Statement: statements}
}

func (d Document) String() string {
	b, _ := json.Marshal(d) // plain data: cannot fail
	return string(b)
}

// ServiceTrust lets an AWS service assume a role (its trust policy).
func ServiceTrust(service string) Document {
	return New(Statement{Effect: "Allow", Principal: map[string]any{"Service": service}, Action: []string{"sts:AssumeRole"}})
}

// ServiceTrustFrom lets an AWS service assume a role only on behalf of one account and source
// (AWS's cross-service confused-deputy guidance: aws:SourceAccount and aws:SourceArn). The source
// ARN may end in a wildcard, hence ArnLike.
func ServiceTrustFrom(service, account, sourceARN string) Document {
	d := ServiceTrust(service)
	d.Statement[0].Condition = map[string]map[string]any{
		"StringEquals": {"aws:SourceAccount": account},
		"ArnLike":      {"aws:SourceArn": sourceARN},
	}
	return d
}

// Partition is the ARN partition of a region (the topology core's region table).
var Partition = topology.Partition

// PodIdentityTrust lets EKS Pod Identity hand a role to the pods of an association: the service
// pods.eks.amazonaws.com, which assumes the role and tags the session with the pod's cluster,
// namespace and service account (EKS user guide, pod-id-role: sts:AssumeRole and sts:TagSession).
func PodIdentityTrust() Document {
	return New(Statement{Effect: "Allow", Principal: map[string]any{"Service": "pods.eks.amazonaws.com"},
		Action: []string{"sts:AssumeRole", "sts:TagSession"}})
}

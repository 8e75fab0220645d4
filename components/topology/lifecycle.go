package topology

import (
	"fmt"
	"regexp"
	"time"
)

// Lifecycle keys: when an ephemeral cluster's GPU pools stop, and who pays for it.
const (
	KeyExpiresAt = ConfigNamespace + ":expiresAt"
	KeyOwner     = ConfigNamespace + ":owner"
)

// Tags (and labels) that carry the lifecycle: the owner on every AWS resource and Kubernetes
// object, the expiry on the expiry's own resources only (ExpiryTags).
const (
	TagExpiresAt = labelDomain + "expires-at"
	TagOwner     = labelDomain + "owner"
)

// ownerPattern fits both an AWS tag value and a Kubernetes label value (63 characters of
// letters, digits, '-', '_', '.'), so one owner or cost centre names the stack everywhere.
var ownerPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// parseExpiry reads an RFC 3339 time, to the minute (EventBridge Scheduler's and cron's
// resolution), as UTC.
func parseExpiry(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, err
	}
	if t.Second() != 0 || t.Nanosecond() != 0 {
		return time.Time{}, fmt.Errorf("%s has seconds: expiry is to the minute", v)
	}
	return t.UTC(), nil
}

// ExpiryLabel is an expiry as a Kubernetes label value (no colons): 20261122T1400Z.
func ExpiryLabel(t time.Time) string { return t.UTC().Format("20060102T1504Z") }

// ExpiresAt is the stack's expiry, or the zero time without one.
func (s StackSpec) ExpiresAt() time.Time {
	if s.Expiry == "" {
		return time.Time{}
	}
	t, _ := parseExpiry(s.Expiry) // validated when read
	return t
}

// Pool is the stack's pool of that name.
func (s StackSpec) Pool(name string) (PoolSpec, bool) {
	for _, p := range s.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return PoolSpec{}, false
}

// Labels are the ownership labels of every Kubernetes object gpucluster creates: the same facts
// as Tags, in label-value form.
func (s StackSpec) Labels() map[string]string {
	l := map[string]string{TagCluster: s.Cluster.Name, TagStack: s.Stack}
	if s.Owner != "" {
		l[TagOwner] = s.Owner
	}
	return l
}

// ExpiryTags are the tags of the expiry's own AWS resources: Tags and the expiry. Only they carry
// it: were every resource tagged, `gpucluster expire` would update every resource of a running
// stack, and a launch template's new tags make a new version its node group rolls every GPU node
// to (found by the real-engine tests: preview after expire planned 49 updates).
func (s StackSpec) ExpiryTags() map[string]string {
	t := s.Tags()
	if s.Expiry != "" {
		t[TagExpiresAt] = s.Expiry
	}
	return t
}

// ExpiryLabels are the labels of the expiry's own Kubernetes objects: Labels and the expiry.
func (s StackSpec) ExpiryLabels() map[string]string {
	l := s.Labels()
	if e := s.ExpiresAt(); !e.IsZero() {
		l[TagExpiresAt] = ExpiryLabel(e)
	}
	return l
}

// KarpenterPoolDeleteTimeout is how long `pulumi destroy` waits for a Karpenter pool's NodePool
// and EC2NodeClass to go. Karpenter drains each node, terminates its instance and keeps the
// NodeClaim (its finalizer) until EC2 reports the instance terminated; the EC2NodeClass keeps
// its own finalizer until its last NodeClaim is gone. A GPU instance with dozens of network
// interfaces takes minutes to terminate, and a pool's nodes drain one budget at a time: the
// pulumi-kubernetes default of 10 minutes (provider/pkg/await/await.go, v4.25.0) can expire
// mid-drain and fail the destroy with instances still running.
const KarpenterPoolDeleteTimeout = "45m"

// Expired says whether the stack's expiry has passed at now.
func (s StackSpec) Expired(now time.Time) bool {
	e := s.ExpiresAt()
	return !e.IsZero() && !now.Before(e)
}

// FindingExpired is the finding on every pool of an expired stack.
const FindingExpired = "expired"

// AtTime is the spec `pulumi up` applies at now. Before the expiry it is the spec. After it,
// every GPU pool is at zero, as the expiry left it (a managed node group at minimum and desired
// 0, its maximum kept because EKS requires one; a Karpenter NodePool with a GPU limit of 0): an
// up after the expiry keeps the pools stopped instead of restoring them, and an up that extends
// the expiry (`gpucluster expire`) restores them. Both need the live sizes the expiry set, which
// `pulumi up` reads first (Pulumi.yaml: options.refresh always).
func (s StackSpec) AtTime(now time.Time) StackSpec {
	if !s.Expired(now) {
		return s
	}
	pools := make([]PoolSpec, len(s.Pools))
	for i, p := range s.Pools {
		pools[i] = p.atZero(Finding{Severity: SeverityWarning, Code: FindingExpired,
			Message: fmt.Sprintf("the stack expired at %s: the pool stays at zero nodes; to run it again, extend the expiry (gpucluster expire --in 8h) and pulumi up", s.Expiry)})
	}
	s.Pools = pools
	return s
}

// FindingStopped is the finding on every pool its stack file stops (stopped: true).
const FindingStopped = "stopped"

// atZero is the pool held at zero nodes, as an expiry or `stopped: true` leaves it: a managed
// node group at minimum and desired 0, its maximum kept because EKS requires one, and a
// Karpenter NodePool with a GPU limit of 0. Everything derived from the pool's running size (its
// ComputeDomain, its benchmark) stays as it was, so that restoring the pool changes nothing else.
func (p PoolSpec) atZero(why Finding) PoolSpec {
	p.Scaling.MinNodes, p.Scaling.DesiredNodes, p.Scaling.GPULimit = 0, 0, 0
	p.Findings = append(append([]Finding{}, p.Findings...), why)
	return p
}

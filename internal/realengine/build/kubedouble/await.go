package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// await waits, after a create or update, for what the real provider awaits (provider/pkg/await
// of v4.23.0): a CRD until it is Established, a Deployment until its pods are up. No kubelet runs
// containers here, so a Deployment's pods can never become Ready; the double waits for the part
// of readiness this machine can show, that the real scheduler placed every replica, and fails as
// the real await fails `pulumi up` when it cannot, naming the scheduler's reason.
func (c *cluster) await(ctx context.Context, obj *unstructured.Unstructured) error {
	if obj.GetAnnotations()["pulumi.com/skipAwait"] == "true" {
		return nil
	}
	switch {
	case isKind(obj, "apiextensions.k8s.io", "CustomResourceDefinition"):
		return c.poll(ctx, obj, func() (bool, string, error) {
			live, err := c.get(ctx, obj)
			if err != nil {
				return false, "", err
			}
			return condition(live, "Established") == "True", "not Established", nil
		})
	case isKind(obj, "apps", "Deployment"):
		return c.poll(ctx, obj, func() (bool, string, error) { return c.deploymentScheduled(ctx, obj) })
	}
	return nil
}

func (c *cluster) poll(ctx context.Context, obj *unstructured.Unstructured, done func() (bool, string, error)) error {
	deadline := time.Now().Add(c.timeout)
	why := ""
	for {
		ok, w, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		why = w
		if time.Now().After(deadline) {
			return fmt.Errorf("'%s' timed out waiting to be Ready: %s", obj.GetName(), why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// deploymentScheduled: every replica of the Deployment has a pod the scheduler placed.
func (c *cluster) deploymentScheduled(ctx context.Context, obj *unstructured.Unstructured) (bool, string, error) {
	// Engine values are JSON numbers (float64), which NestedInt64 would not read.
	replicas := int64(1)
	if v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); found {
		switch n := v.(type) {
		case float64:
			replicas = int64(n)
		case int64:
			replicas = n
		}
	}
	matchLabels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
	pods, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(obj.GetNamespace()).
		List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(matchLabels).String()})
	if err != nil {
		return false, "", err
	}
	scheduled := 0
	reasons := map[string]bool{}
	for _, p := range pods.Items {
		if p.GetDeletionTimestamp() != nil {
			continue
		}
		if condition(&p, "PodScheduled") == "True" {
			scheduled++
		} else if msg := conditionMessage(&p, "PodScheduled"); msg != "" {
			reasons[msg] = true
		}
	}
	if int64(scheduled) >= replicas {
		return true, "", nil
	}
	why := fmt.Sprintf("Minimum number of Pods to consider the application live was not attained: %d of %d replicas scheduled", scheduled, replicas)
	if len(pods.Items) == 0 {
		why += " (no pod yet: is the Deployment controller running?)"
	}
	var msgs []string
	for m := range reasons {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	if len(msgs) > 0 {
		why += "; the scheduler: " + strings.Join(msgs, "; ")
	}
	return false, why, nil
}

func findCondition(obj *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

func condition(obj *unstructured.Unstructured, typ string) string {
	s, _ := findCondition(obj, typ)["status"].(string)
	return s
}

func conditionMessage(obj *unstructured.Unstructured, typ string) string {
	s, _ := findCondition(obj, typ)["message"].(string)
	return s
}

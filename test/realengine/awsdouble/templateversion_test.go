package awsdouble

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// TestATemplateUpdateMakesAVersionUnlessOnlyItsTagsChange: as the provider does on AWS, a new
// reservation makes version 3 of a template at 2; new tags alone leave it at 2.
func TestATemplateUpdateMakesAVersionUnlessOnlyItsTagsChange(t *testing.T) {
	olds := resource.NewPropertyMapFromMap(map[string]any{"name": "p-gpu", "userData": "x", "tags": map[string]any{"a": "1"}, "latestVersion": 2.0, "arn": "arn:x"})
	news := func(changes map[string]any) resource.PropertyMap {
		m := map[string]any{"name": "p-gpu", "userData": "x", "tags": map[string]any{"a": "1"}}
		for k, v := range changes {
			m[k] = v
		}
		return resource.NewPropertyMapFromMap(m)
	}
	for what, c := range map[string]struct {
		changes map[string]any
		want    float64
	}{
		"a new reservation": {map[string]any{"capacityReservationSpecification": map[string]any{"capacityReservationTarget": map[string]any{"capacityReservationId": "cr-2"}}}, 3},
		"new user data":     {map[string]any{"userData": "y"}, 3},
		"new tags":          {map[string]any{"tags": map[string]any{"a": "2"}}, 2},
		"nothing":           {nil, 2},
	} {
		if got := nextTemplateVersion(olds, news(c.changes)); !got.IsNumber() || got.NumberValue() != c.want {
			t.Errorf("%s: latest version %v, want %v", what, got, c.want)
		}
	}
}
